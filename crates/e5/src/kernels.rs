//! Quantised matrix products, where the encoder spends most of its time: weights in 4-bit
//! blocks (layout in `packed.rs`) times activations quantised to int8 per block of 32, with
//! integer dot products and one float multiply-add per block.
//!
//! Work is split over rayon's threads by tiles of tokens × rows, each writing a disjoint
//! rectangle of the output. This file holds the tiling and the portable kernel that every
//! SIMD kernel (`kernels_x86.rs`) is tested against.

use std::ops::Range;

use rayon::prelude::*;

use super::Isa;
use super::format::QK;
use super::packed::{GROUP, Int8Rows, OutPtr, PANEL, PackedMatrix, STEPS};

/// Tokens per tile when the rows are not split: a multiple of every kernel's token count,
/// small enough that a tile's activations stay in the core's L2 cache.
const TOKEN_TILE: usize = 48;

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

/// [`matmul`] for a matrix of `rows` rows that is not repacked whole: `fill` repacks rows
/// `r..r + 32` into `panel`, which is then multiplied for all `tokens` at once, on this
/// thread. Every output comes from the same kernel over the same values as in [`matmul`],
/// so the two agree to the bit.
pub(super) fn matmul_by_panels(
    isa: Isa,
    rows: usize,
    fill: impl Fn(Range<usize>, &mut PackedMatrix),
    x: &Int8Rows,
    tokens: usize,
    out: &mut [f32],
    panel: &mut PackedMatrix,
) {
    assert!(rows.is_multiple_of(PANEL) && out.len() >= tokens * rows);
    for first in (0..rows).step_by(PANEL) {
        fill(first..first + PANEL, panel);
        assert_eq!(x.cols, panel.cols);
        assert!(x.values.len() >= tokens * panel.cols);
        // The kernels address row `r` of token `t` at `ptr + t·stride + r`: starting at
        // column `first` with the full row length as stride, the panel's rows 0..32 land on
        // the matrix's rows `first..first + 32`.
        // SAFETY: `first + 32 ≤ rows`, so every write `t·rows + first + r` with `t < tokens`
        // and `r < 32` lies inside `out` (asserted above); the one tile has `out` alone.
        let target = OutPtr { ptr: unsafe { out.as_mut_ptr().add(first) }, stride: rows };
        // SAFETY: as above; `x` holds `tokens` rows of the panel's columns.
        unsafe { tile_product(isa, panel, x, 0..tokens, 0..PANEL, target) }
    }
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
        // SAFETY: as above, for AVX2, FMA and AVX-VNNI.
        Isa::AvxVnni => unsafe { super::kernels_x86::tile_avx_vnni(w, x, tok, rows, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Isa::Avx2 => unsafe { super::kernels_x86::tile_avx2(w, x, tok, rows, out) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `Isa::NeonDot` is only chosen when the CPU has the dot-product extension;
        // the caller upholds the output contract.
        Isa::NeonDot => unsafe { super::kernels_arm::tile_neon_dot(w, x, tok, rows, out) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: every AArch64 CPU has NEON; the caller upholds the output contract.
        Isa::Neon => unsafe { super::kernels_arm::tile_neon(w, x, tok, rows, out) },
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
                // A step's 64 values times the token's 4 activations repeated: products and
                // sums lane by lane in 16 bits (a block adds at most 8 × 15 × 127 = 15 240),
                // which baseline SSE2 and NEON both vectorise; then 4 lanes per row.
                let mut lanes = [0i16; GROUP * 4];
                let mut repeated = [0i8; GROUP * 4];
                for s in 0..STEPS {
                    let a = &xq[b * QK + s * 4..][..4];
                    for four in repeated.chunks_exact_mut(4) {
                        four.copy_from_slice(a);
                    }
                    let step: &[u8; GROUP * 4] =
                        gq[(b * STEPS + s) * GROUP * 4..][..GROUP * 4].try_into().unwrap();
                    for ((l, &w), &a) in lanes.iter_mut().zip(step).zip(&repeated) {
                        *l += i16::from(w) * i16::from(a);
                    }
                }
                let (offset, da) = (x.offsets[t * blocks + b], x.scales[t * blocks + b]);
                for (r, four) in lanes.chunks_exact(4).enumerate() {
                    let dot = offset + four.iter().map(|&v| i32::from(v)).sum::<i32>();
                    acc[r] += dot as f32 * (gs[b * GROUP + r] * da);
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
    use super::super::format::{Q4_BLOCK_BYTES, f16_to_f32};
    use super::super::packed::quantize_row;
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
        for tokens in [1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 50, 97] {
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
        // Which kernels ran shows with `--nocapture` (scripts/e5-arm reads it under qemu).
        eprintln!("product kernels checked: {:?}", Isa::available());
    }
}
