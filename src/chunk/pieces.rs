//! cl100k token counts without tiktoken's backtracking regex or its tokenizer: the
//! tokenizer's pre-split is run by the `regex` crate's automaton, and each piece is looked up
//! in cl100k's table of tokens (merged pair by pair, lowest rank first, as tiktoken's
//! byte-pair merge does, when it is not one token). The count is the one tiktoken gives,
//! for every input; the pre-split was most of the cost of indexing.
//!
//! The table is written by the build script from tiktoken's own, in a form that is looked
//! up in place: building tiktoken's tokenizer took about 45 ms of every process that
//! counted a token, more than the rest of a one-file update's counting, and its map of
//! ranks another 30; the table's map is built in about 3.

use std::sync::OnceLock;

use regex::Regex;
use rustc_hash::FxHashMap;

/// cl100k's ordinary tokens in rank order, each as its length (u16, little-endian; 0 for a
/// rank without a token) and its bytes, as `build.rs` wrote them from tiktoken's table.
static TOKEN_TABLE: &[u8] = include_bytes!(env!("SITUATE_CL100K_TOKENS"));

/// cl100k's pre-split pattern as the `regex` crate takes it. Its possessive quantifiers
/// change nothing here (what follows each one can never match what it gave back), so they
/// are plain; its `\s+(?!\S)` needs a look-ahead, which [`each_piece`] applies to the last
/// alternative, a plain `\s+`, by hand.
const PATTERN: &str =
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+";

/// A token's rank: lower ranks merge first.
type Rank = u32;

/// Every ordinary cl100k token, by its bytes.
type Ranks = FxHashMap<&'static [u8], Rank>;

struct Counter {
    split: Regex,
    ranks: Ranks,
}

static COUNTER: OnceLock<Counter> = OnceLock::new();

fn counter() -> &'static Counter {
    COUNTER.get_or_init(|| Counter {
        split: Regex::new(PATTERN).expect("the pre-split pattern is valid"),
        ranks: ranks_of(TOKEN_TABLE),
    })
}

/// The map of a token table's tokens to their ranks, borrowing the table's bytes.
fn ranks_of(table: &'static [u8]) -> Ranks {
    let mut ranks = Ranks::with_capacity_and_hasher(table.len() / 8, Default::default());
    let mut at = 0;
    let mut rank: Rank = 0;
    while let Some(len) = table.get(at..at + 2) {
        let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
        let Some(token) = table.get(at + 2..at + 2 + len) else { break };
        if !token.is_empty() {
            ranks.insert(token, rank);
        }
        at += 2 + len;
        rank += 1;
    }
    ranks
}

/// The longest piece merged at once. The merge takes time quadratic in a piece's length,
/// and a piece is a word but for a run that the pre-split never cuts (a line of one
/// repeated letter, a long hash): such a run is merged a part of this length at a time, so
/// its tokens are close to tiktoken's rather than exact, and a megabyte of `x` is indexed
/// in about 2 s instead of 6–9 s in parts of 8 kB.
const MERGE_BYTES: usize = 1024;

/// The parts of a piece that are merged one at a time: at most [`MERGE_BYTES`] each, and
/// cut between two characters, never inside one (a piece is text, so its characters are
/// whole): a character cut in two would be merged as two stray halves of a few tokens.
fn merge_parts(piece: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = piece;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut cut = rest.len().min(MERGE_BYTES);
        // A continuation byte (0b10xx_xxxx) is inside a character; a character is at most
        // four bytes, so its start lies at most three bytes back.
        while cut < rest.len() && cut > MERGE_BYTES - 4 && rest[cut] & 0xC0 == 0x80 {
            cut -= 1;
        }
        let (part, tail) = rest.split_at(cut);
        rest = tail;
        Some(part)
    })
}

/// The number of cl100k tokens of `text`, as tiktoken's `encode_ordinary` makes them
/// (close for a piece longer than [`MERGE_BYTES`]).
pub(crate) fn count(text: &str) -> usize {
    let counter = counter();
    let mut total = 0;
    each_piece(counter, text, |piece| {
        for part in merge_parts(piece) {
            total += if counter.ranks.contains_key(part) { 1 } else { merge(part, &counter.ranks).len() - 1 };
        }
    });
    total
}

/// Adds to `ends` the byte offset at which each token of `text` ends, shifted by `base`
/// (the tokens tiktoken's `encode_ordinary` makes, in order; close for a piece longer than
/// [`MERGE_BYTES`]).
pub(crate) fn push_token_ends(text: &str, base: usize, ends: &mut Vec<usize>) {
    let counter = counter();
    let mut at = base;
    each_piece(counter, text, |piece| {
        for part in merge_parts(piece) {
            if counter.ranks.contains_key(part) {
                ends.push(at + part.len());
            } else {
                ends.extend(merge(part, &counter.ranks)[1..].iter().map(|end| at + end));
            }
            at += part.len();
        }
    });
}

/// Calls `visit` with each piece of cl100k's pre-split of `text`, in order; together they
/// tile the text.
fn each_piece(counter: &Counter, text: &str, mut visit: impl FnMut(&[u8])) {
    let bytes = text.as_bytes();
    let mut at = 0;
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
        visit(&bytes[start..end]);
        at = end;
    }
}

/// Where the tokens of `piece` (at least two bytes, not itself a token) start, followed by
/// its length. As in tiktoken, the piece starts as single bytes, and the adjacent pair that
/// forms the token of lowest rank (the first such pair on a tie) is merged until no pair
/// forms a token.
fn merge(piece: &[u8], ranks: &Ranks) -> Vec<usize> {
    let rank_of = |bytes: &[u8]| ranks.get(bytes).copied().unwrap_or(Rank::MAX);
    // Each part's start, and the rank of the token it would form with the part after it.
    let mut parts: Vec<(usize, Rank)> = Vec::with_capacity(piece.len() + 1);
    parts.extend((0..piece.len() - 1).map(|i| (i, rank_of(&piece[i..i + 2]))));
    parts.push((piece.len() - 1, Rank::MAX));
    parts.push((piece.len(), Rank::MAX));
    // The rank of the part at `i` merged with the one after it, once that one's own
    // successor (at `i + 2`, before the removal) is gone.
    let joined_rank = |parts: &[(usize, Rank)], i: usize| {
        if i + 3 < parts.len() { rank_of(&piece[parts[i].0..parts[i + 3].0]) } else { Rank::MAX }
    };
    loop {
        let mut lowest = (Rank::MAX, 0);
        for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
            if rank < lowest.0 {
                lowest = (rank, i);
            }
        }
        let (rank, i) = lowest;
        if rank == Rank::MAX {
            break;
        }
        if i > 0 {
            parts[i - 1].1 = joined_rank(&parts, i - 1);
        }
        parts[i].1 = joined_rank(&parts, i);
        parts.remove(i + 1);
    }
    parts.into_iter().map(|(start, _)| start).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn tiktoken(text: &str) -> usize {
        tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
    }

    /// Where each of tiktoken's tokens of `text` ends.
    fn tiktoken_ends(text: &str) -> Vec<usize> {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        let mut end = 0;
        let tokens = bpe.encode_ordinary(text);
        tokens
            .iter()
            .map(|t| {
                end += bpe.decode_bytes(&[*t]).unwrap().len();
                end
            })
            .collect()
    }

    fn ends(text: &str, base: usize) -> Vec<usize> {
        let mut ends = Vec::new();
        push_token_ends(text, base, &mut ends);
        ends
    }

    #[test]
    fn the_token_table_holds_tiktokens_tokens_in_rank_order() {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        let ranks = ranks_of(TOKEN_TABLE);
        assert_eq!(ranks.len(), 100_256);
        for rank in 0..100_256u32 {
            let token = bpe.decode_bytes(&[rank]).unwrap();
            assert_eq!(ranks.get(token.as_slice()), Some(&rank), "rank {rank}");
        }
        // A table cut short keeps the tokens before the cut.
        let cut: &'static [u8] = Box::leak(TOKEN_TABLE[..TOKEN_TABLE.len() / 2].to_vec().into_boxed_slice());
        let some = ranks_of(cut);
        assert!(some.len() > 1000 && some.len() < 100_256);
        assert!(some.iter().all(|(token, rank)| ranks.get(token) == Some(rank)));
    }

    #[test]
    fn long_pieces_merge_as_tiktokens_do() {
        for text in [
            "x".repeat(700),
            "ab".repeat(300),
            "0123456789abcdef".repeat(40),
            "https://example.com/a/very/long/path?with=query&and=more#fragment".repeat(8),
            "😀".repeat(60),
        ] {
            assert_eq!(count(&text), tiktoken(&text), "{text:?}");
            assert_eq!(ends(&text, 0), tiktoken_ends(&text), "{text:?}");
        }
    }

    #[test]
    fn a_run_longer_than_a_merge_is_counted_closely_and_cut_between_its_parts() {
        // The last: a note of a run of punctuation and replacement characters, whose chunk
        // was counted 234 tokens against tiktoken's 230 when a part could end inside a
        // character (found by the chunk fuzz target; its input, after four bytes of
        // settings, is a seed of it). Now 231.
        let seed = include_bytes!("../../fuzz/corpus/chunk/long-run-of-replacement-characters");
        let found = String::from_utf8_lossy(&seed[4..]).trim().to_string();
        for text in ["x".repeat(20_000), "=".repeat(5_000), "所有权".repeat(1_000), found] {
            let (ours, exact) = (count(&text), tiktoken(&text));
            assert!(ours.abs_diff(exact) * 100 <= exact, "{ours} against {exact}");
            let ends = ends(&text, 0);
            assert_eq!(ends.len(), ours);
            assert!(ends.windows(2).all(|w| w[0] < w[1]) && ends.last() == Some(&text.len()));
            // Every part of a merge ends where a token does, between two characters.
            let mut at = 0;
            for part in merge_parts(text.as_bytes()) {
                at += part.len();
                assert!(part.len() <= MERGE_BYTES && text.is_char_boundary(at) && ends.contains(&at));
            }
        }
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
            assert_eq!(count(text), tiktoken(text), "{text:?}");
            assert_eq!(ends(text, 0), tiktoken_ends(text), "{text:?}");
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
                    assert_eq!(count(&text), tiktoken(&text), "{}", path.display());
                    assert_eq!(ends(&text, 0), tiktoken_ends(&text), "{}", path.display());
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
            prop_assert_eq!(count(&text), tiktoken(&text));
            let shifted: Vec<usize> = tiktoken_ends(&text).iter().map(|e| e + 5).collect();
            prop_assert_eq!(ends(&text, 5), shifted);
        }
    }
}
