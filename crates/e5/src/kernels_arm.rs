//! The AArch64 kernels of the quantised product (layout in `packed.rs`, contract in
//! `kernels.rs`): NEON, which every 64-bit ARM CPU has (`smlal`: 8-bit products summed in
//! 16 bits, 16 rows × 3 tokens per inner loop), and the dot-product extension (`sdot`, on
//! Apple M1 and later, Cortex-A76 and later, Neoverse; 16 rows × 4 tokens), chosen at run
//! time. Both keep a block's integer sums in registers and the float sums in the output
//! rectangle, read and multiply-added once per block of 32 columns, as the AVX2 kernel does.

use std::arch::aarch64::*;
use std::arch::asm;
use std::ops::Range;

use super::format::QK;
use super::packed::{GROUP, Int8Rows, OutPtr, PackedMatrix, STEPS};

/// Bytes of one step: 4 values of each of the 16 rows of a group.
const STEP_BYTES: usize = GROUP * 4;
/// Tokens per pass of the NEON kernel: eight 16-bit sum registers each, 24 of the 32.
const NEON_TOKENS: usize = 3;
/// Tokens per pass of the `sdot` kernel: four 32-bit sum registers each.
const DOT_TOKENS: usize = 4;

/// One tile of the product with NEON.
///
/// # Safety
/// `out` must point to at least `tok.end × out.stride` floats, of which the rectangle
/// `tok × rows` is this call's alone; `x` must hold `tok.end` rows of `w.cols` columns;
/// `rows` must be whole groups of `w`.
pub(super) unsafe fn tile_neon(
    w: &PackedMatrix,
    x: &Int8Rows,
    tok: Range<usize>,
    rows: Range<usize>,
    out: OutPtr,
) {
    for group in rows.start / GROUP..rows.end / GROUP {
        let mut t = tok.start;
        while t < tok.end {
            let m = (tok.end - t).min(NEON_TOKENS);
            // SAFETY: tokens t..t + m and the group's 16 rows lie inside the caller's rectangle.
            unsafe {
                match m {
                    3 => group_neon::<3>(w, x, group, t, out),
                    2 => group_neon::<2>(w, x, group, t, out),
                    _ => group_neon::<1>(w, x, group, t, out),
                }
            }
            t += m;
        }
    }
}

/// One tile of the product with the dot-product extension.
///
/// # Safety
/// The CPU must have the dot-product extension (`dotprod`); otherwise as for [`tile_neon`].
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn tile_neon_dot(
    w: &PackedMatrix,
    x: &Int8Rows,
    tok: Range<usize>,
    rows: Range<usize>,
    out: OutPtr,
) {
    for group in rows.start / GROUP..rows.end / GROUP {
        let mut t = tok.start;
        while t < tok.end {
            let m = (tok.end - t).min(DOT_TOKENS);
            // SAFETY: as in `tile_neon`; the CPU has `dotprod` (this function's contract).
            unsafe {
                match m {
                    4 => group_dot::<4>(w, x, group, t, out),
                    3 => group_dot::<3>(w, x, group, t, out),
                    2 => group_dot::<2>(w, x, group, t, out),
                    _ => group_dot::<1>(w, x, group, t, out),
                }
            }
            t += m;
        }
    }
}

/// The four activations of token row `xv + m·cols` at column `c`, repeated over 16 bytes.
///
/// # Safety
/// The four bytes must be readable.
#[inline(always)]
unsafe fn broadcast4(p: *const i8) -> int8x16_t {
    // SAFETY: the caller guarantees the 4 bytes; the read is unaligned.
    unsafe { vreinterpretq_s8_s32(vdupq_n_s32(p.cast::<i32>().read_unaligned())) }
}

/// Writes each token's biases into its 16 outputs of the group, where the float sums build up.
///
/// # Safety
/// The `M` output pointers must each have 16 floats, and `bias` 16.
#[inline(always)]
unsafe fn start_with_bias<const M: usize>(o: &[*mut f32; M], bias: *const f32) {
    for &o in o {
        for k in 0..4 {
            // SAFETY: 16 floats each side (the caller's contract).
            unsafe { vst1q_f32(o.add(4 * k), vld1q_f32(bias.add(4 * k))) };
        }
    }
}

/// `out[r] += dot[r] · scale[r] · da` for the 16 rows of a group, four rows per register.
///
/// # Safety
/// `o` and `scale` must have 16 floats each.
#[inline(always)]
unsafe fn scale_into(o: *mut f32, dot: [int32x4_t; 4], scale: *const f32, da: f32) {
    // SAFETY: 16 floats each side (the caller's contract).
    unsafe {
        let da = vdupq_n_f32(da);
        for (k, dot) in dot.into_iter().enumerate() {
            let s = vmulq_f32(vld1q_f32(scale.add(4 * k)), da);
            vst1q_f32(o.add(4 * k), vfmaq_f32(vld1q_f32(o.add(4 * k)), vcvtq_f32_s32(dot), s));
        }
    }
}

/// Rows `16·group ..+16` for tokens `t0 ..+M` with NEON. A step's 64 weight bytes are four
/// registers of 4 rows × 4 columns; `smlal` multiplies 8 of them by the token's four
/// activations (repeated) and adds into 16-bit lanes, where a block's eight steps reach at
/// most 8 × 15 × 127 = 15 240. Pairwise adds then fold each row's four lanes into one.
///
/// # Safety
/// As for [`tile_neon`], for that rectangle.
#[inline]
unsafe fn group_neon<const M: usize>(w: &PackedMatrix, x: &Int8Rows, group: usize, t0: usize, out: OutPtr) {
    let (cols, blocks) = (w.cols, w.blocks());
    // SAFETY: every read stays inside the packed matrix's group (`GROUP × cols` quants and
    // `GROUP × blocks` scales) and the activations' rows `t0 ..+M` (the caller's contract);
    // every write inside the caller's rectangle.
    unsafe {
        let q = w.quants.as_ptr().add(group * GROUP * cols);
        let sc = w.scales.as_ptr().add(group * GROUP * blocks);
        let xv = x.values.as_ptr().add(t0 * cols);
        let xs = x.scales.as_ptr().add(t0 * blocks);
        let xo = x.offsets.as_ptr().add(t0 * blocks);
        let o: [*mut f32; M] = std::array::from_fn(|m| out.ptr.add((t0 + m) * out.stride + group * GROUP));
        start_with_bias(&o, w.bias.as_ptr().add(group * GROUP));
        for b in 0..blocks {
            let mut lanes = [[vdupq_n_s16(0); 8]; M];
            for s in 0..STEPS {
                let at = (b * STEPS + s) * STEP_BYTES;
                let a: [int8x16_t; M] =
                    std::array::from_fn(|m| broadcast4(xv.add(m * cols + b * QK + s * 4)));
                for k in 0..4 {
                    let wk = vreinterpretq_s8_u8(vld1q_u8(q.add(at + 16 * k)));
                    for m in 0..M {
                        lanes[m][2 * k] = vmlal_s8(lanes[m][2 * k], vget_low_s8(wk), vget_low_s8(a[m]));
                        lanes[m][2 * k + 1] = vmlal_high_s8(lanes[m][2 * k + 1], wk, a[m]);
                    }
                }
            }
            for m in 0..M {
                let offset = vdupq_n_s32(*xo.add(m * blocks + b));
                let dot: [int32x4_t; 4] = std::array::from_fn(|k| {
                    let rows = vpaddq_s32(vpaddlq_s16(lanes[m][2 * k]), vpaddlq_s16(lanes[m][2 * k + 1]));
                    vaddq_s32(rows, offset)
                });
                scale_into(o[m], dot, sc.add(b * GROUP), *xs.add(m * blocks + b));
            }
        }
    }
}

/// `acc + Σ` of the products of each lane's four bytes of `w` and `a` (`sdot`). The
/// instruction is written out because its intrinsic is not stable in the Rust this crate
/// supports.
///
/// # Safety
/// The CPU must have the dot-product extension; called only from functions that enable it.
#[inline(always)]
unsafe fn sdot(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: a register-only instruction of the dot-product extension, which the CPU has
    // (this function's contract).
    unsafe {
        asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {a:v}.16b",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            a = in(vreg) a,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// Rows `16·group ..+16` for tokens `t0 ..+M` with `sdot`: each of a step's four weight
/// registers times the token's four activations (repeated) adds one 4-column sum to each of
/// 4 rows' 32-bit lanes, so no folding is left at the end of a block.
///
/// # Safety
/// As for [`tile_neon_dot`], for that rectangle.
#[target_feature(enable = "dotprod")]
#[inline]
unsafe fn group_dot<const M: usize>(w: &PackedMatrix, x: &Int8Rows, group: usize, t0: usize, out: OutPtr) {
    let (cols, blocks) = (w.cols, w.blocks());
    // SAFETY: as in `group_neon`; the CPU has `dotprod` (this function's contract).
    unsafe {
        let q = w.quants.as_ptr().add(group * GROUP * cols);
        let sc = w.scales.as_ptr().add(group * GROUP * blocks);
        let xv = x.values.as_ptr().add(t0 * cols);
        let xs = x.scales.as_ptr().add(t0 * blocks);
        let xo = x.offsets.as_ptr().add(t0 * blocks);
        let o: [*mut f32; M] = std::array::from_fn(|m| out.ptr.add((t0 + m) * out.stride + group * GROUP));
        start_with_bias(&o, w.bias.as_ptr().add(group * GROUP));
        for b in 0..blocks {
            let mut dot: [[int32x4_t; 4]; M] =
                std::array::from_fn(|m| [vdupq_n_s32(*xo.add(m * blocks + b)); 4]);
            for s in 0..STEPS {
                let at = (b * STEPS + s) * STEP_BYTES;
                let a: [int8x16_t; M] =
                    std::array::from_fn(|m| broadcast4(xv.add(m * cols + b * QK + s * 4)));
                for k in 0..4 {
                    let wk = vreinterpretq_s8_u8(vld1q_u8(q.add(at + 16 * k)));
                    for m in 0..M {
                        dot[m][k] = sdot(dot[m][k], wk, a[m]);
                    }
                }
            }
            for m in 0..M {
                scale_into(o[m], dot[m], sc.add(b * GROUP), *xs.add(m * blocks + b));
            }
        }
    }
}
