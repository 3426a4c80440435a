//! Sign bits: one bit per dimension of each stored vector (set where the component is
//! positive), kept in memory so that a search over a large vector set reads few bytes from
//! disk. A first pass scores every row's bits against the query and keeps a few hundred
//! candidates; only those rows are then read and compared exactly.
//!
//! The query is not reduced to bits: each of its components is kept at four bits, so a
//! row's first-pass score is the query's components summed with the row's signs, not a
//! count of agreeing signs. At 256 dimensions that is 32 bytes a row, an eighth of the
//! int8 row, and twenty `popcnt` instructions.

use rayon::prelude::*;

use super::vector_scan::TopK;

/// The sign bits of a set of rows, by row number: bit `n` of a row is set where its
/// component `n` is positive. (Taken about the rows' mean instead, they found fewer of the
/// exact neighbours of the static model's vectors, not more: a component that varies
/// little about a large mean then counts as much as one that varies a lot.)
#[derive(Clone, Default)]
pub(super) struct SignBits {
    /// 64-bit words per row.
    words: usize,
    bits: Vec<u64>,
}

impl SignBits {
    pub(super) fn new(dims: usize) -> SignBits {
        SignBits { words: dims.div_ceil(64), bits: Vec::new() }
    }

    /// An empty set of signs of rows of the same dimensions.
    pub(super) fn empty_like(&self) -> SignBits {
        SignBits { words: self.words, bits: Vec::new() }
    }

    /// Appends the signs of the next row.
    pub(super) fn push(&mut self, bytes: &[i8]) {
        for word in bytes.chunks(64) {
            self.bits.push(positive_mask(word));
        }
        // Rows shorter than the set's dimensions never occur; this keeps rows aligned if
        // one did.
        self.bits.resize(self.bits.len().next_multiple_of(self.words.max(1)), 0);
    }

    /// Appends a row's signs as its words (as a sidecar stores them).
    pub(super) fn push_words(&mut self, words: impl Iterator<Item = u64>) {
        let start = self.bits.len();
        self.bits.extend(words.take(self.words));
        self.bits.resize(start + self.words, 0);
    }

    /// Moves `other`'s rows after these.
    pub(super) fn append(&mut self, other: &mut SignBits) {
        self.bits.append(&mut other.bits);
    }

    /// Appends a row's signs as another set holds them.
    pub(super) fn push_from(&mut self, other: &SignBits, row: u32) {
        self.bits.extend_from_slice(other.row(row));
    }

    /// Rows held.
    #[cfg(test)]
    fn rows(&self) -> usize {
        self.bits.len().checked_div(self.words).unwrap_or(0)
    }

    #[inline(always)]
    pub(super) fn row(&self, row: u32) -> &[u64] {
        let start = row as usize * self.words;
        &self.bits[start..start + self.words]
    }

    /// Bytes held in memory.
    pub(super) fn bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// Bit `n` set where `bytes[n]` is positive (up to 64 bytes). Opening a large set finds the
/// signs of every row, so this takes 16 bytes an instruction where the processor allows.
#[inline(always)]
fn positive_mask(bytes: &[i8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_setzero_si128,
        };
        let mut mask = 0u64;
        let mut lanes = bytes.chunks_exact(16);
        for (n, lane) in lanes.by_ref().enumerate() {
            // SAFETY: SSE2 is part of every x86_64 processor; the load reads the 16 bytes
            // of `lane` and needs no alignment.
            let bits = unsafe {
                let v = _mm_loadu_si128(lane.as_ptr().cast::<__m128i>());
                _mm_movemask_epi8(_mm_cmpgt_epi8(v, _mm_setzero_si128())) as u32 as u64
            };
            mask |= bits << (16 * n);
        }
        let done = bytes.len() - lanes.remainder().len();
        for (n, b) in lanes.remainder().iter().enumerate() {
            mask |= u64::from(*b > 0) << (done + n);
        }
        mask
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        bytes.iter().enumerate().fold(0u64, |mask, (n, b)| mask | (u64::from(*b > 0) << n))
    }
}

/// The query at four bits a component, as four bit planes: component `n` is about
/// `low + step × value`, where `value`'s bit `p` is bit `n` of plane `p`.
pub(super) struct QueryPlanes {
    /// The four planes' words side by side, word by word, as a row's words are read.
    planes: Vec<[u64; 4]>,
    /// `low / step`: how much a set bit of the row adds besides the planes' sum.
    offset: f32,
}

impl QueryPlanes {
    pub(super) fn new(query: &[i8]) -> QueryPlanes {
        let low = query.iter().copied().min().map_or(0, i32::from);
        let high = query.iter().copied().max().map_or(0, i32::from);
        let step = ((high - low) as f32 / 15.0).max(f32::MIN_POSITIVE);
        let words = query.len().div_ceil(64);
        let mut planes = vec![[0u64; 4]; words];
        for (n, q) in query.iter().enumerate() {
            let value = ((i32::from(*q) - low) as f32 / step).round().clamp(0.0, 15.0) as u32;
            for (p, plane) in planes[n / 64].iter_mut().enumerate() {
                if value & (1 << p) != 0 {
                    *plane |= 1 << (n % 64);
                }
            }
        }
        QueryPlanes { planes, offset: low as f32 / step }
    }

    /// The first-pass score of a row: the query's components summed over the row's
    /// positive signs, in units of `step`. The sum over the negative ones is the query's
    /// total less this, so the order is that of the query against the row's signs.
    #[inline(always)]
    fn score(&self, row: &[u64]) -> f32 {
        let mut planes = 0u32;
        let mut set = 0u32;
        for (bits, p) in row.iter().zip(&self.planes) {
            set += bits.count_ones();
            planes += (p[0] & bits).count_ones()
                + ((p[1] & bits).count_ones() << 1)
                + ((p[2] & bits).count_ones() << 2)
                + ((p[3] & bits).count_ones() << 3);
        }
        planes as f32 + self.offset * set as f32
    }
}

/// The `count` best of `rows` by their first-pass score, as row numbers in ascending order
/// (ties go to the smaller row). Lists longer than `parallel_rows` are split over the rayon
/// pool.
pub(super) fn preselect(
    signs: &SignBits,
    rows: &[u32],
    query: &QueryPlanes,
    count: usize,
    parallel_rows: usize,
) -> Vec<u32> {
    let best_of = |rows: &[u32]| best_rows(signs, rows, query, count);
    let best = if rows.len() > parallel_rows {
        let mut top = TopK::new(count);
        for item in rows.par_chunks(parallel_rows).flat_map_iter(best_of).collect::<Vec<_>>() {
            if top.admits(item.1) {
                top.push(item);
            }
        }
        top.into_sorted()
    } else {
        best_of(rows)
    };
    let mut best: Vec<u32> = best.into_iter().map(|(row, _)| row as u32).collect();
    best.sort_unstable();
    best
}

fn best_rows(signs: &SignBits, rows: &[u32], query: &QueryPlanes, count: usize) -> Vec<(u64, f32)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: only when the processor has `popcnt`.
        return unsafe { best_rows_popcnt(signs, rows, query, count) };
    }
    best_rows_portable(signs, rows, query, count)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn best_rows_popcnt(
    signs: &SignBits,
    rows: &[u32],
    query: &QueryPlanes,
    count: usize,
) -> Vec<(u64, f32)> {
    best_rows_portable(signs, rows, query, count)
}

#[inline(always)]
fn best_rows_portable(signs: &SignBits, rows: &[u32], query: &QueryPlanes, count: usize) -> Vec<(u64, f32)> {
    let mut top = TopK::new(count);
    for &row in rows {
        let score = query.score(signs.row(row));
        if top.admits(score) {
            top.push((u64::from(row), score));
        }
    }
    top.into_sorted()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_pass_orders_rows_as_the_query_against_their_signs() {
        let dims = 70;
        let query: Vec<i8> = (0..dims).map(|n| ((n * 37 % 255) as i32 - 127) as i8).collect();
        let mut seed = 3u64;
        let mut rows = Vec::new();
        let mut signs = SignBits::new(dims);
        for _ in 0..200 {
            let row: Vec<i8> = (0..dims)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((seed >> 56) as i32 - 128) as i8
                })
                .collect();
            signs.push(&row);
            rows.push(row);
        }
        assert_eq!(signs.rows(), 200);
        let planes = QueryPlanes::new(&query);
        // The exact value of the first pass: the query summed with each row's signs.
        let exact: Vec<i32> = rows
            .iter()
            .map(|r| {
                r.iter().zip(&query).map(|(x, q)| if *x > 0 { i32::from(*q) } else { -i32::from(*q) }).sum()
            })
            .collect();
        let all: Vec<u32> = (0..200).collect();
        let best = preselect(&signs, &all, &planes, 20, 64);
        assert_eq!(best, preselect(&signs, &all, &planes, 20, 1_000), "split or not");
        assert_eq!(best.len(), 20);
        assert!(best.windows(2).all(|w| w[0] < w[1]), "row order");
        // Four bits a component cannot keep the exact order, but the true best rows make
        // the list, and no row of the worst half does.
        let mut order: Vec<u32> = all.clone();
        order.sort_by_key(|r| -exact[*r as usize]);
        assert!(order[..5].iter().all(|r| best.contains(r)), "{best:?}");
        assert!(order[100..].iter().all(|r| !best.contains(r)));
    }
}
