//! The language of a chunk, and the stemmer and stop words that go with it.
//!
//! A German note is best matched by German stems (`Sicherungen` and `Sicherung` meet at
//! `sicher`), a Russian one by Russian stems; English rules leave such words as they are, or
//! worse, cut English suffixes off them. Each chunk is therefore analysed by the rules of its
//! language: the one its front matter declares (`language: de`), else the one detected in
//! its prose (code blocks and inline code are left out of the detection, since they are
//! English whatever the note is written in), else English.
//!
//! English is also the rule set of every chunk whose language has no stemmer here, or whose
//! detection is not sure: short chunks, code and tables. Such chunks are analysed exactly as
//! before languages were told apart. Languages without rules of their own (Chinese, whose
//! letters its script's own rules cut in every language, Polish, Hebrew, Hindi...) are told
//! apart and named all the same: their text keeps English's rules, and the name lets a
//! setting, the front matter and a filter say which notes are written in them, status count
//! them, and a snippet be asked for in their language.
//!
//! A chunk analysed by other rules than English carries a marker term in its text field
//! ([`Language::marker`]), so that the index can say which languages it holds without a
//! field of its own: a query is analysed by the rules of each of them (see
//! [`super::query_terms_in`]), and so meets every chunk with the terms that chunk was indexed
//! with. A chunk in a language analysed as English carries its marker among its filter
//! terms instead, where BM25 does not count it: the index knows the language, and its
//! scores are those of an English chunk.

use std::collections::HashSet;

use tantivy::tokenizer::{Language as Stemming, LowerCaser, SimpleTokenizer, TextAnalyzer};

use super::letters;

/// A language with rules of its own: a stemmer (Snowball's, or for Czech and Ukrainian one of
/// [`super::light`]), and a stop word list for most; or a language named without rules of
/// its own (Chinese, Polish, Hebrew...), whose text keeps English's, or Arabic's for Persian
/// and Urdu.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Language(u8);

/// How a language's words are cut to their stems.
#[derive(Clone, Copy, Debug)]
pub(super) enum Stems {
    /// By tantivy's Snowball stemmer.
    Snowball(Stemming),
    /// By a light stemmer of the project's own ([`super::light`]), for a language Snowball
    /// has none for.
    Light(fn(&str) -> &str),
}

/// What is known of one language: its two-letter (ISO 639-1) code, its English name, its
/// stemmer, and the detector's name for it (none for Lao, which the detector does not know:
/// its letters tell it).
struct Spec {
    code: &'static str,
    name: &'static str,
    stems: Stems,
    detected: Option<whatlang::Lang>,
}

const fn spec(
    code: &'static str,
    name: &'static str,
    stems: Stems,
    detected: Option<whatlang::Lang>,
) -> Spec {
    Spec { code, name, stems, detected }
}

/// English first: [`Language::ENGLISH`] is index 0.
const LANGUAGES: [Spec; 48] = [
    spec("en", "english", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Eng)),
    spec("ar", "arabic", Stems::Snowball(Stemming::Arabic), Some(whatlang::Lang::Ara)),
    spec("da", "danish", Stems::Snowball(Stemming::Danish), Some(whatlang::Lang::Dan)),
    spec("de", "german", Stems::Snowball(Stemming::German), Some(whatlang::Lang::Deu)),
    spec("el", "greek", Stems::Snowball(Stemming::Greek), Some(whatlang::Lang::Ell)),
    spec("es", "spanish", Stems::Snowball(Stemming::Spanish), Some(whatlang::Lang::Spa)),
    spec("fi", "finnish", Stems::Snowball(Stemming::Finnish), Some(whatlang::Lang::Fin)),
    spec("fr", "french", Stems::Snowball(Stemming::French), Some(whatlang::Lang::Fra)),
    spec("hu", "hungarian", Stems::Snowball(Stemming::Hungarian), Some(whatlang::Lang::Hun)),
    spec("it", "italian", Stems::Snowball(Stemming::Italian), Some(whatlang::Lang::Ita)),
    spec("nl", "dutch", Stems::Snowball(Stemming::Dutch), Some(whatlang::Lang::Nld)),
    spec("no", "norwegian", Stems::Snowball(Stemming::Norwegian), Some(whatlang::Lang::Nob)),
    spec("pt", "portuguese", Stems::Snowball(Stemming::Portuguese), Some(whatlang::Lang::Por)),
    spec("ro", "romanian", Stems::Snowball(Stemming::Romanian), Some(whatlang::Lang::Ron)),
    spec("ru", "russian", Stems::Snowball(Stemming::Russian), Some(whatlang::Lang::Rus)),
    spec("sv", "swedish", Stems::Snowball(Stemming::Swedish), Some(whatlang::Lang::Swe)),
    spec("ta", "tamil", Stems::Snowball(Stemming::Tamil), Some(whatlang::Lang::Tam)),
    spec("tr", "turkish", Stems::Snowball(Stemming::Turkish), Some(whatlang::Lang::Tur)),
    spec("cs", "czech", Stems::Light(super::light::czech), Some(whatlang::Lang::Ces)),
    spec("uk", "ukrainian", Stems::Light(super::light::ukrainian), Some(whatlang::Lang::Ukr)),
    // Persian and Urdu, told from Arabic by the letters they write and it does not, are
    // read by Arabic's rules: its stemmer and the Arabic script's normalisation read them
    // better than English rules do (docs/languages.md), and they were analysed so before
    // they were named.
    spec("fa", "persian", Stems::Snowball(Stemming::Arabic), Some(whatlang::Lang::Pes)),
    spec("ur", "urdu", Stems::Snowball(Stemming::Arabic), Some(whatlang::Lang::Urd)),
    // Languages without rules of their own here, whose text is analysed by English's, as it
    // was before they were named: those whose own letters are cut by their script's rules
    // whatever the chunk's language (pairs of Han, kana and Hangul letters; ICU's words for
    // Thai, Lao, Khmer and Myanmar), and those that Snowball has no stemmer for. Their words
    // in Latin letters (names, commands, English quotes) keep English's rules. They are
    // named so that a setting, the front matter and a filter can name them, status can count
    // them, and a snippet is asked for in their language.
    spec("zh", "chinese", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Cmn)),
    spec("ja", "japanese", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Jpn)),
    spec("ko", "korean", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Kor)),
    spec("th", "thai", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Tha)),
    spec("lo", "lao", Stems::Snowball(Stemming::English), None),
    spec("km", "khmer", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Khm)),
    spec("my", "burmese", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Mya)),
    spec("pl", "polish", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Pol)),
    spec("vi", "vietnamese", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Vie)),
    spec("id", "indonesian", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Ind)),
    spec("he", "hebrew", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Heb)),
    spec("yi", "yiddish", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Yid)),
    spec("hi", "hindi", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Hin)),
    spec("mr", "marathi", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Mar)),
    spec("ne", "nepali", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Nep)),
    spec("bn", "bengali", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Ben)),
    spec("gu", "gujarati", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Guj)),
    spec("pa", "punjabi", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Pan)),
    spec("or", "odia", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Ori)),
    spec("te", "telugu", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Tel)),
    spec("kn", "kannada", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Kan)),
    spec("ml", "malayalam", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Mal)),
    spec("si", "sinhala", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Sin)),
    spec("ka", "georgian", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Kat)),
    spec("hy", "armenian", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Hye)),
    spec("am", "amharic", Stems::Snowball(Stemming::English), Some(whatlang::Lang::Amh)),
];

/// Letters of prose a chunk needs before its detected language is trusted (unless its
/// letters are those of Chinese, Japanese, Korean or Lao): below that (a heading, a short
/// list, a line of code) the detector guesses, and English rules are the
/// safe choice, as they were for every chunk before.
const MIN_LETTERS: usize = 40;

/// The most bytes of prose the detector reads: a chunk's first paragraphs say its language
/// as well as all of it.
const MAX_DETECTED_BYTES: usize = 4096;

impl Language {
    /// The rules of every chunk whose language is not known to be another.
    pub const ENGLISH: Language = Language(0);

    fn spec(self) -> &'static Spec {
        &LANGUAGES[self.0 as usize]
    }

    /// Every language named here, English first.
    pub fn all() -> impl Iterator<Item = Language> {
        (0..LANGUAGES.len() as u8).map(Language)
    }

    /// The two-letter code: `de`.
    pub fn code(self) -> &'static str {
        self.spec().code
    }

    /// The English name, in lower case: `german`.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The language a front matter value or a setting names: a two-letter code (`de`), the
    /// detector's three-letter one (`deu`), or the English name (`German`), in any case, with
    /// a region ignored (`de-AT`, `pt_BR`). `None` for a language not named here.
    pub fn named(name: &str) -> Option<Language> {
        let name = name.trim().to_lowercase();
        let base = name.split(['-', '_']).next().unwrap_or_default();
        Language::all().find(|language| {
            let spec = language.spec();
            base == spec.code || base == spec.name || spec.detected.is_some_and(|d| base == d.code())
        })
    }

    /// The language of a chunk: `declared` (its front matter's `language`) when it names a
    /// language known here, else the one detected in its prose, else English. A chunk of a
    /// note declared (or detected) in a language analysed as English whose own prose is in a
    /// language with a stemmer, a German paragraph in a Chinese note, is analysed by that
    /// language's rules: the declared language's rules are English's, and would leave it as
    /// it stands.
    pub fn of_chunk(declared: Option<&str>, text: &str) -> Language {
        match declared.and_then(Language::named) {
            Some(language) if !language.has_own_rules() => {
                Some(Language::detect(text)).filter(|own| !own.analysed_as_english()).unwrap_or(language)
            }
            Some(language) => language,
            None => Language::detect(text),
        }
    }

    /// The language a whole document's prose is written in, when it is detected and is not
    /// English. It stands for the `language` field that the document's front matter does not
    /// give: a chunk too short to tell its language by itself (a page's one-line name, a
    /// synopsis, a list of options) is then analysed by its document's rules, not by English
    /// ones. An English document's chunks are each detected on their own, as before.
    pub fn of_document(text: &str) -> Option<Language> {
        Some(Language::detect(text)).filter(|language| *language != Language::ENGLISH)
    }

    /// The language of `text`'s prose when the detector is sure of it and has rules here,
    /// else English.
    pub fn detect(text: &str) -> Language {
        Language::detect_in_prose(&prose_of(text))
    }

    /// [`Language::detect`] of a text's prose, taken out already ([`prose_of`]).
    fn detect_in_prose(prose: &str) -> Language {
        // Letters that only Chinese, Japanese, Korean or Lao are written in say so in a line:
        // a short note in them is not English, as its snippet and a filter need to know.
        if let Some(language) = letters::written_in_cjk(prose).or_else(|| letters::written_in_lao(prose)) {
            return language;
        }
        if prose.chars().filter(|c| c.is_alphabetic()).count() < MIN_LETTERS {
            return Language::ENGLISH;
        }
        // Most notes are English, and the detector's reading of trigrams costs more than the
        // rest of a chunk's analysis: prose that uses English's function words as English
        // does is English without it.
        if plainly_english(prose) {
            return Language::ENGLISH;
        }
        let Some(info) = detector().detect(prose) else { return Language::ENGLISH };
        if info.script() == whatlang::Script::Devanagari {
            return letters::hindi_marathi_or_nepali(prose)
                .and_then(Language::named)
                .unwrap_or(Language::ENGLISH);
        }
        if !info.is_reliable() {
            return Language::ENGLISH;
        }
        let detected = match info.lang() {
            whatlang::Lang::Rus | whatlang::Lang::Ukr => letters::russian_or_ukrainian(prose),
            whatlang::Lang::Ara => letters::arabic_persian_or_urdu(prose),
            other => other,
        };
        let Some(language) = Language::all().find(|language| language.spec().detected == Some(detected))
        else {
            return Language::ENGLISH;
        };
        // Code, configuration and shell sessions are written in Latin letters, and the
        // detector readily takes them for French or Italian: text in Latin letters must also
        // read as prose in the language found.
        if language != Language::ENGLISH
            && info.script() == whatlang::Script::Latin
            && !speaks(prose, language)
        {
            return Language::ENGLISH;
        }
        language
    }

    /// The English name of the language `text`'s prose is written in, capitalised, when it
    /// is not English: Chinese, Japanese or Korean when at least a quarter of the prose's
    /// letters are of their scripts (Japanese when it holds kana, Korean when most of them
    /// are Hangul), else a language with rules here that the detector is sure of. For what
    /// is asked of a model writing about the text, in the text's language.
    pub fn name_of_prose(text: &str) -> Option<String> {
        let prose = prose_of(text);
        let language = letters::written_in_cjk(&prose).unwrap_or_else(|| Language::detect_in_prose(&prose));
        (language != Language::ENGLISH).then(|| {
            let name = language.name();
            name[..1].to_uppercase() + &name[1..]
        })
    }

    /// Where the language stands in [`Language::all`].
    pub(super) fn index(self) -> usize {
        self.0 as usize
    }

    /// How the language's words are cut to their stems.
    pub(super) fn stems(self) -> Stems {
        self.spec().stems
    }

    /// The Snowball stemmer of the language; `None` for those with a light stemmer.
    pub(super) fn stemming(self) -> Option<Stemming> {
        match self.spec().stems {
            Stems::Snowball(stemming) => Some(stemming),
            Stems::Light(_) => None,
        }
    }

    /// Whether the stemmer must see the letters with their accents: Hungarian, Romanian and
    /// Turkish spell their endings with them (`ablakból` is `ablak` by `-ból`; as `ablakbol`
    /// the stemmer keeps it whole), so their words are folded after stemming, not before.
    pub(super) fn stems_accented_letters(self) -> bool {
        matches!(self.stemming(), Some(Stemming::Hungarian | Stemming::Romanian | Stemming::Turkish))
    }

    /// Whether the language's rules are English's (the languages named without rules of their
    /// own: Chinese, whose letters are cut by their script's rules in every language, Polish,
    /// Hebrew...), so that its text gives the terms English's analyzer gives.
    pub fn analysed_as_english(self) -> bool {
        self.stemming() == Some(Stemming::English)
    }

    /// Whether the language's rules are a set of their own: English's, or any that is not
    /// English's ([`Language::analysed_as_english`]). A query analysed by each such language
    /// meets every chunk.
    pub fn has_own_rules(self) -> bool {
        self == Language::ENGLISH || !self.analysed_as_english()
    }

    /// The term a chunk analysed by this language's rules carries in its text field, so that
    /// the index can tell which languages it holds. The tokenizer never emits a control
    /// character, so no word can be mistaken for it.
    pub fn marker(self) -> String {
        format!("\u{1}language={}", self.code())
    }
}

/// Share of a text's words that must be stop words of a language (its articles,
/// prepositions, pronouns) before the detector's guess is believed. Prose has plenty (a
/// quarter to a half of its words, in every language with a list); configuration files,
/// shell sessions and source code, which the detector readily takes for French or Italian,
/// have almost none.
const MIN_STOP_WORD_SHARE: f32 = 0.12;

/// Different stop words of two letters or more a text must hold besides: code repeats a few
/// short words that some language happens to list (`on`, `c`, `s` and `t` are French ones),
/// prose uses many. Three, not four: a short note in a language with few function words
/// (Turkish, whose cases are endings) uses three in two sentences; four left it to English
/// rules, and no chunk of the English sets' code and prose passes with three.
const MIN_DISTINCT_STOP_WORDS: usize = 3;

/// Different English stop words that prose must hold to be taken as English without the
/// detector: a wrong guess here is not checked by the detector, so it asks for more.
const PLAINLY_ENGLISH_DISTINCT: usize = 4;

/// Share of an English text's words that are English stop words, at the least, for the text to
/// be taken as English without the detector. English prose has a quarter to a half (`the`,
/// `of`, `to`, `is`...); prose in the other languages with rules has a few (`in`, `was` and
/// `will` are German too, `no` and `do` Spanish and Portuguese, `is` and `of` Dutch).
const PLAINLY_ENGLISH_SHARE: f32 = 0.2;

/// Whether at least [`PLAINLY_ENGLISH_SHARE`] of `prose`'s words of two letters or more, and
/// [`PLAINLY_ENGLISH_DISTINCT`] different ones, are English stop words: [`stop_word_use`]
/// for English, in one pass over the text and without a copy of its words, since it runs on
/// every chunk.
fn plainly_english(prose: &str) -> bool {
    let (mut words, mut stop_words, mut seen) = (0usize, 0usize, 0u64);
    for word in prose.split(|c: char| !c.is_alphanumeric()) {
        // One-letter words, as `speaks` skips them.
        if word.chars().nth(1).is_none() {
            continue;
        }
        words += 1;
        if let Some(n) = super::stop_words::ENGLISH.iter().position(|w| w.eq_ignore_ascii_case(word)) {
            stop_words += 1;
            seen |= 1 << n;
        }
    }
    seen.count_ones() as usize >= PLAINLY_ENGLISH_DISTINCT
        && stop_words as f32 >= PLAINLY_ENGLISH_SHARE * words as f32
}

/// Whether `prose` reads as `language`: enough of its words are the language's stop words.
fn speaks(prose: &str, language: Language) -> bool {
    stop_word_use(prose, language)
        .is_some_and(|(share, distinct)| distinct >= MIN_DISTINCT_STOP_WORDS && share >= MIN_STOP_WORD_SHARE)
}

/// The share of `prose`'s words of two letters or more that are stop words of `language`,
/// and how many different ones it uses; `None` for a language without a list.
fn stop_word_use(prose: &str, language: Language) -> Option<(f32, usize)> {
    // Each language's list is built once: a lowercasing analyzer that drops its stop words.
    static LISTS: std::sync::OnceLock<Vec<Option<TextAnalyzer>>> = std::sync::OnceLock::new();
    let lists = LISTS.get_or_init(|| {
        Language::all()
            .map(|l| {
                super::stop_words::of(l.code(), l.stemming()).map(|list| {
                    TextAnalyzer::builder(SimpleTokenizer::default()).filter(LowerCaser).filter(list).build()
                })
            })
            .collect()
    });
    let without_stop_words = lists[language.index()].clone()?;
    let words = |analyzer: TextAnalyzer| {
        let mut analyzer = analyzer;
        let mut stream = analyzer.token_stream(prose);
        let mut words = Vec::new();
        while let Some(token) = stream.next() {
            // One-letter words are as often variables and escapes (`c`, `n`) as words.
            if token.text.chars().nth(1).is_some() {
                words.push(token.text.clone());
            }
        }
        words
    };
    let all = words(TextAnalyzer::builder(SimpleTokenizer::default()).filter(LowerCaser).build());
    let kept = words(without_stop_words);
    let kept_set: HashSet<&String> = kept.iter().collect();
    let distinct_stop_words = all.iter().filter(|w| !kept_set.contains(w)).collect::<HashSet<_>>().len();
    let share = if all.is_empty() { 0.0 } else { (all.len() - kept.len()) as f32 / all.len() as f32 };
    Some((share, distinct_stop_words))
}

/// The detector, choosing among the languages named here.
///
/// Left to choose among all it knows, it takes short Russian notes for Bulgarian, and it
/// would take, say, Portuguese text for Galician. Among these languages only, Cyrillic text
/// is Russian or Ukrainian, and a note in a language not named here gets the closest
/// language's rules when it passes [`speaks`]; either way, queries are analysed by the same
/// rules as the chunk (see [`super::query_terms_in`]), so its words are met all the same.
/// Polish is named, among other reasons, so that its text is not taken for Czech, whose
/// stemmer would cut Polish words by Czech endings. Persian and Urdu are left to their
/// letters ([`letters::arabic_persian_or_urdu`]): asked to tell them from Arabic by trigrams, the
/// detector was less often sure of any, and 6 chunks of the Arabic Handbook and 9 of the
/// Persian one lost their Arabic rules.
fn detector() -> &'static whatlang::Detector {
    static DETECTOR: std::sync::OnceLock<whatlang::Detector> = std::sync::OnceLock::new();
    DETECTOR.get_or_init(|| {
        whatlang::Detector::with_allowlist(
            LANGUAGES
                .iter()
                .filter_map(|spec| spec.detected)
                .filter(|lang| !matches!(lang, whatlang::Lang::Pes | whatlang::Lang::Urd))
                .collect(),
        )
    })
}

/// The prose of `text`, up to [`MAX_DETECTED_BYTES`]: fenced code blocks and inline code
/// left out, since their words are the programming language's, not the note's. A block's
/// fences are read as the chunker reads them (CommonMark's rule): a run of three or more
/// backticks or tildes opens it, and only a bare run of as many or more of the same closes it.
fn prose_of(text: &str) -> String {
    let mut prose = String::new();
    // The open block's fence: its mark and length.
    let mut fence: Option<(char, usize)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let mark = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'));
        let run = mark.map_or(0, |m| trimmed.len() - trimmed.trim_start_matches(m).len());
        if let Some((open, len)) = fence {
            if mark == Some(open) && run >= len && trimmed[run..].trim().is_empty() {
                fence = None;
            }
            continue;
        }
        if let Some(m) = mark.filter(|&m| run >= 3 && (m == '~' || !trimmed[run..].contains('`'))) {
            fence = Some((m, run));
            continue;
        }
        // A link's address is no prose, nor is a link definition's.
        if trimmed.starts_with('[') && trimmed.contains("]: ") {
            continue;
        }
        // Text between backticks is code; what lies outside them alternates with it.
        for (n, piece) in line.split('`').enumerate() {
            if n % 2 == 0 {
                push_without_addresses(&mut prose, piece);
                prose.push(' ');
            }
        }
        prose.push('\n');
        if prose.len() >= MAX_DETECTED_BYTES {
            break;
        }
    }
    prose
}

/// Pushes `text` to `prose` without the addresses it holds: a link's (`](…)`, up to its
/// closing parenthesis) and bare web addresses. A table of contents in Chinese is a list of
/// Chinese titles and English file names, and its letters are the titles'.
fn push_without_addresses(prose: &mut String, text: &str) {
    let mut rest = text;
    while !rest.is_empty() {
        let link = rest.find("](");
        let web = rest.find("http://").into_iter().chain(rest.find("https://")).min();
        let (at, skip_to) = match (link, web) {
            (Some(l), w) if w.is_none_or(|w| l < w) => {
                // `](` opens the address: it ends at the first `)` or space after it.
                let address = &rest[l + 2..];
                let end = address.find([')', ' ']).map_or(rest.len(), |e| l + 2 + e + 1);
                (l + 1, end)
            }
            (_, Some(w)) => (w, rest[w..].find(char::is_whitespace).map_or(rest.len(), |e| w + e)),
            _ => {
                prose.push_str(rest);
                return;
            }
        };
        prose.push_str(&rest[..at]);
        prose.push(' ');
        rest = &rest[skip_to.min(rest.len())..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prose_of_a_text_is_named_when_it_is_not_english() {
        let named = |text: &str| Language::name_of_prose(text);
        assert_eq!(named("Backups are kept for thirty days in the secondary region."), None);
        assert_eq!(named("首先，让我们看一下所有权的规则。请记住这些规则。"), Some("Chinese".into()));
        assert_eq!(named("所有権のルールを見てみましょう。"), Some("Japanese".into()));
        assert_eq!(named("소유권 규칙을 먼저 살펴보겠습니다. 規則"), Some("Korean".into()));
        // A language read by English rules is named all the same, so that a snippet is asked
        // for in it.
        assert_eq!(
            named("הגיבויים מועתקים בכל לילה לשרת השני ונשמרים שם שלושים יום לפני שהם נמחקים."),
            Some("Hebrew".into())
        );
        // Persian, once asked for in Arabic.
        assert_eq!(
            named("پشتیبان‌ها هر شب روی سرور دوم کپی می‌شوند و پیش از پاک شدن سی روز آنجا نگه داشته می‌شوند."),
            Some("Persian".into())
        );
        assert_eq!(
            named(
                "Die Sicherungen werden dreißig Tage lang in der zweiten Region aufbewahrt, danach gelöscht."
            ),
            Some("German".into())
        );
        // Chinese prose around much code is still Chinese; code around a Chinese comment is not.
        let code =
            "```rust\nfn main() { let mut value = compute_the_value(); println!(\"{value}\"); }\n```\n";
        assert_eq!(named(&format!("使用 `mut` 让变量可变：\n{code}")), Some("Chinese".into()));
        assert_eq!(named("fn main() { let value = compute(); } // 值"), None);
    }

    const GERMAN: &str = "Die Sicherungen werden jede Nacht auf den zweiten Server kopiert und \
        dort dreißig Tage lang aufbewahrt, bevor sie gelöscht werden.";
    const FRENCH: &str = "Les sauvegardes sont copiées chaque nuit sur le second serveur et \
        conservées pendant trente jours avant d'être supprimées.";
    const RUSSIAN: &str = "Резервные копии каждую ночь копируются на второй сервер и хранятся \
        там тридцать дней, после чего удаляются.";
    const ROMANIAN: &str = "Copiile de rezervă sunt copiate în fiecare noapte pe al doilea server și \
        sunt păstrate acolo treizeci de zile, după care sunt șterse.";
    const TURKISH: &str = "Yedekler her gece ikinci sunucuya kopyalanır ve silinmeden önce orada \
        otuz gün boyunca saklanır; bu süre bir ayar ile değiştirilebilir.";
    const CZECH: &str = "Zálohy serveru se dělají každou noc ve dvě hodiny a soubory starší než \
        třicet dní se pak mažou, protože na disku není dost místa.";
    const UKRAINIAN: &str = "Резервні копії сервера створюються щоночі о другій годині й \
        зберігаються там тридцять днів, після чого видаляються.";
    const ENGLISH: &str = "The backups are copied to the second server every night and kept \
        there for thirty days before they are deleted.";

    #[test]
    fn english_prose_is_told_by_its_function_words_and_other_prose_is_not() {
        assert!(plainly_english(ENGLISH));
        for text in [GERMAN, FRENCH, RUSSIAN, ROMANIAN, TURKISH, CZECH, UKRAINIAN] {
            assert!(!plainly_english(text), "{text}");
        }
        // The one pass agrees with the analyzers that `speaks` reads a text with.
        for text in [ENGLISH, GERMAN, FRENCH, CZECH, "The THE the, of: it's a test; for (and) to"] {
            let (share, distinct) = stop_word_use(text, Language::ENGLISH).unwrap();
            assert_eq!(
                plainly_english(text),
                share >= PLAINLY_ENGLISH_SHARE && distinct >= PLAINLY_ENGLISH_DISTINCT,
                "{text}"
            );
        }
    }

    #[test]
    fn a_short_note_with_three_function_words_is_detected() {
        // Two sentences of Turkish, whose cases are endings: `en`, `az` and `bir` are all
        // the function words it has.
        const NOTE: &str = "Yıllık izin günleri en az iki hafta önceden, ekip liderine gönderilen \
            bir formla istenir. Talep onaylandıktan sonra günler ekibin ortak takviminde görünür.";
        let (_, distinct) = stop_word_use(NOTE, Language::named("tr").unwrap()).unwrap();
        assert_eq!(distinct, 3);
        assert_eq!(Language::detect(NOTE).code(), "tr");
    }

    #[test]
    fn polish_prose_is_not_taken_for_czech() {
        // From Debian's Polish manual pages. Among the languages with rules alone, the
        // detector is sure that it is Czech.
        const POLISH: &str = "Plik jest sekwencją wpisów, z których każdy ma postać następującej \
            struktury zadeklarowanej w pliku nagłówkowym (należy zwrócić uwagę, że jest to jedna z \
            wielu definicji; szczegóły zależą od wersji biblioteki).";
        let with_rules = whatlang::Detector::with_allowlist(
            Language::all().filter(|l| !l.analysed_as_english()).filter_map(|l| l.spec().detected).collect(),
        );
        let guess = with_rules.detect(POLISH).unwrap();
        assert_eq!((guess.lang(), guess.is_reliable()), (whatlang::Lang::Ces, true));
        // Polish is named, and read by English rules, not Czech ones.
        let polish = Language::detect(POLISH);
        assert_eq!(polish.code(), "pl");
        assert!(polish.analysed_as_english());
    }

    #[test]
    fn languages_without_rules_are_named_by_their_letters_and_words() {
        let detect = |text: &str| Language::detect(text).code();
        // Scripts of one language, or of a few that the detector tells apart.
        assert_eq!(
            detect("הגיבויים מועתקים בכל לילה לשרת השני ונשמרים שם שלושים יום לפני שהם נמחקים."),
            "he"
        );
        assert_eq!(
            detect("बैकअप हर रात दूसरे सर्वर पर कॉपी किए जाते हैं और मिटाए जाने से पहले तीस दिन तक वहाँ रखे जाते हैं।"),
            "hi"
        );
        assert_eq!(
            detect(
                "बॅकअप दररोज रात्री दुसऱ्या सर्व्हरवर कॉपी केले जातात आणि ते तीस दिवस तिथे ठेवले जातात. त्यानंतर ते \
                 आपोआप हटवले जातात आणि जागा मोकळी होते."
            ),
            "mr"
        );
        assert_eq!(
            detect(
                "ब्याकअप हरेक रात दोस्रो सर्भरमा प्रतिलिपि गरिन्छ र त्यहाँ तीस दिनसम्म राखिन्छ। त्यसपछि यो आफैं मेटिन्छ।"
            ),
            "ne"
        );
        assert_eq!(
            detect("სარეზერვო ასლები ყოველ ღამე მეორე სერვერზე კოპირდება და იქ ოცდაათი დღე ინახება."),
            "ka"
        );
        assert_eq!(detect("ການສຳຮອງຂໍ້ມູນຈະຖືກສຳເນົາໄປໃສ່ເຊີບເວີທີສອງທຸກໆຄືນ ແລະ ເກັບໄວ້ສາມສິບມື້."), "lo");
        // Latin letters: the detector, and the language's function words.
        assert_eq!(
            detect(
                "Các bản sao lưu được chép sang máy chủ thứ hai mỗi đêm và được giữ ở đó trong ba mươi ngày \
                 trước khi bị xóa."
            ),
            "vi"
        );
        assert_eq!(
            detect(
                "Cadangan disalin ke server kedua setiap malam dan disimpan di sana selama tiga puluh hari \
                 sebelum dihapus oleh sistem yang berjalan."
            ),
            "id"
        );
        // The Arabic script: Arabic, Persian and Urdu by the letters each writes.
        assert_eq!(
            detect("يتم نسخ النسخ الاحتياطية إلى الخادم الثاني كل ليلة وتحفظ هناك لمدة ثلاثين يوما قبل حذفها."),
            "ar"
        );
        assert_eq!(
            detect("پشتیبان‌ها هر شب روی سرور دوم کپی می‌شوند و پیش از پاک شدن سی روز آنجا نگه داشته می‌شوند."),
            "fa"
        );
        assert_eq!(
            detect(
                "بیک اپ ہر رات دوسرے سرور پر کاپی کیے جاتے ہیں اور مٹائے جانے سے پہلے تیس دن وہاں رکھے جاتے ہیں۔"
            ),
            "ur"
        );
        // Persian and Urdu keep Arabic's rules, which read them better than English's; the
        // others keep English's.
        for code in ["fa", "ur"] {
            assert_eq!(language(code).stemming(), Some(Stemming::Arabic), "{code}");
        }
        for code in ["he", "hi", "ka", "lo", "vi", "id", "pl", "km", "my"] {
            assert!(language(code).analysed_as_english(), "{code}");
        }
        // Every language is found by its code, its name and the detector's code.
        assert_eq!(Language::named("Hebrew"), Language::named("heb"));
        assert_eq!(Language::named("fa-IR"), Language::named("pes"));
        assert_eq!(Language::named("lao").map(Language::code), Some("lo"));
    }

    #[test]
    fn prose_languages_are_detected() {
        assert_eq!(Language::detect(GERMAN).code(), "de");
        assert_eq!(Language::detect(FRENCH).code(), "fr");
        assert_eq!(Language::detect(RUSSIAN).code(), "ru");
        assert_eq!(Language::detect(ROMANIAN).code(), "ro");
        assert_eq!(Language::detect(TURKISH).code(), "tr");
        assert_eq!(Language::detect(CZECH).code(), "cs");
        assert_eq!(Language::detect(UKRAINIAN).code(), "uk");
        // A Russian manual page's name line, without the letters that tell Russian from
        // Ukrainian: the detector alone takes it for Ukrainian.
        let line = "# ld-linux(8): ld.so, ld-linux.so - динамический компоновщик/загрузчик";
        assert_eq!(Language::detect(line).code(), "ru");
        assert_eq!(Language::detect(ENGLISH), Language::ENGLISH);
    }

    #[test]
    fn short_text_code_and_cjk_keep_english_rules() {
        assert_eq!(Language::detect("Sicherungen"), Language::ENGLISH);
        assert_eq!(Language::of_document(GERMAN).map(Language::code), Some("de"));
        assert_eq!(Language::of_document(ENGLISH), None);
        assert_eq!(Language::of_document("Sicherungen"), None);
        // Chinese is told by its letters however short, and its words are analysed by
        // English rules.
        let chinese =
            Language::detect("所有权是 Rust 最为与众不同的特性，它让 Rust 无需垃圾回收即可保障内存安全。");
        assert_eq!(chinese.code(), "zh");
        assert!(chinese.analysed_as_english());
        let code =
            "```rust\nfn main() { let sicherungen = vec![1, 2, 3]; println!(\"{sicherungen:?}\"); }\n```";
        assert_eq!(Language::detect(code), Language::ENGLISH);
    }

    #[test]
    fn configuration_and_code_are_not_taken_for_a_language() {
        // The detector alone calls these French.
        let yaml = "Dynamic Configuration\nhttp:\n  routers:\n    dashboard:\n      rule: Host(traefik.example.com) \
            && (PathPrefix(/api) || PathPrefix(/dashboard))\n      service: api@internal\n      middlewares:\n        - auth\n";
        let shell = "Request goes through parent router → auth middleware → admin child router\ncurl -H Host: \
            admin.example.com http://localhost/admin/users\ncurl -u admin:password -H Host: admin.example.com http://localhost/";
        let javascript = "c.pipe(c);\n});\nserver.on('error', (err) => {\n  throw err;\n});\nserver.listen(8124, () => {\n  \
            console.log('server bound');\n});\n```\n\n```cjs\nconst net = require('node:net');\nconst server = \
            net.createServer((c) => {\n  // 'connection' listener.\n  console.log('client connected');\n  c.on('end', () => {\n    \
            console.log('client disconnected');\n  });\n  c.write('hello\\r\\n');\n  c.pipe(c);\n});\n";
        for text in [yaml, shell, javascript] {
            assert_eq!(Language::detect(text), Language::ENGLISH, "{text}");
        }
    }

    #[test]
    fn code_does_not_outvote_the_prose_around_it() {
        let note = format!(
            "{GERMAN}\n\n```yaml\nbackup:\n  schedule: every night at two\n  retention_days: 30\n  \
             target: the second server of the cluster\n```\n\nSetze `retentionDays` auf den Wert, den du brauchst."
        );
        assert_eq!(Language::detect(&note).code(), "de");
    }

    #[test]
    fn a_declared_language_wins() {
        assert_eq!(Language::of_chunk(Some("fr"), GERMAN).code(), "fr");
        assert_eq!(Language::of_chunk(Some("German"), ENGLISH).code(), "de");
        assert_eq!(Language::of_chunk(Some("pt-BR"), ENGLISH).code(), "pt");
        assert_eq!(Language::of_chunk(Some("rus"), ENGLISH).code(), "ru");
        // A language without rules here leaves the choice to detection.
        assert_eq!(Language::of_chunk(Some("klingon"), GERMAN).code(), "de");
        assert_eq!(Language::of_chunk(None, GERMAN).code(), "de");
        // Languages without rules are named by their codes, names and regions.
        for (name, code) in [("zh-TW", "zh"), ("Chinese", "zh"), ("ja_JP", "ja"), ("kor", "ko"), ("th", "th")]
        {
            assert_eq!(Language::of_chunk(Some(name), ENGLISH).code(), code, "{name}");
        }
        // Their rules are English's: a paragraph in a language with a stemmer keeps its own.
        assert_eq!(Language::of_chunk(Some("zh"), GERMAN).code(), "de");
        let chinese = "首先，让我们看一下所有权的规则。当我们通过举例说明时，请谨记这些规则。所有权是最为与众不同的特性。";
        assert_eq!(Language::of_chunk(Some("zh"), chinese).code(), "zh");
    }

    #[test]
    fn a_markdown_sample_is_code_to_its_own_closing_fence() {
        let prose = |text: &str| prose_of(text).split_whitespace().collect::<Vec<_>>().join(" ");
        let text = "Ein Beispiel:\n````markdown\n```js\nlet x = 1;\n```\n````\nDanach weiter.\n~~~\n```\n~~~~\nEnde.";
        assert_eq!(prose(text), "Ein Beispiel: Danach weiter. Ende.");
        // A fence with an info string opens a block, never closes one; inline code is no fence.
        assert_eq!(prose("```\ncode\n```js\nstill code\n```\nText."), "Text.");
        assert_eq!(prose("```code``` then text"), "then text");
    }

    #[test]
    fn addresses_are_no_prose() {
        let prose = |text: &str| prose_of(text).split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            prose("- [安装](ch01-01-installation.md)\n  - [函数](ch03-03-how-functions-work.md) 等"),
            "- [安装] - [函数] 等"
        );
        assert_eq!(
            prose("见 https://example.com/a-long/english_path 和 [标签][label]\n[label]: https://x.org/y\n"),
            "见 和 [标签][label]"
        );
        assert_eq!(prose("[a](b"), "[a]");
        assert_eq!(prose("no links (here) at all"), "no links (here) at all");
        // A table of contents in Chinese reads as Chinese, though its file names are English.
        let contents = "- [入门指南](ch01-00-getting-started.md)
  - [安装](ch01-01-installation.md)
  - [编写一个猜数字游戏](ch02-00-guessing-game-tutorial.md)
  - [常见编程概念](ch03-00-common-programming-concepts.md)
  - [变量与可变性](ch03-01-variables-and-mutability.md)
  - [数据类型](ch03-02-data-types.md)
  - [认识所有权](ch04-00-understanding-ownership.md)
  - [使用结构体组织相关联的数据](ch05-00-structs.md)
";
        assert_eq!(Language::detect(contents).code(), "zh");
    }

    #[test]
    fn chinese_japanese_korean_and_thai_prose_is_told_by_its_letters_and_analysed_as_english() {
        let detect = |text: &str| Language::detect(text).code();
        assert_eq!(
            detect(
                "首先，让我们看一下所有权的规则。当我们通过举例说明时，请谨记这些规则。所有权是 Rust 最为与众不同的特性。"
            ),
            "zh"
        );
        assert_eq!(
            detect(
                "スナップショットは毎晩作成され、三十日間保存されます。古いものは自動的に削除されます。復元するときは日付を選びます。"
            ),
            "ja"
        );
        assert_eq!(
            detect(
                "새 버전을 배포하기 전에 데이터베이스를 백업하세요. 배포가 끝나면 로그를 확인하고, 문제가 있으면 되돌립니다."
            ),
            "ko"
        );
        assert_eq!(detect("ระบบจะสำรองข้อมูลทุกคืนและเก็บไว้สามสิบวัน หลังจากนั้นข้อมูลเก่าจะถูกลบโดยอัตโนมัติ"), "th");
        // Short, and told by its letters all the same; English prose quoting a few letters
        // is English.
        assert_eq!(detect("内存安全。"), "zh");
        assert_eq!(detect("# 备份\n\n快照保留三十天。"), "zh");
        assert_eq!(detect("バックアップ"), "ja");
        assert_eq!(detect("백업"), "ko");
        assert_eq!(
            detect("The word 所有权 means ownership, and the chapter on it explains the rules of moves."),
            "en"
        );
        // Their words in Latin letters are analysed by English's rules, so a query meets them
        // in both with the same terms.
        let zh = Language::named("zh").unwrap();
        assert!(zh.analysed_as_english() && !Language::named("de").unwrap().analysed_as_english());
        let text = "使用 `cargo build` 构建 crates，running the builds";
        assert_eq!(super::super::document_terms_in(text, zh), super::super::document_terms(text));
    }

    #[test]
    fn markers_are_distinct_and_unlike_words() {
        let markers: std::collections::HashSet<String> = Language::all().map(Language::marker).collect();
        assert_eq!(markers.len(), LANGUAGES.len());
        assert!(markers.iter().all(|m| m.starts_with('\u{1}')));
    }

    fn language(code: &str) -> Language {
        Language::named(code).expect(code)
    }

    #[test]
    fn each_language_stems_its_own_inflections_together() {
        use crate::analysis::{document_terms_in, query_terms_in};
        let pairs = [
            ("de", "Sicherungen", "Sicherung", true),
            ("fr", "sauvegardes", "sauvegarde", false),
            ("es", "contraseñas", "contraseña", false),
            ("ru", "копии", "копия", true),
            ("it", "configurazioni", "configurazione", true),
        ];
        for (code, document, query, english_misses) in pairs {
            let held = document_terms_in(document, language(code));
            let asked = query_terms_in(query, &[language(code)]);
            assert!(asked.iter().all(|t| held.contains(t)), "{code}: {held:?} {asked:?}");
            // English rules join plural `-s` forms, but not these: the language's stemmer does.
            let held = document_terms_in(document, Language::ENGLISH);
            let asked = query_terms_in(query, &[Language::ENGLISH]);
            assert_eq!(!asked.iter().all(|t| held.contains(t)), english_misses, "{code} by English rules");
        }
    }

    #[test]
    fn each_language_drops_its_own_stop_words() {
        use crate::analysis::document_terms_in;
        let held = document_terms_in("die Sicherung und der Server", language("de"));
        assert!(!held.contains("die") && !held.contains("und") && !held.contains("der"), "{held:?}");
        // English rules keep German function words, and drop English ones.
        let held = document_terms_in("die Sicherung und der Server", Language::ENGLISH);
        assert!(held.contains("die") && held.contains("und"), "{held:?}");
        assert!(document_terms_in("the backup", language("de")).contains("the"));
    }

    #[test]
    fn english_identifiers_in_a_german_note_stay_searchable() {
        use crate::analysis::{document_terms_in, query_terms_in};
        let note = "Danach führt man `runMigrations()` aus; der Parameter `maxRetries` bestimmt, wie oft \
            ein fehlgeschlagener Schritt wiederholt wird. Die Einstellung `traefik.http.routers.my-router.rule` \
            bleibt unverändert.";
        let held = document_terms_in(note, language("de"));
        // The German stemmer changes some English words (`router` → `rout`), identically in
        // the note and in a query analysed by German rules, so every identifier is met whole
        // and by its parts, as in an English note.
        let languages = [Language::ENGLISH, language("de")];
        for query in ["runMigrations", "maxRetries", "traefik.http.routers.my-router.rule"] {
            let whole = query_terms_in(query, &[language("de")]).remove(0);
            assert!(held.contains(&whole), "{query}: {whole} not in {held:?}");
        }
        for query in ["run migrations", "max retries", "router rule", "traefik"] {
            let asked = query_terms_in(query, &languages);
            let words = query.split(' ').count();
            let met = asked.iter().filter(|t| held.contains(*t)).count();
            assert!(met >= words, "{query}: {asked:?} met {met} in {held:?}");
        }
    }

    #[test]
    fn a_query_meets_each_language_by_its_rules() {
        use crate::analysis::{document_terms_in, query_terms_in};
        let german = document_terms_in("Die Sicherungen werden kopiert.", language("de"));
        let english = document_terms_in("The backups are copied.", Language::ENGLISH);
        let both = [Language::ENGLISH, language("de")];
        assert!(query_terms_in("Sicherung", &both).iter().any(|t| german.contains(t)));
        assert!(query_terms_in("backup", &both).iter().any(|t| english.contains(t)));
        // By English rules alone, the German inflection is missed.
        assert!(!query_terms_in("Sicherung", &[Language::ENGLISH]).iter().any(|t| german.contains(t)));
        // An English query's terms are the same as before when the index holds English only.
        assert_eq!(query_terms_in("backups kept", &[Language::ENGLISH]), ["backup", "kept"]);
    }

    #[test]
    fn the_marker_follows_the_last_word() {
        let tokens = crate::analysis::pre_tokenized("Die Sicherungen", language("de"), true).tokens;
        let texts: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["sicher", "\u{1}language=de"]);
        assert_eq!(tokens[1].position, tokens[0].position + 1);
        let tokens = crate::analysis::pre_tokenized("Die Sicherungen", language("de"), false).tokens;
        assert_eq!(tokens.len(), 1);
        assert!(
            crate::analysis::languages_held(|marker| u64::from(marker == language("fr").marker()))
                .iter()
                .map(|l| l.code())
                .eq(["en", "fr"])
        );
    }
}
