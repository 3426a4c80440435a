//! cl100k token counts without tiktoken's backtracking regex: the tokenizer's pre-split is
//! run by the `regex` crate's automaton, and each piece is looked up in the tokenizer's own
//! ranks (merged by tiktoken's byte-pair split when it is not one token). The count is the
//! one tiktoken gives, for every input; the pre-split was most of the cost of indexing.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use regex::Regex;
use rustc_hash::FxHashMap;
use tiktoken_rs::Rank;

/// cl100k's pre-split pattern as the `regex` crate takes it. Its possessive quantifiers
/// change nothing here (what follows each one can never match what it gave back), so they
/// are plain; its `\s+(?!\S)` needs a look-ahead, which [`count`] applies to the last
/// alternative, a plain `\s+`, by hand.
const PATTERN: &str =
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+";

/// Ordinary (not special) cl100k tokens have the ranks below this.
const ORDINARY_RANKS: Rank = 100_256;

/// Text counted by tiktoken itself before the faster counter is built. Building its table
/// costs about what tiktoken's pre-split of this much text does, which an update of a few
/// files never reaches, while indexing a folder passes it in its first files.
const WARM_UP_BYTES: usize = 2 << 20;

struct Counter {
    split: Regex,
    ranks: FxHashMap<Vec<u8>, Rank>,
}

static COUNTER: OnceLock<Counter> = OnceLock::new();

fn counter() -> &'static Counter {
    COUNTER.get_or_init(|| {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        let ranks = (0..ORDINARY_RANKS)
            .filter_map(|rank| bpe.decode_bytes(&[rank]).ok().map(|bytes| (bytes, rank)))
            .collect();
        Counter { split: Regex::new(PATTERN).expect("the pre-split pattern is valid"), ranks }
    })
}

/// The number of cl100k tokens of `text`, as tiktoken's `encode_ordinary` makes them.
pub(crate) fn count(text: &str) -> usize {
    static COUNTED: AtomicUsize = AtomicUsize::new(0);
    if COUNTER.get().is_none() && COUNTED.fetch_add(text.len(), Ordering::Relaxed) < WARM_UP_BYTES {
        return tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len();
    }
    count_by_pieces(text)
}

/// [`count`] through the faster counter, whatever was counted before.
fn count_by_pieces(text: &str) -> usize {
    let counter = counter();
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut total = 0;
    while let Some(found) = counter.split.find_at(text, at) {
        let (start, mut end) = (found.start(), found.end());
        // `\s+(?!\S)`: a run of blanks before a non-blank leaves its last blank to the
        // piece after it (" word"). Only the last alternatives match blanks alone, and of
        // those only `\s+` can end before the text's end without a line break.
        if end < text.len() && !matches!(bytes[end - 1], b'\n' | b'\r') {
            let piece = &text[start..end];
            if piece.chars().all(char::is_whitespace)
                && let Some((last, _)) = piece.char_indices().last()
                && last > 0
            {
                end = start + last;
            }
        }
        let piece = &bytes[start..end];
        total += if counter.ranks.contains_key(piece) {
            1
        } else {
            tiktoken_rs::byte_pair_split(piece, &counter.ranks).len()
        };
        at = end;
    }
    total
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn tiktoken(text: &str) -> usize {
        tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
    }

    #[test]
    fn counts_equal_tiktoken_on_the_pre_splits_corner_cases() {
        for text in [
            "",
            " ",
            "  ",
            "a  b",
            "a   b\n",
            "x \n y",
            "  \n\n  z",
            "tail   ",
            "\t\tindent",
            "it's they'LL we've I'M 'S",
            "ſ 'ſ 'K",
            "12345 1,000,000 ٣٤٥",
            "  123",
            "foo:  -bar",
            " !!!\r\n\r\nnext",
            "naïve café 🙂🙂 x",
            "a\u{00a0}\u{00a0}b \u{3000}中文 本",
            "e\u{0301}\u{0301} combining",
            "Привет,  мир!\n",
            "```rust\nfn main() {\n    println!(\"hi\");\n}\n```",
        ] {
            assert_eq!(count_by_pieces(text), tiktoken(text), "{text:?}");
        }
    }

    #[test]
    fn counts_equal_tiktoken_on_the_fixture_files_and_the_evaluation_corpora() {
        // The evaluation corpora beside the project are read when they are there.
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut stack = vec![manifest.join("tests/data")];
        for corpus in ["traefik-docs", "rust-book-zh", "nodejs-docs"] {
            let dir = manifest.join("../shared/data").join(corpus);
            if dir.is_dir() {
                stack.push(dir);
            }
        }
        let mut checked = 0;
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path) {
                    assert_eq!(count_by_pieces(&text), tiktoken(&text), "{}", path.display());
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "only {checked} files read");
    }

    fn any_text() -> impl Strategy<Value = String> {
        // Blanks of every kind, line breaks, letters and digits of several scripts,
        // apostrophes, punctuation, marks and pictographs, in any order.
        let pieces = prop::sample::select(vec![
            " ", "  ", "\t", "\n", "\r\n", "\r", "\u{a0}", "\u{3000}", "a", "Z", "word", "é", "ſ", "K", "'s",
            "'T", "'ll", "'Re", "'", "1", "22", "4444", "٣", "中", "本文", "ア", "한", "я", "ß", "!", "...",
            "--", "#", "`", "(", ")", ":", "\u{0301}", "🙂", "\u{200d}", "_", "\\", "\"",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn counts_equal_tiktoken_on_any_mix(text in any_text()) {
            prop_assert_eq!(count_by_pieces(&text), tiktoken(&text));
        }
    }
}
