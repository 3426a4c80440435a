//! Quantised matrix products, where the encoder spends most of its time: weights in 4-bit
//! blocks times activations quantised to int8 per block of 32, with integer dot products and
//! one float multiply-add per block.
//!
//! Weights are repacked once, at load, so that the inner loop needs no shuffles: rows are
//! taken 16 at a time (a *group*), and within each block of 32 columns the group's values are
//! stored as 8 *steps* of 4 consecutive columns for each of the 16 rows (64 bytes, one
//! AVX-512 register). A step times one token's 4 activations, broadcast, is one `vpdpbusd`
//! (or `maddubs` on AVX2) giving 16 rows' partial sums side by side, so results need no
//! horizontal reduction and 16 outputs of a token are stored with one write. The 4-bit
//! values are kept unsigned (0..15); the `- 8` of Q4_0 is folded in through each activation
//! block's sum, precomputed as `offset = -8 × sum`.
//!
//! Work is split over rayon's threads by tiles of tokens × rows, each writing a disjoint
//! rectangle of the output. This file holds the layout, the quantiser, the tiling and the
//! portable kernel that every SIMD kernel (`kernels_x86.rs`) is tested against.

use std::ops::Range;

use rayon::prelude::*;

use super::Isa;
use super::format::{Q4_BLOCK_BYTES, QK, f16_to_f32};

/// Rows whose values are interleaved in one step.
pub(super) const GROUP: usize = 16;
/// 4-column steps per block.
pub(super) const STEPS: usize = QK / 4;
/// Rows a tile covers at least: the AVX-512 kernel works on two groups at once.
pub(super) const PANEL: usize = 2 * GROUP;
/// Tokens per tile when the rows are not split: a multiple of every kernel's token count,
/// small enough that a tile's activations stay in the core's L2 cache.
const TOKEN_TILE: usize = 48;

/// A weight matrix `[rows, cols]` in the repacked 4-bit layout, with its bias.
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
    pub fn from_q4(parts: &[(&[u8], &[f32])], cols: usize) -> Self {
        let blocks = cols / QK;
        let row_bytes = blocks * Q4_BLOCK_BYTES;
        let rows: usize = parts.iter().map(|(_, bias)| bias.len()).sum();
        debug_assert!(rows.is_multiple_of(PANEL) && cols.is_multiple_of(QK));
        let source: Vec<&[u8]> = parts
            .iter()
            .flat_map(|(data, bias)| (0..bias.len()).map(|r| &data[r * row_bytes..][..row_bytes]))
            .collect();
        let mut quants = vec![0u8; rows * cols];
        let mut scales = vec![0f32; rows * blocks];
        quants
            .par_chunks_exact_mut(GROUP * cols)
            .zip(scales.par_chunks_exact_mut(GROUP * blocks))
            .enumerate()
            .for_each(|(g, (gq, gs))| {
                for b in 0..blocks {
                    for r in 0..GROUP {
                        let block = &source[g * GROUP + r][b * Q4_BLOCK_BYTES..][..Q4_BLOCK_BYTES];
                        gs[b * GROUP + r] = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
                        let nibbles = &block[2..];
                        for k in 0..QK {
                            // Q4_0: byte j holds value j in its low half and value j + 16 in its high.
                            let v = if k < QK / 2 { nibbles[k] & 0x0f } else { nibbles[k - QK / 2] >> 4 };
                            gq[((b * STEPS + k / 4) * GROUP + r) * 4 + k % 4] = v;
                        }
                    }
                }
            });
        let bias = parts.iter().flat_map(|(_, bias)| bias.iter().copied()).collect();
        PackedMatrix { rows, cols, quants, scales, bias }
    }

    pub fn blocks(&self) -> usize {
        self.cols / QK
    }

    /// Multiplies rows `rows` by `factor` (their block scales and biases), exactly for a
    /// power of two.
    pub fn scale_rows(&mut self, rows: Range<usize>, factor: f32) {
        let blocks = self.blocks();
        for r in rows {
            let (g, i) = (r / GROUP, r % GROUP);
            for b in 0..blocks {
                self.scales[(g * blocks + b) * GROUP + i] *= factor;
            }
            self.bias[r] *= factor;
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

/// `out[t][r] = bias[r] + Σ_c w[r][c] · x[t][c]` for the first `tokens` rows of `x`;
/// `out` holds `tokens × w.rows` floats.
pub(super) fn matmul(isa: Isa, w: &PackedMatrix, x: &Int8Rows, tokens: usize, out: &mut [f32]) {
    assert_eq!(x.cols, w.cols);
    assert!(x.values.len() >= tokens * w.cols && out.len() >= tokens * w.rows);
    let panels = w.rows / PANEL;
    let threads = rayon::current_num_threads();
    let token_tiles = tokens.div_ceil(TOKEN_TILE);
    // Few tokens (a query): split the rows too, so that every thread has work.
    let row_splits =
        if token_tiles >= 2 * threads { 1 } else { (4 * threads).div_ceil(token_tiles).min(panels) };
    let target = OutPtr { ptr: out.as_mut_ptr(), stride: w.rows };
    (0..token_tiles * row_splits).into_par_iter().for_each(|tile| {
        let (tt, rs) = (tile / row_splits, tile % row_splits);
        let tok = tt * TOKEN_TILE..((tt + 1) * TOKEN_TILE).min(tokens);
        let panel = rs * panels / row_splits..(rs + 1) * panels / row_splits;
        let rows = panel.start * PANEL..panel.end * PANEL;
        // SAFETY: the tiles of this loop cover disjoint token ranges × row ranges of `out`,
        // which holds `tokens × w.rows` floats (asserted above) and outlives the loop.
        unsafe { tile_product(isa, w, x, tok, rows, target) }
    });
}

/// One tile of [`matmul`] with the best kernel for `isa`.
///
/// # Safety
/// `out` must point to a buffer of at least `tok.end × w.rows` floats whose rectangle
/// `tok × rows` no other thread accesses during the call; `x` must hold `tok.end` rows.
unsafe fn tile_product(
    isa: Isa,
    w: &PackedMatrix,
    x: &Int8Rows,
    tok: Range<usize>,
    rows: Range<usize>,
    out: OutPtr,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx512Vnni` is only chosen when the CPU has the features the kernel
        // enables; the caller upholds the output contract.
        Isa::Avx512Vnni => unsafe { super::kernels_x86::tile_avx512_vnni(w, x, tok, rows, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Isa::Avx2 => unsafe { super::kernels_x86::tile_avx2(w, x, tok, rows, out) },
        // SAFETY: the caller upholds the output contract.
        _ => unsafe { tile_portable(w, x, tok, rows, out) },
    }
}

/// The portable kernel: one group of 16 rows for one token at a time, written so that the
/// compiler can vectorise the 16 rows.
///
/// # Safety
/// As for [`tile_product`].
pub(super) unsafe fn tile_portable(
    w: &PackedMatrix,
    x: &Int8Rows,
    tok: Range<usize>,
    rows: Range<usize>,
    out: OutPtr,
) {
    let (cols, blocks) = (w.cols, w.blocks());
    for g in rows.start / GROUP..rows.end / GROUP {
        let gq = &w.quants[g * GROUP * cols..][..GROUP * cols];
        let gs = &w.scales[g * GROUP * blocks..][..GROUP * blocks];
        for t in tok.clone() {
            let xq = &x.values[t * cols..][..cols];
            let mut acc = [0f32; GROUP];
            for b in 0..blocks {
                let mut dot = [x.offsets[t * blocks + b]; GROUP];
                for s in 0..STEPS {
                    let a = &xq[b * QK + s * 4..][..4];
                    let step = &gq[(b * STEPS + s) * GROUP * 4..][..GROUP * 4];
                    for (r, d) in dot.iter_mut().enumerate() {
                        let wv = &step[r * 4..][..4];
                        *d += (0..4).map(|j| i32::from(wv[j]) * i32::from(a[j])).sum::<i32>();
                    }
                }
                let da = x.scales[t * blocks + b];
                for r in 0..GROUP {
                    acc[r] += dot[r] as f32 * (gs[b * GROUP + r] * da);
                }
            }
            let bias = &w.bias[g * GROUP..][..GROUP];
            for r in 0..GROUP {
                // SAFETY: row `t` < `tok.end` and column `g·16 + r` < `w.rows` lie inside the
                // caller's rectangle of the output.
                unsafe { *out.ptr.add(t * out.stride + g * GROUP + r) = acc[r] + bias[r] };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of pseudo-random bytes (xorshift).
    fn bytes(n: usize, mut seed: u64) -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect()
    }

    /// Q4_0 rows with scales from 2^-8 to 2^-1 (f16 exponents 7 to 14).
    fn q4_matrix(rows: usize, cols: usize, seed: u64) -> Vec<u8> {
        let mut data = bytes(rows * cols / QK * Q4_BLOCK_BYTES, seed);
        for block in data.chunks_exact_mut(Q4_BLOCK_BYTES) {
            let exponent = 7 + u16::from(block[0] % 8);
            let scale = (exponent << 10) | u16::from(block[1]);
            block[..2].copy_from_slice(&scale.to_le_bytes());
        }
        data
    }

    fn activations(tokens: usize, cols: usize, seed: u64) -> (Vec<f32>, Int8Rows) {
        let x: Vec<f32> = bytes(tokens * cols, seed).iter().map(|&b| (f32::from(b) - 128.0) / 17.0).collect();
        let mut q = Int8Rows::default();
        q.reshape(tokens, cols);
        let nb = cols / QK;
        for t in 0..tokens {
            quantize_row(
                &x[t * cols..][..cols],
                &mut q.values[t * cols..][..cols],
                &mut q.scales[t * nb..][..nb],
                &mut q.offsets[t * nb..][..nb],
            );
        }
        (x, q)
    }

    /// The product in f64 from the Q4_0 bytes and the int8 activations, by definition.
    fn reference(q4: &[u8], bias: &[f32], x: &Int8Rows, tokens: usize) -> Vec<f64> {
        let (rows, cols, nb) = (bias.len(), x.cols, x.cols / QK);
        let mut out = vec![0f64; tokens * rows];
        for t in 0..tokens {
            for r in 0..rows {
                let mut total = f64::from(bias[r]);
                for b in 0..nb {
                    let block = &q4[(r * nb + b) * Q4_BLOCK_BYTES..][..Q4_BLOCK_BYTES];
                    let d = f64::from(f16_to_f32(u16::from_le_bytes([block[0], block[1]])));
                    let dot: i64 = (0..QK)
                        .map(|k| {
                            let nibble = if k < 16 { block[2 + k] & 15 } else { block[2 + k - 16] >> 4 };
                            (i64::from(nibble) - 8) * i64::from(x.values[t * cols + b * QK + k])
                        })
                        .sum();
                    total += d * f64::from(x.scales[t * nb + b]) * dot as f64;
                }
                out[t * rows + r] = total;
            }
        }
        out
    }

    #[test]
    fn quantised_rows_round_to_within_half_a_step() {
        let (x, q) = activations(3, 96, 7);
        for (i, (&v, &qv)) in x.iter().zip(&q.values).enumerate() {
            let d = q.scales[i / QK];
            assert!((v - f32::from(qv) * d).abs() <= d * 0.5 + 1e-6, "value {i}");
            assert!(qv > -128);
        }
        let sums: Vec<i32> = q.values.chunks(QK).map(|c| c.iter().map(|&v| i32::from(v)).sum()).collect();
        assert!(sums.iter().zip(&q.offsets).all(|(s, o)| *o == -8 * s));
        let mut zero = Int8Rows::default();
        zero.reshape(1, QK);
        quantize_row(&[0.0; QK], &mut zero.values, &mut zero.scales, &mut zero.offsets);
        assert!(zero.values.iter().all(|&v| v == 0) && zero.scales[0] == 0.0);
    }

    #[test]
    fn every_kernel_computes_the_product_of_its_definition() {
        let (rows, cols) = (96, 128);
        let (a, b) = (q4_matrix(64, cols, 1), q4_matrix(32, cols, 2));
        let (bias_a, bias_b): (Vec<f32>, Vec<f32>) =
            ((0..64).map(|i| i as f32 / 10.0).collect(), (0..32).map(|i| -(i as f32)).collect());
        let packed = PackedMatrix::from_q4(&[(&a, &bias_a), (&b, &bias_b)], cols);
        let stacked: Vec<u8> = a.iter().chain(&b).copied().collect();
        let bias: Vec<f32> = bias_a.iter().chain(&bias_b).copied().collect();
        // Token counts around every kernel's tile sizes, and past one token tile.
        for tokens in [1, 2, 3, 5, 6, 7, 13, 50, 97] {
            let (_, x) = activations(tokens, cols, tokens as u64 + 10);
            let expected = reference(&stacked, &bias, &x, tokens);
            for isa in Isa::available() {
                let mut out = vec![f32::NAN; tokens * rows];
                matmul(isa, &packed, &x, tokens, &mut out);
                for (i, (&got, &want)) in out.iter().zip(&expected).enumerate() {
                    assert!(
                        (f64::from(got) - want).abs() <= 1e-4 * want.abs().max(1.0),
                        "{isa:?}, {tokens} tokens, output {i}: {got} vs {want}"
                    );
                }
            }
        }
    }
}
