//! The code-aware tokenizer: identifier-like runs whole and by their parts, runs of CJK
//! text as overlapping character pairs (see [`super::cjk`]), and runs of Thai, Lao, Khmer
//! and Myanmar text as their words (see [`super::unspaced`]).

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use super::MAX_TERM_BYTES;
use super::{cjk, unspaced};

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
pub(super) struct CodeAwareTokenizer {
    /// Whether each character of a CJK run is emitted too, besides the pairs (see
    /// [`cjk::Pieces`]): documents have them, queries do not.
    pub(super) cjk_unigrams: bool,
}

impl Tokenizer for CodeAwareTokenizer {
    type TokenStream<'a> = CodeAwareTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeAwareTokenStream<'a> {
        CodeAwareTokenStream {
            text,
            cjk_unigrams: self.cjk_unigrams,
            cursor: 0,
            next_position: 0,
            pending: Vec::with_capacity(Level::ALL.len()),
            cjk: cjk::Pieces::default(),
            words: Vec::new(),
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
pub(super) struct CodeAwareTokenStream<'a> {
    text: &'a str,
    cjk_unigrams: bool,
    /// Where the search for the next run starts.
    cursor: usize,
    /// The position the next run will take.
    next_position: usize,
    /// Parts of the current run still to be emitted, innermost level last.
    pending: Vec<Frame>,
    /// Pieces of the current CJK run still to be emitted.
    cjk: cjk::Pieces,
    /// Words of the current Thai, Lao, Khmer or Myanmar run still to be emitted, last first.
    words: Vec<(usize, usize)>,
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
        if cjk::is_cjk(first) {
            // A CJK run holds CJK letters and their marks only: a Latin name written
            // against it (`使用v-model指令`) is a run of its own, split as code.
            while let Some(c) = char_at(text, end).filter(|&c| cjk::is_cjk(c) || is_mark(c)) {
                end += c.len_utf8();
            }
            self.cursor = end;
            return Some((start, end));
        }
        if unspaced::is_unspaced(first) {
            // Likewise, a run of Thai (Lao, Khmer, Myanmar) holds that text only.
            while let Some(c) = char_at(text, end).filter(|&c| unspaced::is_unspaced(c) || is_mark(c)) {
                end += c.len_utf8();
            }
            self.cursor = end;
            return Some((start, end));
        }
        // The last word character, skipping marks: an apostrophe only joins letters.
        let mut last_word = first;
        while let Some(c) = char_at(text, end).filter(|&c| !in_own_run(c)) {
            if is_word_char(c) {
                last_word = c;
                end += c.len_utf8();
            } else if is_mark(c) {
                end += c.len_utf8();
            } else {
                // A joiner counts only when a word character follows it.
                let after = end + c.len_utf8();
                match char_at(text, after) {
                    Some(next) if joins(last_word, c, next) && !in_own_run(next) => {
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
            if let Some((start, end, step)) = self.cjk.next(self.text) {
                // Each piece of a CJK run is a word of its own and takes the next position
                // (a unigram emitted with the pair that starts at it shares its position).
                self.next_position += usize::from(step);
                self.set_token(start, end);
                return true;
            }
            if let Some((start, end)) = self.words.pop() {
                // Each word of a Thai run takes a position of its own, as a spaced word does.
                self.next_position += 1;
                if end - start <= MAX_TERM_BYTES {
                    self.set_token(start, end);
                    return true;
                }
                continue;
            }
            let Some((start, end)) = self.next_run() else {
                return false;
            };
            let first = char_at(self.text, start);
            if first.is_some_and(cjk::is_cjk) {
                self.cjk = cjk::Pieces::of(self.text, start, end, self.cjk_unigrams);
                continue;
            }
            if first.is_some_and(unspaced::is_unspaced) {
                self.words = unspaced::words(self.text, start, end);
                self.words.reverse();
                continue;
            }
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

/// Whether `c` belongs to a script whose runs are cut apart from everything else: CJK, and
/// Thai, Lao, Khmer and Myanmar. A Latin name written against such text is a run of its own.
fn in_own_run(c: char) -> bool {
    // Asked of every character of every Latin run: ASCII settles it at once.
    !c.is_ascii() && (cjk::is_cjk(c) || unspaced::is_unspaced(c))
}

/// Characters that continue a run but never start one: combining marks (a decomposed `é`),
/// Hebrew's points and cantillation marks, and the viramas, nuktas and tone marks of Indic and Thai scripts, which the standard
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
        || super::hebrew::is_point(c)
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
