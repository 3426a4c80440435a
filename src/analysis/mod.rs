//! Text analysis: the one place that turns text into search terms, for indexing, queries
//! and previews alike. Identifiers are indexed whole and by their parts, text in Chinese,
//! Japanese and Korean by its pairs of characters, and text in the other scripts written
//! without spaces between words (Thai, Lao, Khmer, Myanmar) by its dictionary words.
//!
//! Technical prose names things the way code does: `sourceCriterion`,
//! `traefik.http.routers.my-router.rule`, `X-Forwarded-For`, `api_key_env`,
//! `--entryPoints.web.address`. A reader asks about "source criterion" or "router rule", and a
//! plain word tokenizer never connects the two. The tokenizer here emits every identifier-like
//! run twice over: once whole (so an exact name still scores best) and once per part, at every
//! level of its structure:
//!
//! ```text
//! docs/backup-policy.md      → docs/backup-policy.md, docs, backup-policy.md, backup-policy,
//!                              backup, policy, md
//! traefik.http.routers.my-router.rule
//!                            → traefik.http.routers.my-router.rule, traefik, http, routers,
//!                              my-router, my, router, rule
//! HTTPRouter                 → HTTPRouter, HTTP, Router
//! ```
//!
//! The levels, outermost first, are `/` (paths), `.` (dotted keys, host names, file
//! extensions, versions), `-` and `_` (kebab and snake case), then case and letter/digit
//! boundaries. A level that does not split a run adds nothing, so a run never yields the same
//! byte range twice. All parts of a run share the run's position: the word after an identifier
//! stays adjacent to it, whatever the identifier's size.
//!
//! A run of CJK letters is a clause rather than a word, so it is cut into overlapping pairs
//! of characters instead ([`cjk`]: `所有权` → `所有`, `有权`; documents keep each
//! character too). Latin letters and CJK ones never share a run, so an English name in
//! Chinese text (`使用v-model指令`) is split as code and matches as it does in English. A
//! run of Thai, Lao, Khmer or Myanmar is cut into its words by ICU's dictionaries instead
//! ([`unspaced`]): their letters spell sounds, and pairs of them would match as loosely as
//! pairs of Latin letters.
//!
//! The filters after the tokenizer are lowercasing, a length cap, stop words, the folding of
//! accented Latin letters ([`fold`]: `Épluchez` meets `epluchez`) and Snowball stemming, the
//! stop words and the stemmer by the rules of the chunk's language ([`language`]: English unless
//! a chunk is detected or declared to be in another of the seventeen languages with a
//! stemmer). Whole compounds are stemmed too: it is harmless for `traefik.http.routers` and
//! helps `entryPoints` meet `entryPoint`; what matters is that documents and queries go
//! through the very same chains, which [`query_terms_in`] guarantees by analysing a query by
//! the rules of every language the index holds (with one difference, for CJK text: queries
//! leave out its single characters).

mod arabic;
mod cjk;
mod code;
mod compose;
mod compound;
mod drop;
mod fold;
mod han;
mod hebrew;
mod kana;
mod language;
mod letters;
mod light;
mod question;
mod rewrite;
mod stop_words;
mod unspaced;

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use tantivy::Index;
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, PreTokenizedString, RawTokenizer, RemoveLongFilter, Stemmer,
    StopWordFilter, TextAnalyzer, TextAnalyzerBuilder, Token, TokenFilter, Tokenizer,
};

use code::CodeAwareTokenizer;
pub use language::Language;
pub use question::without_question_grammar;

/// Bumped whenever the analyzer turns the same text into other terms. It is part of the
/// pipeline fingerprint that every commit records, so an index analysed the old way is
/// analysed again (its vectors are kept: their texts did not change) rather than searched
/// with terms it does not hold.
pub const VERSION: u32 = 27;

/// The name under which [`register`] puts the analyzer in an index's tokenizer manager; text
/// fields name it in their indexing options.
pub const TEXT_ANALYZER: &str = "situate_text";

/// The longest term, in UTF-8 bytes, that is indexed.
///
/// Tantivy rejects terms over 65 530 bytes, and a term that long is never typed in a query
/// anyway. 255 bytes (Lucene's default) keeps long dotted keys, file paths and URLs whole,
/// and drops base64 blobs and minified lines. Runs over the limit are not indexed whole, but
/// their parts still are.
const MAX_TERM_BYTES: usize = 255;

/// Registers the analyzer in `index` under [`TEXT_ANALYZER`].
///
/// Tokenizers are not stored with an index, so this must be called every time an index is
/// created or opened, before documents are added or queries are parsed. The registered
/// analyzer applies English rules; text in another language is analysed before it reaches
/// the index ([`pre_tokenized`]).
pub fn register(index: &Index) {
    index.tokenizers().register(TEXT_ANALYZER, text_analyzer());
}

/// The analyzer for every BM25 text field and every query: identifier-aware splitting,
/// lowercasing, a length cap, English stop words, English stemming.
pub fn text_analyzer() -> TextAnalyzer {
    analyzer_for(Language::ENGLISH)
}

/// The document analyzer of `language`: the chain of [`text_analyzer`] with that language's
/// stop words and stemmer.
pub fn analyzer_for(language: Language) -> TextAnalyzer {
    static ANALYZERS: OnceLock<Vec<TextAnalyzer>> = OnceLock::new();
    let analyzers = ANALYZERS.get_or_init(|| {
        Language::all().map(|l| analyzer(CodeAwareTokenizer { cjk_unigrams: true }, l, false)).collect()
    });
    analyzers[language.index()].clone()
}

/// The analyzer of queries in `language`: the same chain as [`analyzer_for`], except that a
/// run of CJK text gives its pairs of characters only, not each character as well, and that
/// a word whose accents hid a stop word is dropped ([`fold::hides_a_stop_word`]).
fn query_analyzer(language: Language) -> TextAnalyzer {
    static ANALYZERS: OnceLock<Vec<TextAnalyzer>> = OnceLock::new();
    let analyzers = ANALYZERS.get_or_init(|| {
        Language::all().map(|l| analyzer(CodeAwareTokenizer { cjk_unigrams: false }, l, true)).collect()
    });
    analyzers[language.index()].clone()
}

fn analyzer(tokenizer: CodeAwareTokenizer, language: Language, query: bool) -> TextAnalyzer {
    // tantivy has no stop word list for Arabic, Greek, Tamil, Romanian, Turkish, Czech and
    // Ukrainian: nothing is dropped for them (the lists of `stop_words` tell Romanian,
    // Turkish and Czech prose only).
    let stop_words = language
        .stemming()
        .and_then(StopWordFilter::new)
        .unwrap_or_else(|| StopWordFilter::remove(Vec::<String>::new()));
    // Stop words go before stemming, as in Lucene's analyzers: the lists hold surface
    // forms, and a stemmed form could collide with one.
    let builder = TextAnalyzer::builder(tokenizer)
        .filter(LowerCaser)
        // Lowercasing can lengthen a term (`İ` becomes two chars), so the cap the tokenizer
        // already applies is checked again after it. `RemoveLongFilter` keeps terms strictly
        // shorter than its limit.
        .filter(RemoveLongFilter::limit(MAX_TERM_BYTES + 1))
        // Before the stop words and the stemmer, which then see each letter composed
        // however it was stored; a word in the Hebrew or the Arabic script however it was
        // typed; Chinese
        // characters in one script, whichever the text or the query was written in;
        // Japanese kana in full width, their voicing marks joined.
        .filter(rewrite::EachTerm((
            (rewrite::InPlace(compose::composed), rewrite::InPlace(hebrew::unpointed)),
            (arabic::AsTyped(arabic::Stage::BeforeStemming), (han::Simplified, kana::FullWidth)),
        )))
        .filter(stop_words.clone())
        .filter(drop::DropWhere(if query { fold::hides_a_stop_word } else { drop::never }));
    let stemming = match language.stems() {
        language::Stems::Snowball(stemming) => stemming,
        // Czech and Ukrainian, by light stemmers that read folded words (a Ukrainian one has
        // nothing to fold but the Latin names it quotes); they have no stop words to drop.
        language::Stems::Light(stem) => {
            return folded_then(builder, stop_words, rewrite::EachTerm(light::LightStemmer(stem)));
        }
    };
    let stemmer = Stemmer::new(stemming);
    if language.stems_accented_letters() {
        // The stemmer needs the accents of these languages' endings: their words lose them
        // once stemmed.
        if query {
            return builder
                .filter(stemmer)
                .filter(fold::DropLatinMarks)
                .filter(AsciiFoldingFilter)
                .filter(rewrite::EachTerm(arabic::AsTyped(arabic::Stage::AfterStemming)))
                .filter(RemoveLongFilter::limit(MAX_TERM_BYTES + 1))
                .filter(drop::DropWhere(drop::is_empty))
                .build();
        }
        // A chunk also holds each word folded first and then stemmed: what a query typed
        // without accents gives.
        let ways = fold::StemmedBothWays {
            stem_first: TextAnalyzer::builder(RawTokenizer::default())
                .filter(stemmer)
                .filter(fold::DropLatinMarks)
                .filter(AsciiFoldingFilter)
                .build(),
            fold_first: TextAnalyzer::builder(RawTokenizer::default())
                .filter(fold::DropLatinMarks)
                .filter(AsciiFoldingFilter)
                .filter(Stemmer::new(stemming))
                .build(),
        };
        return builder
            .filter(ways)
            .filter(rewrite::EachTerm(arabic::AsTyped(arabic::Stage::AfterStemming)))
            .filter(RemoveLongFilter::limit(MAX_TERM_BYTES + 1))
            .filter(drop::DropWhere(drop::is_empty))
            .build();
    }
    folded_then(builder, stop_words, stemmer)
}

/// The end of the chain for every language but Hungarian, Romanian and Turkish: accents go
/// after the stop words (whose lists spell them: `für`, `été`) and before the stemmer, so
/// that it sees the same letters however the word was typed; a word that the list spells
/// without accents is dropped once it has lost its own (`qué` is `que`).
fn folded_then<T: Tokenizer>(
    builder: TextAnalyzerBuilder<T>,
    stop_words: StopWordFilter,
    stemmer: impl TokenFilter,
) -> TextAnalyzer {
    builder
        .filter(fold::DropLatinMarks)
        .filter(AsciiFoldingFilter)
        // Folding can lengthen a term too (`⑽` becomes `(10)`).
        .filter(RemoveLongFilter::limit(MAX_TERM_BYTES + 1))
        .filter(stop_words)
        .filter(stemmer)
        .filter(rewrite::EachTerm(arabic::AsTyped(arabic::Stage::AfterStemming)))
        .filter(drop::DropWhere(drop::is_empty))
        .build()
}

/// `text` analysed by `language`'s rules, ready for a text field of a chunk in that language.
/// With `marked`, the text also carries the language's marker term ([`Language::marker`]),
/// after its last word, so that the index knows it holds the language.
pub fn pre_tokenized(text: &str, language: Language, marked: bool) -> PreTokenizedString {
    let mut analyzer = analyzer_for(language);
    let mut stream = analyzer.token_stream(text);
    let mut tokens = Vec::new();
    while let Some(token) = stream.next() {
        tokens.push(token.clone());
    }
    if marked {
        let position = tokens.last().map_or(0, |t: &Token| t.position + 1);
        tokens.push(Token {
            offset_from: text.len(),
            offset_to: text.len(),
            position,
            text: language.marker(),
            position_length: 1,
        });
    }
    PreTokenizedString { text: text.to_string(), tokens }
}

/// The rules by which a query is analysed to meet every chunk of an index: English's always,
/// and each other language's whose marker term has a document frequency above zero by
/// `doc_freq` (the text field's). A language analysed as English
/// ([`Language::analysed_as_english`]) is met by English's rules, so it is not asked about.
pub fn languages_held(doc_freq: impl Fn(&str) -> u64) -> Vec<Language> {
    Language::all()
        .filter(|&l| l.has_own_rules() && (l == Language::ENGLISH || doc_freq(&l.marker()) > 0))
        .collect()
}

/// The analysed terms of a user query, by English rules, de-duplicated, in the order they
/// first appear (see [`query_terms_in`]).
pub fn query_terms(text: &str) -> Vec<String> {
    query_terms_in(text, &[Language::ENGLISH])
}

/// The analysed terms of a user query by the rules of each of `languages` (those the index
/// holds), de-duplicated, in the order they first appear.
///
/// The query goes through the analyzer each language's chunks were indexed with, so a term
/// from here matches exactly what indexing produced for a chunk in any of them: `Sicherungen`
/// gives `sicherungen` by English rules and `sicher` by German ones, and a German chunk
/// holds the second. A chunk matches through the terms of its own language only (the others
/// are rarely words of it), so its BM25 score is the one a query in its language would give.
///
/// A Chinese question is read without its question words and particles
/// ([`question::without_chinese_question_words`]), whose pairs of letters would run across
/// its words.
///
/// Nothing in the input is syntax: quotes, colons, brackets, `*`, `AND` and emoji are
/// separators or stop words like any other text. An empty or all-stopword query gives an
/// empty list.
pub fn query_terms_in(text: &str, languages: &[Language]) -> Vec<String> {
    let text = question::without_chinese_question_words(text);
    let text = text.as_ref();
    let mut seen = HashSet::new();
    let mut terms = Vec::new();
    for &language in languages {
        let mut analyzer = query_analyzer(language);
        let mut stream = analyzer.token_stream(text);
        while let Some(token) = stream.next() {
            if seen.insert(token.text.clone()) {
                terms.push(token.text.clone());
            }
        }
    }
    terms
}

/// [`query_terms`] with the weight of each term in the query (see [`weighted_query_terms_in`]).
pub fn weighted_query_terms(text: &str) -> Vec<(String, f32)> {
    weighted_query_terms_in(text, &[Language::ENGLISH])
}

/// [`query_terms_in`], each term with its weight in the query: 1, except for the pairs of a
/// word written as one run of katakana, which share one word's weight.
///
/// BM25 adds up what each term of the query scores, and a word of eight katakana letters
/// (`シェルスクリプト`) gives seven pairs where an English name gives one term and a Chinese
/// word one or two pairs: without this, one borrowed word in a Japanese query outweighs
/// every other word of it several times over. Han text is a clause whose word boundaries
/// are unknown, so its pairs keep their weight. A pair found both inside such a word and
/// elsewhere keeps the larger weight.
pub fn weighted_query_terms_in(text: &str, languages: &[Language]) -> Vec<(String, f32)> {
    let text = question::without_chinese_question_words(text);
    let text = text.as_ref();
    // Each word's byte range and the share of a word each of its pairs weighs.
    let words: Vec<(usize, usize, f32)> = cjk::word_runs(text)
        .map(|(run, pairs)| {
            let at = run.as_ptr() as usize - text.as_ptr() as usize;
            (at, at + run.len(), 1.0 / pairs as f32)
        })
        .collect();
    let mut weights: HashMap<String, f32> = HashMap::new();
    let mut terms = Vec::new();
    for &language in languages {
        let mut analyzer = query_analyzer(language);
        let mut stream = analyzer.token_stream(text);
        while let Some(token) = stream.next() {
            let share = words
                .iter()
                .find(|&&(from, to, _)| token.offset_from >= from && token.offset_to <= to)
                .map_or(1.0, |&(_, _, share)| share);
            match weights.get_mut(&token.text) {
                Some(weight) => *weight = weight.max(share),
                None => {
                    weights.insert(token.text.clone(), share);
                    terms.push(token.text.clone());
                }
            }
        }
    }
    terms
        .into_iter()
        .map(|term| {
            let weight = weights[&term];
            (term, weight)
        })
        .collect()
}

/// The words that the query's compounds are made of ([`compound`]: `Verzeichnisgröße` →
/// `verzeichnis`, `gross`), by the rules of each of `languages` that writes compounds
/// closed, with their weight in the query, where the index holds both parts (`doc_freq`
/// of a term) more often than the whole word; a part already in `terms` is not repeated.
pub fn compound_parts(
    query: &str,
    languages: &[Language],
    terms: &[(String, f32)],
    doc_freq: impl Fn(&str) -> u64,
) -> Vec<(String, f32)> {
    let mut seen: HashSet<String> = terms.iter().map(|(t, _)| t.clone()).collect();
    let mut parts = Vec::new();
    for &language in languages.iter().filter(|&&l| compound::compounding(l)) {
        let analyse = |word: &str| query_terms_in(word, &[language]).into_iter().next();
        for word in query.split(|c: char| !c.is_alphanumeric()) {
            if let Some((first, second)) = compound::split(word, analyse, &doc_freq) {
                parts.extend([first, second].into_iter().map(|t| (t, compound::PART_WEIGHT)));
            }
        }
    }
    parts.retain(|(t, _)| seen.insert(t.clone()));
    parts
}

/// `text` as the embedders read it, chunks and queries alike: its letters composed
/// ([`compose::composed`]: Korean written in jamo as syllables), its kana in full width with
/// their voicing marks joined ([`kana::full_width`]), and its Chinese in Simplified
/// characters unless it holds kana (Japanese keeps its kanji as written). So e5 meets a note
/// and a query written in either form, as the words' arm does.
///
/// e5 reads a query best in the form its notes are written in, and neither side can tell
/// which that is; read in one script, a query typed in Simplified characters ranks Traditional
/// notes as the same query typed in Traditional ones (docs/languages.md, "Traditional and
/// Simplified characters").
pub fn embedded_text(mut text: String) -> String {
    compose::composed(&mut text);
    kana::full_width(&mut text);
    han::simplified_unless_japanese(&mut text);
    text
}

/// Whether `text` holds a Chinese, Japanese or Korean letter.
pub fn has_cjk(text: &str) -> bool {
    !text.is_ascii() && text.chars().any(cjk::is_cjk)
}

/// Whether most of `chunks` are written in Chinese, Japanese or Korean, by the `doc_freq`
/// (the text field's) of the commonest letter of each: `的`, `の` and `다`, which ends nearly
/// every Korean sentence. Documents index each such letter alone, so a chunk of prose in one
/// of these languages holds its letter.
pub fn mostly_cjk(doc_freq: impl Fn(&str) -> u64, chunks: u64) -> bool {
    const COMMONEST: [&str; 3] = ["的", "の", "다"];
    let cjk = COMMONEST.iter().map(|letter| doc_freq(letter)).max().unwrap_or(0);
    cjk * 2 > chunks.max(1)
}

/// The distinct terms indexing gives `text` by English rules (see [`document_terms_in`]).
pub fn document_terms(text: &str) -> HashSet<String> {
    document_terms_in(text, Language::ENGLISH)
}

/// The distinct terms indexing gives `text` in `language`: what a chunk holds, for comparing
/// with the [`query_terms_in`] of a query.
pub fn document_terms_in(text: &str, language: Language) -> HashSet<String> {
    let mut analyzer = analyzer_for(language);
    let mut stream = analyzer.token_stream(text);
    let mut terms = HashSet::new();
    while let Some(token) = stream.next() {
        terms.insert(token.text.clone());
    }
    terms
}

#[cfg(test)]
mod tests {

    use proptest::prelude::*;
    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
    use tantivy::schema::{
        IndexRecordOption, STORED, STRING, Schema, TantivyDocument, TextFieldIndexing, TextOptions, Value,
    };
    use tantivy::{Term, doc};

    use tantivy::tokenizer::{TokenStream, Tokenizer};

    use super::*;

    /// The raw tokenizer's output, before any filter: (text, position, offset_from, offset_to).
    fn raw_tokens(text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut tokenizer = CodeAwareTokenizer { cjk_unigrams: true };
        let mut stream = tokenizer.token_stream(text);
        let mut tokens = Vec::new();
        while let Some(token) = stream.next() {
            tokens.push((token.text.clone(), token.position, token.offset_from, token.offset_to));
        }
        tokens
    }

    /// The raw tokenizer's texts only.
    fn raw(text: &str) -> Vec<String> {
        raw_tokens(text).into_iter().map(|(text, ..)| text).collect()
    }

    /// The texts of a token stream's tokens, duplicates kept, in order.
    fn texts(mut stream: impl TokenStream) -> Vec<String> {
        let mut terms = Vec::new();
        while let Some(token) = stream.next() {
            terms.push(token.text.clone());
        }
        terms
    }

    /// The full analyzer's terms, duplicates kept, in order.
    fn analyzed(text: &str) -> Vec<String> {
        texts(text_analyzer().token_stream(text))
    }

    #[test]
    fn a_chinese_questions_pairs_are_those_of_its_subject() {
        let terms = query_terms("常量和不可变变量有什么区别？");
        for pair in ["常量", "可变", "变量", "区别"] {
            assert!(terms.contains(&pair.to_string()), "{pair} in {terms:?}");
        }
        for pair in ["有什", "什么", "么区"] {
            assert!(!terms.contains(&pair.to_string()), "{pair} in {terms:?}");
        }
        // In Traditional characters too, and with the weights BM25 reads.
        let weighted = weighted_query_terms_in("為什麼要設定語系？", &[Language::ENGLISH]);
        assert!(
            weighted.iter().all(|(term, _)| !term.contains('麼') && !term.contains('么')),
            "{weighted:?}"
        );
    }

    #[test]
    fn a_cjk_letter_is_told_from_a_latin_one_with_accents() {
        assert!(has_cjk("所有权 rules") && !has_cjk("naïve ownership rules"));
    }

    #[test]
    fn embedders_read_chinese_in_one_script_and_kana_in_full_width() {
        assert_eq!(embedded_text("如何設定 HTTPS 代理？".into()), "如何设定 HTTPS 代理？");
        assert_eq!(embedded_text("如何设定 HTTPS 代理？".into()), "如何设定 HTTPS 代理？");
        assert_eq!(
            embedded_text("Document: 備份.md > 設定\n\n備份設定".into()),
            "Document: 备份.md > 设定\n\n备份设定"
        );
        // Kana anywhere make the text Japanese: `機能` (function) keeps its kanji.
        for japanese in ["機能の設定", "設定ファイル"] {
            assert_eq!(embedded_text(japanese.into()), japanese);
        }
        assert_eq!(embedded_text("backup, sauvegardé".into()), "backup, sauvegardé");
        // Half-width katakana in full width: Japanese, so its kanji stay.
        assert_eq!(embedded_text("ﾊﾞｯｸｱｯﾌﾟの設定".into()), "バックアップの設定");
    }

    #[test]
    fn hebrew_with_its_points_meets_the_words_typed_without() {
        // Genesis 1:1 with its points and cantillation marks, as Scripture gives it.
        let verse = "בְּרֵאשִׁ֖ית בָּרָ֣א אֱלֹהִ֑ים אֵ֥ת הַשָּׁמַ֖יִם וְאֵ֥ת הָאָֽרֶץ׃";
        assert_eq!(
            analyzed(verse),
            ["בראשית", "ברא", "אלהים", "את", "השמים", "ואת", "הארץ"],
            "a cantillation mark does not cut a word"
        );
        let document = document_terms_in(verse, Language::ENGLISH);
        for term in query_terms_in("בראשית השמים", &[Language::ENGLISH]) {
            assert!(document.contains(&term), "{term} in {document:?}");
        }
    }

    #[test]
    fn letters_stored_decomposed_meet_the_letters_typed() {
        // Korean in conjoining jamo, as macOS keeps file names: its pairs are the syllables'.
        let ko = Language::named("ko").unwrap();
        let decomposed = "\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}\u{110B}\u{1165} \u{1107}\u{1162}\u{11A8}\u{110B}\u{1165}\u{11B8}";
        let document = document_terms_in(decomposed, ko);
        for term in query_terms_in("한국어 백업", &[ko]) {
            assert!(document.contains(&term), "{term} in {document:?}");
        }
        assert_eq!(document, document_terms_in("한국어 백업", ko));
        // Cyrillic and Latin letters with their marks written apart.
        let ru = Language::named("ru").unwrap();
        assert_eq!(
            document_terms_in(
                "\u{0431}\u{0435}\u{0437}\u{043E}\u{043F}\u{0430}\u{0441}\u{043D}\u{044B}\u{0438}\u{0306}",
                ru
            ),
            document_terms_in("безопасный", ru)
        );
        assert_eq!(
            document_terms_in("cafe\u{301}", Language::ENGLISH),
            document_terms_in("café", Language::ENGLISH)
        );
        // The embedders read the composed text too.
        assert_eq!(embedded_text(decomposed.into()), "한국어 백업");
    }

    #[test]
    fn camel_case_is_indexed_whole_and_by_part() {
        assert_eq!(raw("sourceCriterion"), ["sourceCriterion", "source", "Criterion"]);
        assert_eq!(analyzed("sourceCriterion"), ["sourcecriterion", "sourc", "criterion"]);
    }

    #[test]
    fn acronyms_stay_together_before_a_word() {
        assert_eq!(raw("HTTPRouter"), ["HTTPRouter", "HTTP", "Router"]);
        assert_eq!(raw("XMLHttpRequest"), ["XMLHttpRequest", "XML", "Http", "Request"]);
        assert_eq!(raw("getHTTPResponse"), ["getHTTPResponse", "get", "HTTP", "Response"]);
        // A single lowercase letter after capitals is a plural, not a word.
        assert_eq!(raw("URLs"), ["URLs"]);
        assert_eq!(raw("APIs"), ["APIs"]);
        assert_eq!(analyzed("APIs"), ["api"]);
    }

    #[test]
    fn kebab_and_snake_case_split_on_their_separators() {
        assert_eq!(raw("my-router"), ["my-router", "my", "router"]);
        assert_eq!(raw("snake_case_name"), ["snake_case_name", "snake", "case", "name"]);
        assert_eq!(raw("api_key_env"), ["api_key_env", "api", "key", "env"]);
        assert_eq!(raw("X-Forwarded-For"), ["X-Forwarded-For", "X", "Forwarded", "For"]);
        // `for` is a stop word as a part; the whole header name stays.
        assert_eq!(analyzed("X-Forwarded-For"), ["x-forwarded-for", "x", "forward"]);
    }

    #[test]
    fn dotted_keys_split_at_every_level() {
        assert_eq!(
            raw("traefik.http.routers.my-router.rule"),
            [
                "traefik.http.routers.my-router.rule",
                "traefik",
                "http",
                "routers",
                "my-router",
                "my",
                "router",
                "rule",
            ]
        );
        assert_eq!(
            raw("--entryPoints.web.address"),
            ["entryPoints.web.address", "entryPoints", "entry", "Points", "web", "address",]
        );
    }

    #[test]
    fn paths_split_on_slash_before_dot() {
        assert_eq!(
            raw("docs/backup-policy.md"),
            ["docs/backup-policy.md", "docs", "backup-policy.md", "backup-policy", "backup", "policy", "md",]
        );
    }

    #[test]
    fn letters_and_digits_split_only_around_real_words() {
        assert_eq!(raw("ipv6"), ["ipv6", "ipv", "6"]);
        assert_eq!(raw("IPv6"), ["IPv6", "IPv", "6"]);
        assert_eq!(raw("IPv6Address"), ["IPv6Address", "IPv", "6", "Address"]);
        assert_eq!(raw("sha256"), ["sha256", "sha", "256"]);
        assert_eq!(raw("python3"), ["python3", "python", "3"]);
        assert_eq!(raw("2fa"), ["2fa", "2", "fa"]);
        // One letter beside digits is a product or version name, not a word.
        for whole in ["v3", "s3", "k8s", "i18n", "x86", "h2", "1e10", "0x1F"] {
            assert_eq!(raw(whole), [whole], "{whole}");
        }
        assert_eq!(raw("x86_64"), ["x86_64", "x86", "64"]);
    }

    #[test]
    fn parts_share_the_position_of_their_run() {
        assert_eq!(
            raw_tokens("use sourceCriterion here"),
            [
                ("use".to_string(), 0, 0, 3),
                ("sourceCriterion".to_string(), 1, 4, 19),
                ("source".to_string(), 1, 4, 10),
                ("Criterion".to_string(), 1, 10, 19),
                ("here".to_string(), 2, 20, 24),
            ]
        );
    }

    #[test]
    fn lowercase_and_stemming_meet_across_forms() {
        assert_eq!(analyzed("routers"), analyzed("router"));
        assert_eq!(analyzed("Backups"), analyzed("backup"));
        assert_eq!(analyzed("Backups"), ["backup"]);
        assert_eq!(analyzed("Indexing"), analyzed("indexed"));
        // Stemming applies to compounds as well, identically on both sides.
        assert_eq!(analyzed("entryPoints"), analyzed("entryPoint"));
        assert_eq!(query_terms("entryPoints"), analyzed("entryPoint"));
    }

    #[test]
    fn stop_words_are_dropped() {
        assert_eq!(analyzed("The backups are kept for a month"), ["backup", "kept", "month"]);
        // As parts too, while the whole stays.
        assert_eq!(analyzed("and/or"), ["and/or"]);
    }

    #[test]
    fn sentence_punctuation_is_not_part_of_a_token() {
        assert_eq!(
            raw("Set the address. Then, restart (see: v3.0)! Done?"),
            ["Set", "the", "address", "Then", "restart", "see", "v3.0", "v3", "0", "Done"]
        );
        assert_eq!(raw("a... b-- c__ -d e.-f"), ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(raw("e.g. this"), ["e.g", "e", "g", "this"]);
    }

    #[test]
    fn urls_lose_their_scheme_and_keep_host_and_path() {
        assert_eq!(
            raw("https://doc.traefik.io/traefik/"),
            ["https", "doc.traefik.io/traefik", "doc.traefik.io", "doc", "traefik", "io", "traefik",]
        );
        let terms = query_terms("see https://doc.traefik.io/traefik/ for details");
        assert_eq!(
            terms,
            ["see", "https", "doc.traefik.io/traefik", "doc.traefik.io", "doc", "traefik", "io", "detail",]
        );
    }

    #[test]
    fn key_value_pairs_split_at_the_equals_sign() {
        assert_eq!(raw("log_level=debug"), ["log_level", "log", "level", "debug"]);
        assert_eq!(raw("--port=8080"), ["port", "8080"]);
    }

    #[test]
    fn markdown_markup_is_not_indexed() {
        assert_eq!(
            raw("**bold** _emphasis_ `code` [link](url) # Heading ~~gone~~"),
            ["bold", "emphasis", "code", "link", "url", "Heading", "gone"]
        );
        assert_eq!(raw("`__init__`"), ["init"]);
        assert_eq!(raw("<br/> | a | b |"), ["br", "a", "b"]);
    }

    #[test]
    fn numbers_and_versions() {
        assert_eq!(raw("v1.2.3"), ["v1.2.3", "v1", "2", "3"]);
        assert_eq!(raw("3.14"), ["3.14", "3", "14"]);
        assert_eq!(raw("2024-01-15"), ["2024-01-15", "2024", "01", "15"]);
        assert_eq!(raw("1,000 $5 10%"), ["1", "000", "5", "10"]);
        // Numbers are not stemmed or dropped.
        assert_eq!(analyzed("port 8080"), ["port", "8080"]);
    }

    #[test]
    fn apostrophes_join_letters_and_possessives_stem_away() {
        assert_eq!(raw("user's don't"), ["user's", "don't"]);
        assert_eq!(analyzed("the server's config"), ["server", "config"]);
        assert_eq!(analyzed("the server\u{2019}s config"), ["server", "config"]);
        // Quotes are not apostrophes.
        assert_eq!(raw("'quoted' 80's"), ["quoted", "80", "s"]);
    }

    #[test]
    fn unicode_letters_are_word_characters() {
        assert_eq!(
            raw_tokens("café Straße"),
            [("café".to_string(), 0, 0, 5), ("Straße".to_string(), 1, 6, 13),]
        );
        // Latin letters lose their accents before the stemmer (see the test below).
        assert_eq!(analyzed("Straße"), ["strass"]);
        // A decomposed `é` keeps its combining accent.
        assert_eq!(raw("cafe\u{301} au lait"), ["cafe\u{301}", "au", "lait"]);
        // Devanagari and Arabic words are runs like Latin ones, and so is a Thai phrase of
        // one word.
        assert_eq!(raw("สวัสดี مرحبا"), ["สวัสดี", "مرحبا"]);
        // Devanagari viramas do not cut a word.
        assert_eq!(raw("क्षत्रिय"), ["क्षत्रिय"]);
        // Emoji separate.
        assert_eq!(raw("deploy🚀now"), ["deploy", "now"]);
    }

    #[test]
    fn a_word_typed_without_its_accents_meets_the_word_written_with_them() {
        let es = Language::named("es").unwrap();
        let fr = Language::named("fr").unwrap();
        let in_ = |text: &str, language| query_terms_in(text, &[language]);
        let doc = |text: &str, language| document_terms_in(text, language).into_iter().collect::<Vec<_>>();
        assert_eq!(in_("manana", es), doc("mañana", es));
        assert_eq!(in_("Epluchez", fr), doc("Épluchez", fr));
        assert_eq!(in_("precedente", fr), doc("précédente", fr));
        // A letter and its accent written apart (as macOS stores file names) meet it too.
        assert_eq!(in_("pre\u{301}ce\u{301}dente", fr), doc("précédente", fr));
        assert_eq!(analyzed("cafe\u{301}"), analyzed("café"));
        // German's stemmer reads the spelling without umlauts too (`ue` for `ü`).
        let de = Language::named("de").unwrap();
        let mut typed = in_("Schluessel Groesse", de);
        let mut written = doc("Schlüssel Größe", de);
        typed.sort();
        written.sort();
        assert_eq!(typed, written);
        assert_eq!(analyzed("Œuvre Ærø Łódź"), analyzed("oeuvre aero lodz"));
        // Other scripts keep their marks: a Cyrillic й is not an и, and Greek, Thai and CJK
        // letters are as they were.
        let ru = Language::named("ru").unwrap();
        assert_ne!(doc("й", ru), doc("и", ru));
        assert_eq!(analyzed("καφές"), ["καφές"]);
        assert_eq!(query_terms("検索"), ["検索"]);
        // Hungarian, Romanian and Turkish endings are stemmed with their accents, then
        // folded: `ablakból` (from the window) still meets `ablak`, and `orașele` `oraș`.
        // A chunk also holds each word folded first, then stemmed: `ablakból` typed
        // `ablakbol` is no ending the stemmer knows, and meets it so.
        let hu = Language::named("hu").unwrap();
        let held = document_terms_in("ablakból", hu);
        let mut expected = document_terms_in("ablak", hu);
        expected.insert("ablakbol".to_string());
        assert_eq!(held, expected);
        for typed in ["ablak", "ablakból", "ablakbol"] {
            assert!(in_(typed, hu).iter().all(|t| held.contains(t)), "{typed}");
        }
        let ro = Language::named("ro").unwrap();
        assert_eq!(in_("orașele", ro), doc("oraș", ro));
        assert!(in_("orasele", ro).iter().all(|t| document_terms_in("orașele", ro).contains(t)));
        assert_eq!(doc("oraș", ro), ["oras"]);
        // A word with nothing to fold gives one term.
        assert_eq!(doc("ablak", hu).len(), 1);
    }

    #[test]
    fn a_word_a_stemmer_empties_gives_no_term() {
        // Greek's stemmer takes `ετε` for an ending and leaves nothing of it.
        let el = Language::named("el").unwrap();
        assert_eq!(document_terms_in("ετε", el), HashSet::new());
        assert_eq!(
            query_terms_in("ετε καφές", &[el]),
            document_terms_in("καφές", el).into_iter().collect::<Vec<_>>()
        );
        for language in Language::all() {
            assert!(!document_terms_in("ετε ετε_x ablakból", language).contains(""), "{}", language.code());
        }
    }

    #[test]
    fn a_query_word_whose_accents_hid_a_stop_word_is_dropped() {
        // Folded, `qué` and `está` would be `que` and `esta`, which a note analysed by
        // English rules keeps (Spanish quoted in an English note), and `à` an `a`.
        assert_eq!(query_terms("qué está à"), Vec::<String>::new());
        // The plain words are analysed as before; under Spanish rules both are stop words.
        assert_eq!(query_terms("que"), ["que"]);
        assert_eq!(query_terms_in("qué que", &[Language::named("es").unwrap()]), Vec::<String>::new());
        // A word whose folded form is no stop word is kept, folded.
        assert_eq!(query_terms("café"), ["cafe"]);
    }

    #[test]
    fn a_thai_phrase_gives_its_words_each_at_its_own_position() {
        let tokens = raw_tokens("ให้ลบโฟลเดอร์targetแล้ว");
        let words: Vec<(&str, usize)> = tokens.iter().map(|(t, p, _, _)| (t.as_str(), *p)).collect();
        assert_eq!(words, [("ให้", 0), ("ลบ", 1), ("โฟลเดอร์", 2), ("target", 3), ("แล้ว", 4)]);
        // Queries are cut the same way.
        assert_eq!(query_terms("ลบโฟลเดอร์"), ["ลบ", "โฟลเดอร์"]);
        // Khmer and Myanmar signs inside a word no longer cut it.
        assert_eq!(raw("ភាសាខ្មែរ"), ["ភាសាខ្មែរ"]);
        assert_eq!(raw("မြန်မာ"), ["မြန်မာ"]);
    }

    /// The query analyzer's raw terms, before any filter.
    fn raw_query(text: &str) -> Vec<String> {
        texts(CodeAwareTokenizer { cjk_unigrams: false }.token_stream(text))
    }

    #[test]
    fn cjk_runs_become_characters_and_pairs() {
        assert_eq!(
            raw_query("日本語のテキスト。検索"),
            ["日本", "本語", "語の", "テキ", "キス", "スト", "検索"]
        );
        assert_eq!(
            raw_tokens("所有权。"),
            [
                ("所".to_string(), 0, 0, 3),
                ("所有".to_string(), 0, 0, 6),
                ("有".to_string(), 1, 3, 6),
                ("有权".to_string(), 1, 3, 9),
                ("权".to_string(), 2, 6, 9),
            ]
        );
        // Hangul too, and each part of a mixed sentence takes its own place.
        assert_eq!(raw_query("벡터를 검색"), ["벡터", "터를", "검색"]);
        assert_eq!(query_terms("堆"), ["堆"]);
    }

    #[test]
    fn the_pairs_of_a_word_in_katakana_share_one_weight() {
        let weights = weighted_query_terms("apt-get シェルスクリプト 使い分け");
        let weight = |term: &str| weights.iter().find(|(t, _)| t == term).map(|(_, w)| *w);
        assert_eq!(weight("apt-get"), Some(1.0));
        for pair in ["シェ", "ェル", "ルス", "スク", "クリ", "リプ", "プト"] {
            assert_eq!(weight(pair), Some(1.0 / 7.0), "{pair}");
        }
        // Kanji with kana endings are not one word: their pairs keep their weight.
        assert_eq!(weight("使い"), Some(1.0));
        assert_eq!(weight("分け"), Some(1.0));
        // A pair that the query gives elsewhere too keeps the full weight; so does one
        // that ends a katakana word and opens the kana after it.
        let weights = weighted_query_terms("ファイル ファの ファイルの");
        assert!(weights.contains(&("ファ".to_string(), 1.0)), "{weights:?}");
        assert!(weights.contains(&("ルの".to_string(), 1.0)), "{weights:?}");
        assert!(weights.contains(&("ァイ".to_string(), 1.0 / 3.0)), "{weights:?}");
        // Han and Hangul text and English keep the weights they had.
        for query in ["环境变量 shell", "데이터베이스를 백업"] {
            let weights = weighted_query_terms(query);
            assert!(weights.iter().all(|(_, w)| *w == 1.0), "{weights:?}");
            assert_eq!(weights.len(), query_terms(query).len());
        }
    }

    #[test]
    fn english_names_inside_cjk_text_stay_whole() {
        assert_eq!(raw_query("使用v-model指令"), ["使用", "v-model", "v", "model", "指令"]);
        assert_eq!(raw_query("类型Vec<T>的值"), ["类型", "Vec", "T", "的值"]);
        assert_eq!(raw_query("日本Tokyo"), ["日本", "Tokyo"]);
        assert_eq!(
            raw_query("请见src/main.rs文件"),
            ["请见", "src/main.rs", "src", "main.rs", "main", "rs", "文件"]
        );
        // A query in Chinese finds the English identifier and the words around it.
        assert_eq!(query_terms("v-model 指令"), ["v-model", "v", "model", "指令"]);
    }

    #[test]
    fn a_chinese_query_finds_the_chunk_that_holds_its_words() {
        let docs = [
            ("heap", "堆上的数据在编译时大小未知。"),
            ("stack", "栈中的所有数据都必须占用已知且固定的大小。"),
            ("owner", "Rust 中的每一个值都有一个所有者（owner）。"),
        ];
        assert_eq!(search_in(&docs, &query_terms("每一个值")), ["owner"]);
        assert_eq!(search_in(&docs, &query_terms("固定的大小")), ["heap", "stack"]);
        assert_eq!(search_in(&docs, &query_terms("栈")), ["stack"]);
        assert_eq!(search_in(&docs, &query_terms("owner")), ["owner"]);
    }

    #[test]
    fn huge_input_emits_no_long_terms() {
        // Megabyte-long runs: a quadratic walk would not finish; the benchmark times them.
        let inputs = [
            "a".repeat(1024 * 1024),
            "aB".repeat(512 * 1024),
            "ab.".repeat(512 * 1024),
            "日".repeat(512 * 1024),
        ];
        for input in &inputs {
            let mut analyzer = text_analyzer();
            let mut stream = analyzer.token_stream(input);
            let mut count = 0usize;
            while let Some(token) = stream.next() {
                assert!(token.text.len() <= MAX_TERM_BYTES);
                count += 1;
            }
            // The run is too long to index whole; only its parts (if any) are indexed: at
            // most two per character, a CJK character and the pair it starts.
            assert!(count <= input.chars().count() * 2, "{count} tokens");
        }
        // One long unbroken run yields nothing at all.
        assert!(analyzed(&inputs[0]).is_empty());
        // A long dotted run still yields its parts.
        assert_eq!(analyzed(&"ab.".repeat(1000)).len(), 1000);
    }

    #[test]
    fn runs_at_the_length_limit() {
        let at_limit = "a".repeat(MAX_TERM_BYTES);
        let over_limit = "a".repeat(MAX_TERM_BYTES + 1);
        assert_eq!(analyzed(&at_limit), [at_limit.as_str()]);
        assert!(analyzed(&over_limit).is_empty());
        // The long whole is dropped, its parts kept, and positions keep counting.
        assert_eq!(
            raw_tokens(&format!("{over_limit}-x y")),
            [
                ("x".to_string(), 0, MAX_TERM_BYTES + 2, MAX_TERM_BYTES + 3),
                ("y".to_string(), 1, MAX_TERM_BYTES + 4, MAX_TERM_BYTES + 5),
            ]
        );
        // `İ` lowercases to two characters, one byte longer: the filter catches the growth.
        let grows = "İ".repeat(MAX_TERM_BYTES / 2);
        assert_eq!(grows.len(), MAX_TERM_BYTES - 1);
        assert!(analyzed(&grows).is_empty());
        // Folding makes `⑽` (three bytes) four: the filter catches that growth too.
        let folds_longer = "⑽".repeat(MAX_TERM_BYTES / 3);
        assert_eq!(folds_longer.len(), MAX_TERM_BYTES);
        assert_eq!(raw(&folds_longer), [folds_longer.as_str()]);
        assert!(analyzed(&folds_longer).is_empty());
    }

    #[test]
    fn junk_query_syntax_gives_plain_terms() {
        assert_eq!(
            query_terms(r#"title:"backup AND (retention* OR "policy]] -- 🚀 NOT +x"#),
            ["titl", "backup", "retent", "polici", "x"]
        );
        assert_eq!(query_terms("How long are backups kept? backups!"), ["how", "long", "backup", "kept"]);
        assert!(query_terms("").is_empty());
        assert!(query_terms("   \"\" :: () ** ").is_empty());
        assert!(query_terms("the AND of it").is_empty());
    }

    #[test]
    fn register_makes_the_analyzer_available_to_the_index() {
        let index = Index::create_in_ram(Schema::builder().build());
        assert!(index.tokenizers().get(TEXT_ANALYZER).is_none());
        register(&index);
        let mut analyzer = index.tokenizers().get(TEXT_ANALYZER).expect("registered");
        let mut stream = analyzer.token_stream("sourceCriterion");
        assert_eq!(stream.next().map(|t| t.text.clone()).as_deref(), Some("sourcecriterion"));
    }

    /// Names of the documents that match any of `terms` in the `text` field.
    fn search(terms: &[String]) -> Vec<String> {
        search_in(
            &[
                ("camel", "Set `sourceCriterion` to pick the IP strategy."),
                ("spaced", "The source criterion decides which address counts."),
                ("other", "Routers forward requests to services."),
            ],
            terms,
        )
    }

    /// Names of the documents of `docs` (name, text) that match any of `terms`.
    fn search_in(docs: &[(&str, &str)], terms: &[String]) -> Vec<String> {
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(TEXT_ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let text = schema.add_text_field("text", TextOptions::default().set_indexing_options(indexing));
        let name = schema.add_text_field("name", STRING | STORED);
        let index = Index::create_in_ram(schema.build());
        register(&index);
        let mut writer = index.writer(15_000_000).expect("writer");
        for &(doc_name, body) in docs {
            writer.add_document(doc!(text => body, name => doc_name)).expect("add");
        }
        writer.commit().expect("commit");
        let searcher = index.reader().expect("reader").searcher();
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|term| {
                let query = TermQuery::new(Term::from_field_text(text, term), IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(query) as Box<dyn Query>)
            })
            .collect();
        let hits = searcher
            .search(&BooleanQuery::new(clauses), &TopDocs::with_limit(10).order_by_score())
            .expect("search");
        let mut names: Vec<String> = hits
            .into_iter()
            .map(|(_, address)| {
                let doc: TantivyDocument = searcher.doc(address).expect("doc");
                doc.get_first(name).and_then(|value| value.as_str()).expect("name").to_string()
            })
            .collect();
        names.sort();
        names
    }

    #[test]
    fn spaced_words_and_camel_case_find_each_other_in_an_index() {
        assert_eq!(search(&query_terms("source criterion")), ["camel", "spaced"]);
        assert_eq!(search(&query_terms("sourceCriterion")), ["camel", "spaced"]);
        assert_eq!(search(&query_terms("router")), ["other"]);
        assert!(search(&query_terms("the of and")).is_empty());
    }

    proptest! {
        #[test]
        fn any_text_gives_well_formed_tokens(text in "\\PC{0,64}|[a-zA-Z0-9_./\\-' ]{0,64}") {
            let mut tokenizer = CodeAwareTokenizer { cjk_unigrams: true };
            let mut stream = tokenizer.token_stream(&text);
            let mut last_position = 0;
            while let Some(token) = stream.next() {
                prop_assert!(token.offset_from < token.offset_to);
                prop_assert!(text.is_char_boundary(token.offset_from));
                prop_assert!(text.is_char_boundary(token.offset_to));
                prop_assert!(token.text.len() <= MAX_TERM_BYTES);
                prop_assert!(token.position >= last_position);
                last_position = token.position;
            }
            // The whole chain, stemmer included, never panics either.
            let _ = query_terms(&text);
        }
    }
}
