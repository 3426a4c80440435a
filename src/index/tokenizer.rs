//! Code-aware text analysis for BM25: identifiers are indexed whole and by their parts.
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
//! The filters after the tokenizer are the usual English ones (lowercase, stop words,
//! Snowball stemming) plus a length cap. Whole compounds are stemmed too: it is harmless for
//! `traefik.http.routers` and helps `entryPoints` meet `entryPoint`; what matters is that
//! documents and queries go through the very same chain, which [`query_terms`] guarantees.

use std::collections::HashSet;

use tantivy::Index;
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, Stemmer, StopWordFilter, TextAnalyzer, Token, TokenStream,
    Tokenizer,
};

/// The name under which [`register`] puts the analyzer in an index's tokenizer manager; text
/// fields name it in their indexing options.
pub const TEXT_ANALYZER: &str = "situate_text";

/// The longest term, in UTF-8 bytes, that is indexed.
///
/// Tantivy rejects terms over 65 530 bytes, and a term that long is never typed in a query
/// anyway. 255 bytes (Lucene's default) keeps long dotted keys, file paths, URLs and
/// unspaced CJK clauses whole, and drops base64 blobs and minified lines. Runs over the limit
/// are not indexed whole, but their parts still are.
const MAX_TERM_BYTES: usize = 255;

/// Registers the analyzer in `index` under [`TEXT_ANALYZER`].
///
/// Tokenizers are not stored with an index, so this must be called every time an index is
/// created or opened, before documents are added or queries are parsed.
pub fn register(index: &Index) {
    index.tokenizers().register(TEXT_ANALYZER, text_analyzer());
}

/// The analyzer for every BM25 text field and every query: identifier-aware splitting,
/// lowercasing, a length cap, English stop words, English stemming.
pub fn text_analyzer() -> TextAnalyzer {
    let stop_words = StopWordFilter::new(Language::English)
        .expect("tantivy's `stopwords` feature provides an English list");
    TextAnalyzer::builder(CodeAwareTokenizer)
        .filter(LowerCaser)
        // Lowercasing can lengthen a term (`İ` becomes two chars), so the cap the tokenizer
        // already applies is checked again after it. `RemoveLongFilter` keeps terms strictly
        // shorter than its limit.
        .filter(RemoveLongFilter::limit(MAX_TERM_BYTES + 1))
        // Stop words go before stemming, as in Lucene's English analyzer: the list holds
        // surface forms, and a stemmed form could collide with one.
        .filter(stop_words)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The analysed terms of a user query, de-duplicated, in the order they first appear.
///
/// The query goes through [`text_analyzer`], the analyzer documents were indexed with, so a
/// term from here matches exactly what indexing produced. Nothing in the input is syntax:
/// quotes, colons, brackets, `*`, `AND` and emoji are separators or stop words like any other
/// text. An empty or all-stopword query gives an empty list.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut analyzer = text_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut seen = HashSet::new();
    let mut terms = Vec::new();
    while let Some(token) = stream.next() {
        if seen.insert(token.text.clone()) {
            terms.push(token.text.clone());
        }
    }
    terms
}

/// Splits text into identifier-like runs and emits each run whole, then its parts.
///
/// A run is a sequence of word characters (Unicode letters and digits, with combining marks
/// carried along) in which a separator (`/`, `.`, `-`, `_`) may stand between two word
/// characters, and an apostrophe between two letters (`user's`, `don't`: the stemmer strips
/// a trailing `'s`). A separator at either end of a run is not part of it, so sentence
/// punctuation (`address.`), option dashes (`--entryPoints`), markdown emphasis (`_word_`)
/// and dunder names (`__init__`) all fall away. Anything else (whitespace, `:`, `=`, `@`,
/// quotes, brackets, symbols, emoji) ends a run.
///
/// `:` is deliberately not a separator: in prose it ends clauses (`Note:`), and in a URL it
/// cuts the scheme from the rest, which suits search, since `https` is noise and
/// `doc.traefik.io/traefik` is the part worth matching.
#[derive(Clone, Copy, Debug, Default)]
struct CodeAwareTokenizer;

impl Tokenizer for CodeAwareTokenizer {
    type TokenStream<'a> = CodeAwareTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeAwareTokenStream<'a> {
        CodeAwareTokenStream {
            text,
            cursor: 0,
            next_position: 0,
            pending: Vec::with_capacity(Level::ALL.len()),
            token: Token::default(),
        }
    }
}

/// One level of structure inside a run, outermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// `docs/ops.md` → `docs`, `ops.md`.
    Slash,
    /// `ops.md` → `ops`, `md`; `v3.0` → `v3`, `0`.
    Dot,
    /// `my-router` → `my`, `router`; `api_key` → `api`, `key`.
    Dash,
    /// `HTTPRouter` → `HTTP`, `Router`; `ipv6` → `ipv`, `6`.
    Case,
}

impl Level {
    const ALL: [Level; 4] = [Level::Slash, Level::Dot, Level::Dash, Level::Case];

    fn deeper(self) -> Option<Level> {
        match self {
            Level::Slash => Some(Level::Dot),
            Level::Dot => Some(Level::Dash),
            Level::Dash => Some(Level::Case),
            Level::Case => None,
        }
    }

    /// Whether `byte` separates parts at this level. Separators are ASCII, so a byte search
    /// for them never lands inside a multi-byte character.
    fn is_separator(self, byte: u8) -> bool {
        match self {
            Level::Slash => byte == b'/',
            Level::Dot => byte == b'.',
            Level::Dash => byte == b'-' || byte == b'_',
            Level::Case => false,
        }
    }

    /// The end of the part of `text[start..end]` that begins at `start`.
    fn part_end(self, text: &str, start: usize, end: usize) -> usize {
        if self == Level::Case {
            return start + case_part_len(&text[start..end]);
        }
        text.as_bytes()[start..end]
            .iter()
            .position(|&byte| self.is_separator(byte))
            .map_or(end, |len| start + len)
    }

    /// Bytes between one part and the next: the separator, or nothing for case boundaries.
    fn gap(self) -> usize {
        match self {
            Level::Case => 0,
            _ => 1,
        }
    }
}

/// The parts of `start..end` at `level` still to be emitted.
#[derive(Clone, Copy, Debug)]
struct Frame {
    level: Level,
    next: usize,
    end: usize,
}

/// The token stream of [`CodeAwareTokenizer`].
///
/// It walks each run's parts depth first with a stack at most four frames deep, and never
/// collects a run's parts in a list, so a pathological multi-megabyte run costs time linear in
/// its length and no extra memory.
struct CodeAwareTokenStream<'a> {
    text: &'a str,
    /// Where the search for the next run starts.
    cursor: usize,
    /// The position the next run will take.
    next_position: usize,
    /// Parts of the current run still to be emitted, innermost level last.
    pending: Vec<Frame>,
    token: Token,
}

impl CodeAwareTokenStream<'_> {
    /// Finds the next run at or after the cursor, and moves the cursor past it.
    fn next_run(&mut self) -> Option<(usize, usize)> {
        let text = self.text;
        let (start, first) = text[self.cursor..]
            .char_indices()
            .map(|(offset, c)| (self.cursor + offset, c))
            .find(|&(_, c)| is_word_char(c))?;
        let mut end = start + first.len_utf8();
        // The last word character, skipping marks: an apostrophe only joins letters.
        let mut last_word = first;
        while let Some(c) = char_at(text, end) {
            if is_word_char(c) {
                last_word = c;
                end += c.len_utf8();
            } else if is_mark(c) {
                end += c.len_utf8();
            } else {
                // A joiner counts only when a word character follows it.
                let after = end + c.len_utf8();
                match char_at(text, after) {
                    Some(next) if joins(last_word, c, next) => {
                        last_word = next;
                        end = after + next.len_utf8();
                    }
                    _ => break,
                }
            }
        }
        self.cursor = end;
        Some((start, end))
    }

    /// Queues the parts of `start..end` at the outermost level, from `level` inward, that
    /// splits it. A level that leaves the range whole is skipped rather than emitting the
    /// same range again.
    fn descend(&mut self, start: usize, end: usize, level: Level) {
        let mut level = Some(level);
        while let Some(current) = level {
            if current.part_end(self.text, start, end) < end {
                self.pending.push(Frame { level: current, next: start, end });
                return;
            }
            level = current.deeper();
        }
    }

    /// The next queued part that is short enough to index, queueing its own parts first.
    fn next_part(&mut self) -> Option<(usize, usize)> {
        while let Some(frame) = self.pending.last_mut() {
            if frame.next >= frame.end {
                self.pending.pop();
                continue;
            }
            let level = frame.level;
            let start = frame.next;
            let end = level.part_end(self.text, start, frame.end);
            frame.next = end + level.gap();
            if let Some(deeper) = level.deeper() {
                self.descend(start, end, deeper);
            }
            if end - start <= MAX_TERM_BYTES {
                return Some((start, end));
            }
        }
        None
    }

    fn set_token(&mut self, start: usize, end: usize) {
        let slice = &self.text[start..end];
        self.token.text.clear();
        if slice.contains('\u{2019}') {
            // The stemmer knows the ASCII apostrophe only: `user’s` must meet `user's`.
            self.token.text.push_str(&slice.replace('\u{2019}', "'"));
        } else {
            self.token.text.push_str(slice);
        }
        self.token.offset_from = start;
        self.token.offset_to = end;
        self.token.position = self.next_position - 1;
        self.token.position_length = 1;
    }
}

impl TokenStream for CodeAwareTokenStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            if let Some((start, end)) = self.next_part() {
                self.set_token(start, end);
                return true;
            }
            let Some((start, end)) = self.next_run() else {
                return false;
            };
            // Every run takes one position, shared by all its parts, even a run too long to
            // index whole: the words around it keep their distance either way.
            self.next_position += 1;
            self.descend(start, end, Level::Slash);
            if end - start <= MAX_TERM_BYTES {
                self.set_token(start, end);
                return true;
            }
        }
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

fn char_at(text: &str, offset: usize) -> Option<char> {
    text.get(offset..)?.chars().next()
}

/// Letters and digits of any script start and continue a run.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// Characters that continue a run but never start one: combining marks (a decomposed `é`),
/// and the viramas, nuktas and tone marks of Indic and Thai scripts, which the standard
/// library does not count as alphanumeric. Unassigned code points in these blocks are
/// included too; they do not occur in real text.
fn is_mark(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}'
        | '\u{3099}'..='\u{309A}')
        || (matches!(c, '\u{0900}'..='\u{0EFF}')
            && !c.is_alphanumeric()
            // Danda, double danda, abbreviation sign, Sinhala kunddaliya, the baht sign and
            // Thai punctuation are separators, not marks.
            && !matches!(
                c,
                '\u{0964}' | '\u{0965}' | '\u{0970}' | '\u{0DF4}' | '\u{0E3F}' | '\u{0E4F}'
                    | '\u{0E5A}' | '\u{0E5B}'
            ))
}

/// Whether `joiner`, between `before` and `after`, keeps a run going.
fn joins(before: char, joiner: char, after: char) -> bool {
    match joiner {
        '/' | '.' | '-' | '_' => is_word_char(after),
        // Apostrophes join letters only, so `'quoted'` words and `80's` split as expected.
        '\'' | '\u{2019}' => before.is_alphabetic() && after.is_alphabetic(),
        // Zero-width (non-)joiners shape Persian and Indic words from the inside.
        '\u{200C}' | '\u{200D}' => is_word_char(after),
        _ => false,
    }
}

/// How a character takes part in case and letter/digit splitting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CharClass {
    Upper,
    Lower,
    /// Letters of scripts without case: CJK, Arabic, Hebrew, Thai, Devanagari.
    Caseless,
    Digit,
    /// Marks and inner joiners: they belong to whatever precedes them.
    Inner,
}

impl CharClass {
    fn of(c: char) -> CharClass {
        if c.is_uppercase() {
            CharClass::Upper
        } else if c.is_lowercase() {
            CharClass::Lower
        } else if c.is_alphabetic() {
            CharClass::Caseless
        } else if c.is_numeric() {
            CharClass::Digit
        } else {
            CharClass::Inner
        }
    }

    fn is_letter(self) -> bool {
        matches!(self, CharClass::Upper | CharClass::Lower | CharClass::Caseless)
    }

    fn is_cased(self) -> bool {
        matches!(self, CharClass::Upper | CharClass::Lower)
    }
}

/// The byte length of the first case part of `text`, a run without separators.
///
/// Boundaries:
/// - lower → upper: `source|Criterion`, `mac|OS`;
/// - inside capitals, before the capital that starts a lowercase word of two letters or
///   more: `HTTP|Router`, `XML|Http|Request`; a single trailing lowercase letter is a plural
///   or a suffix, not a word, so `URLs`, `APIs` and `IPv6` keep their capitals together;
/// - between a letter run of two letters or more and digits: `ipv|6`, `sha|256`,
///   `python|3`, `2|fa`; a single letter stays with its digits, so `v3`, `s3`, `k8s`,
///   `i18n` and `x86` are not cut into letter noise;
/// - between cased and caseless scripts: `日本|Tokyo`.
fn case_part_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    let Some((_, first)) = chars.next() else {
        return 0;
    };
    let mut prev = CharClass::of(first);
    // Letters since the last digit or part start, for the letter/digit rule.
    let mut letters = usize::from(prev.is_letter());
    while let Some((offset, c)) = chars.next() {
        let class = CharClass::of(c);
        if class == CharClass::Inner {
            continue;
        }
        let mut ahead = chars.clone().map(|(_, c)| CharClass::of(c));
        let boundary = match (prev, class) {
            (CharClass::Lower, CharClass::Upper) => true,
            (CharClass::Upper, CharClass::Upper) => {
                ahead.next() == Some(CharClass::Lower) && ahead.next() == Some(CharClass::Lower)
            }
            (CharClass::Digit, next) if next.is_letter() => ahead.next().is_some_and(CharClass::is_letter),
            (before, CharClass::Digit) if before.is_letter() => letters >= 2,
            (before, next) if before.is_letter() && next.is_letter() => before.is_cased() != next.is_cased(),
            _ => false,
        };
        if boundary {
            return offset;
        }
        letters = if class.is_letter() { letters + 1 } else { 0 };
        prev = class;
    }
    text.len()
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

    use super::*;

    /// The raw tokenizer's output, before any filter: (text, position, offset_from, offset_to).
    fn raw_tokens(text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut tokenizer = CodeAwareTokenizer;
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

    /// The full analyzer's terms, duplicates kept, in order.
    fn analyzed(text: &str) -> Vec<String> {
        let mut analyzer = text_analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut terms = Vec::new();
        while let Some(token) = stream.next() {
            terms.push(token.text.clone());
        }
        terms
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
        assert_eq!(analyzed("Straße"), ["straße"]);
        // A decomposed `é` keeps its combining accent.
        assert_eq!(raw("cafe\u{301} au lait"), ["cafe\u{301}", "au", "lait"]);
        // CJK runs are one token each; punctuation separates them.
        assert_eq!(raw("日本語のテキスト。検索"), ["日本語のテキスト", "検索"]);
        assert_eq!(raw("日本Tokyo"), ["日本Tokyo", "日本", "Tokyo"]);
        // Devanagari viramas do not cut a word.
        assert_eq!(raw("क्षत्रिय"), ["क्षत्रिय"]);
        // Emoji separate.
        assert_eq!(raw("deploy🚀now"), ["deploy", "now"]);
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
            // The run is too long to index whole; only its parts (if any) are indexed.
            assert!(count <= input.len() / 2, "{count} tokens");
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
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(TEXT_ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let text = schema.add_text_field("text", TextOptions::default().set_indexing_options(indexing));
        let name = schema.add_text_field("name", STRING | STORED);
        let index = Index::create_in_ram(schema.build());
        register(&index);
        let mut writer = index.writer(15_000_000).expect("writer");
        for (doc_name, body) in [
            ("camel", "Set `sourceCriterion` to pick the IP strategy."),
            ("spaced", "The source criterion decides which address counts."),
            ("other", "Routers forward requests to services."),
        ] {
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
            let mut tokenizer = CodeAwareTokenizer;
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
