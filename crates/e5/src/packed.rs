//! The data layouts of the quantised products: weights repacked from Q4_0 for SIMD,
//! activations quantised to int8 per block of 32, and the shared output pointer of the
//! parallel tiles. `kernels.rs` (with `kernels_x86.rs`) computes with them.
//!
//! Weights are repacked once, at load, so that the inner loop needs no shuffles: rows are
//! taken 16 at a time (a *group*), and within each block of 32 columns the group's values are
//! stored as 8 *steps* of 4 consecutive columns for each of the 16 rows (64 bytes, one
//! AVX-512 register). A step times one token's 4 activations, broadcast, is one `vpdpbusd`
//! (or `maddubs` on AVX2) giving 16 rows' partial sums side by side, so results need no
//! horizontal reduction and 16 outputs of a token are stored with one write. The 4-bit
//! values are kept unsigned (0..15); the `- 8` of Q4_0 is folded in through each activation
//! block's sum, precomputed as `offset = -8 × sum`.

use std::ops::Range;

use rayon::prelude::*;

use super::format::{Q4_BLOCK_BYTES, QK, f16_to_f32};

/// Rows whose values are interleaved in one step.
pub(super) const GROUP: usize = 16;
/// 4-column steps per block.
pub(super) const STEPS: usize = QK / 4;
/// Rows a tile covers at least: the AVX-512 kernel works on two groups at once.
pub(super) const PANEL: usize = 2 * GROUP;
/// A weight matrix `[rows, cols]` in the repacked 4-bit layout, with its bias.
#[derive(Default)]
pub(super) struct PackedMatrix {
    pub rows: usize,
    pub cols: usize,
    /// `[group][block][step][row in group][4]`, values 0..15.
    pub quants: Vec<u8>,
    /// `[group][block][row in group]`: the Q4_0 block scales.
    pub scales: Vec<f32>,
    pub bias: Vec<f32>,
}

impl PackedMatrix {
    /// Stacks row-major Q4_0 matrices of `cols` columns (for instance Q, K and V, which read
    /// the same input) into one packed matrix. Row counts must be multiples of [`PANEL`].
    #[cfg(test)]
    pub fn from_q4(parts: &[(&[u8], &[f32])], cols: usize) -> Self {
        let row_bytes = cols / QK * Q4_BLOCK_BYTES;
        let source: Vec<&[u8]> = parts
            .iter()
            .flat_map(|(data, bias)| (0..bias.len()).map(|r| &data[r * row_bytes..][..row_bytes]))
            .collect();
        let bias: Vec<f32> = parts.iter().flat_map(|(_, bias)| bias.iter().copied()).collect();
        let mut matrix = PackedMatrix::default();
        matrix.fill_rows(|r| source[r], cols, 0..bias.len(), &bias, (0..0, 1.0), true);
        matrix
    }

    /// Makes this matrix rows `rows` of a larger one whose Q4_0 rows `source` gives and
    /// whose biases are `bias`, reusing its allocations; `scale` multiplies the block scales
    /// of the rows it names (the biases are taken as they are). A short batch repacks one
    /// panel at a time this way, into a buffer that stays in the cache, where the whole
    /// repacked model (21 MB) would first be written to fresh memory. Groups are repacked
    /// in parallel when `parallel`. Row counts must be multiples of [`PANEL`].
    pub fn fill_rows<'a>(
        &mut self,
        source: impl Fn(usize) -> &'a [u8],
        cols: usize,
        rows: Range<usize>,
        bias: &[f32],
        scale: (Range<usize>, f32),
        parallel: bool,
    ) {
        debug_assert!(rows.len().is_multiple_of(PANEL) && cols.is_multiple_of(QK));
        let first = rows.start;
        let rows_of: Vec<&[u8]> = rows.clone().map(source).collect();
        self.rows = rows.len();
        self.cols = cols;
        self.bias.clear();
        self.bias.extend_from_slice(&bias[rows.clone()]);
        self.fill(&rows_of, parallel);
        let (scaled, factor) = scale;
        let start = scaled.start.clamp(first, rows.end) - first;
        let end = scaled.end.clamp(first, rows.end) - first;
        self.scale_block_scales(start..end, factor);
    }

    /// Repacks `source` (one Q4_0 row each, `self.rows` of them) into `quants` and
    /// `scales`, in parallel by groups when `parallel`.
    fn fill(&mut self, source: &[&[u8]], parallel: bool) {
        let (rows, cols) = (self.rows, self.cols);
        let blocks = cols / QK;
        self.quants.resize(rows * cols, 0);
        self.scales.resize(rows * blocks, 0.0);
        let pack = |(g, (gq, gs)): (usize, (&mut [u8], &mut [f32]))| {
            pack_group(&source[g * GROUP..][..GROUP], gq, gs)
        };
        if parallel {
            let quants = self.quants.par_chunks_exact_mut(GROUP * cols);
            quants.zip(self.scales.par_chunks_exact_mut(GROUP * blocks)).enumerate().for_each(pack);
        } else {
            let quants = self.quants.chunks_exact_mut(GROUP * cols);
            quants.zip(self.scales.chunks_exact_mut(GROUP * blocks)).enumerate().for_each(pack);
        }
    }

    pub fn blocks(&self) -> usize {
        self.cols / QK
    }

    /// Multiplies the block scales of rows `rows` by `factor`.
    fn scale_block_scales(&mut self, rows: Range<usize>, factor: f32) {
        let blocks = self.blocks();
        for r in rows {
            let (g, i) = (r / GROUP, r % GROUP);
            for b in 0..blocks {
                self.scales[(g * blocks + b) * GROUP + i] *= factor;
            }
        }
    }
}

/// Repacks one group of 16 Q4_0 rows into its quants `gq` and scales `gs`.
fn pack_group(source: &[&[u8]], gq: &mut [u8], gs: &mut [f32]) {
    let blocks = gs.len() / GROUP;
    for b in 0..blocks {
        for (r, row) in source.iter().enumerate() {
            let block = &row[b * Q4_BLOCK_BYTES..][..Q4_BLOCK_BYTES];
            gs[b * GROUP + r] = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
            // Q4_0: byte j holds value j in its low half and value j + 16 in its high.
            // Unpacked into the block's 32 values in order, then copied to the steps four
            // at a time (the per-value index arithmetic was most of the repacking).
            let nibbles: &[u8; QK / 2] = block[2..].try_into().unwrap();
            let mut values = [0u8; QK];
            for j in 0..QK / 2 {
                values[j] = nibbles[j] & 0x0f;
                values[j + QK / 2] = nibbles[j] >> 4;
            }
            for (step, four) in values.chunks_exact(4).enumerate() {
                let at = ((b * STEPS + step) * GROUP + r) * 4;
                gq[at..at + 4].copy_from_slice(four);
            }
        }
    }
}

/// Rows of activations quantised per block of 32: int8 values, the block's scale, and
/// `-8 ×` the block's sum (the correction for the weights' unsigned storage).
#[derive(Default)]
pub(super) struct Int8Rows {
    pub cols: usize,
    pub values: Vec<i8>,
    pub scales: Vec<f32>,
    pub offsets: Vec<i32>,
}

impl Int8Rows {
    /// Makes room for `rows` rows of `cols` columns, keeping the allocation.
    pub fn reshape(&mut self, rows: usize, cols: usize) {
        self.cols = cols;
        self.values.resize(rows * cols, 0);
        self.scales.resize(rows * cols / QK, 0.0);
        self.offsets.resize(rows * cols / QK, 0);
    }

    /// The rows in parallel chunks of `rows` rows: values, scales and offsets of each chunk.
    pub fn par_row_chunks(
        &mut self,
        rows: usize,
    ) -> impl IndexedParallelIterator<Item = ((&mut [i8], &mut [f32]), &mut [i32])> {
        let (cols, blocks) = (self.cols, self.cols / QK);
        self.values
            .par_chunks_mut(rows * cols)
            .zip(self.scales.par_chunks_mut(rows * blocks))
            .zip(self.offsets.par_chunks_mut(rows * blocks))
    }
}

/// Quantises `x` (whole blocks) to int8 with one scale per block of 32: the largest
/// magnitude maps to ±127, the rest round to nearest, ties to even.
#[inline(always)]
pub(super) fn quantize_row(x: &[f32], values: &mut [i8], scales: &mut [f32], offsets: &mut [i32]) {
    for (((x, q), scale), offset) in
        x.chunks_exact(QK).zip(values.chunks_exact_mut(QK)).zip(scales.iter_mut()).zip(offsets.iter_mut())
    {
        let (d, sum) = quantize_block(x.try_into().unwrap(), q.try_into().unwrap());
        *scale = d;
        *offset = -8 * sum;
    }
}

/// One block of [`quantize_row`]; returns its scale and the sum of its values. Written on
/// fixed-size arrays with a tree reduction so that it compiles to straight vector code.
#[inline(always)]
fn quantize_block(x: &[f32; QK], q: &mut [i8; QK]) -> (f32, i32) {
    // Adding and subtracting 1.5 × 2^23 rounds a float below 2^22 to an integer, ties to
    // even, in two vectorisable instructions.
    const ROUND: f32 = 12_582_912.0;
    const HALF: usize = QK / 2;
    let mut m = [0f32; HALF];
    for j in 0..HALF {
        let (a, b) = (x[j].abs(), x[j + HALF].abs());
        m[j] = if a > b { a } else { b };
    }
    let mut width = HALF / 2;
    while width > 0 {
        for j in 0..width {
            m[j] = if m[j] > m[j + width] { m[j] } else { m[j + width] };
        }
        width /= 2;
    }
    let d = m[0] * (1.0 / 127.0);
    let inv = if m[0] > 0.0 { 127.0 / m[0] } else { 0.0 };
    let mut sum = 0i32;
    for (q, &v) in q.iter_mut().zip(x) {
        // `v × inv + ROUND` lies in ROUND ± 127 (|v × inv| ≤ 127 up to rounding), where the
        // float's low mantissa bits are the rounded integer: integer operations only, no
        // saturating conversion. A non-finite input gives an arbitrary but bounded byte.
        let r = (((v * inv + ROUND).to_bits() as i32) - ROUND.to_bits() as i32) as i8;
        *q = r;
        sum += i32::from(r);
    }
    (d, sum)
}

/// The output matrix shared by the tiles of one product; each tile writes only its own
/// rectangle.
#[derive(Clone, Copy)]
pub(super) struct OutPtr {
    pub ptr: *mut f32,
    /// Floats per output row (token).
    pub stride: usize,
}

// SAFETY: an `OutPtr` is only handed to tiles that write disjoint rectangles of a buffer
// that outlives the parallel loop (see `matmul` and the attention), so no two threads touch
// the same float and none touches it after the buffer is gone.
unsafe impl Send for OutPtr {}
// SAFETY: as for `Send`: shared only among writers of disjoint rectangles.
unsafe impl Sync for OutPtr {}
