//! The x86-64 kernels of the quantised product (layout in `packed.rs`, contract in
//! `kernels.rs`):
//! AVX-512 VNNI (`vpdpbusd`, 32 rows × 6 tokens per inner loop), AVX-VNNI (the same
//! instruction on 256 bits, for CPUs with VNNI but not AVX-512; 16 rows × 3 tokens) and AVX2
//! (`vpmaddubsw`, 16 rows × 6 tokens). Both keep a block's integer sums in registers, then scale them into
//! float accumulators once per block; the token counts are what fits the register file
//! (32 registers for AVX-512, 16 for AVX2) so that each weight load serves several tokens.

use std::arch::x86_64::*;
use std::ops::Range;

use super::format::QK;
use super::packed::{GROUP, Int8Rows, OutPtr, PANEL, PackedMatrix, STEPS};

/// Bytes of one step: 4 values of each of the 16 rows of a group.
const STEP_BYTES: usize = GROUP * 4;

/// One tile of the product with AVX-512 VNNI.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512 VNNI. `out` must point to at least
/// `tok.end × w.rows` floats, of which the rectangle `tok × rows` is this call's alone;
/// `x` must hold `tok.end` rows of `w.cols` columns; `rows` must be whole panels.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) unsafe fn tile_avx512_vnni(
    w: &PackedMatrix,
    x: &Int8Rows,
    tok: Range<usize>,
    rows: Range<usize>,
    out: OutPtr,
) {
    for panel in rows.start / PANEL..rows.end / PANEL {
        let mut t = tok.start;
        while t < tok.end {
            let m = (tok.end - t).min(6);
            // SAFETY: tokens t..t + m and the panel's 32 rows lie inside the caller's rectangle.
            unsafe {
                match m {
                    6 => panel_vnni::<6>(w, x, panel, t, out),
                    5 => panel_vnni::<5>(w, x, panel, t, out),
                    4 => panel_vnni::<4>(w, x, panel, t, out),
                    3 => panel_vnni::<3>(w, x, panel, t, out),
                    2 => panel_vnni::<2>(w, x, panel, t, out),
                    _ => panel_vnni::<1>(w, x, panel, t, out),
                }
            }
            t += m;
        }
    }
}

/// Rows `32·panel ..+32` for tokens `t0 ..+M`.
///
/// # Safety
/// As for [`tile_avx512_vnni`], for that rectangle.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
unsafe fn panel_vnni<const M: usize>(w: &PackedMatrix, x: &Int8Rows, panel: usize, t0: usize, out: OutPtr) {
    let (cols, blocks) = (w.cols, w.blocks());
    // SAFETY (all pointer arithmetic and reads below): the packed matrix holds `rows × cols`
    // quants and `rows × blocks` scales, and the panel's two groups lie within `rows`; the
    // activations hold rows `t0 ..+M` (caller's contract); reads of 4 activation bytes or
    // 64 quant bytes stay within a block, and unaligned loads are used throughout.
    unsafe {
        let q0 = w.quants.as_ptr().add(panel * PANEL * cols);
        let q1 = q0.add(GROUP * cols);
        let s0 = w.scales.as_ptr().add(panel * PANEL * blocks);
        let s1 = s0.add(GROUP * blocks);
        let xv = x.values.as_ptr().add(t0 * cols);
        let xs = x.scales.as_ptr().add(t0 * blocks);
        let xo = x.offsets.as_ptr().add(t0 * blocks);
        let mut acc0 = [_mm512_setzero_ps(); M];
        let mut acc1 = [_mm512_setzero_ps(); M];
        for b in 0..blocks {
            let mut dot0 = [_mm512_setzero_si512(); M];
            let mut dot1 = [_mm512_setzero_si512(); M];
            for m in 0..M {
                let offset = _mm512_set1_epi32(*xo.add(m * blocks + b));
                dot0[m] = offset;
                dot1[m] = offset;
            }
            for s in 0..STEPS {
                let at = (b * STEPS + s) * STEP_BYTES;
                let w0 = _mm512_loadu_si512(q0.add(at).cast());
                let w1 = _mm512_loadu_si512(q1.add(at).cast());
                for m in 0..M {
                    let a =
                        _mm512_set1_epi32(xv.add(m * cols + b * QK + s * 4).cast::<i32>().read_unaligned());
                    dot0[m] = _mm512_dpbusd_epi32(dot0[m], w0, a);
                    dot1[m] = _mm512_dpbusd_epi32(dot1[m], w1, a);
                }
            }
            let scale0 = _mm512_loadu_ps(s0.add(b * GROUP));
            let scale1 = _mm512_loadu_ps(s1.add(b * GROUP));
            for m in 0..M {
                let da = _mm512_set1_ps(*xs.add(m * blocks + b));
                acc0[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot0[m]), _mm512_mul_ps(scale0, da), acc0[m]);
                acc1[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1[m]), _mm512_mul_ps(scale1, da), acc1[m]);
            }
        }
        let bias0 = _mm512_loadu_ps(w.bias.as_ptr().add(panel * PANEL));
        let bias1 = _mm512_loadu_ps(w.bias.as_ptr().add(panel * PANEL + GROUP));
        for m in 0..M {
            let o = out.ptr.add((t0 + m) * out.stride + panel * PANEL);
            _mm512_storeu_ps(o, _mm512_add_ps(acc0[m], bias0));
            _mm512_storeu_ps(o.add(GROUP), _mm512_add_ps(acc1[m], bias1));
        }
    }
}

/// One tile of the product with AVX2.
///
/// # Safety
/// The CPU must support AVX2 and FMA; otherwise as for [`tile_avx512_vnni`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn tile_avx2(
    w: &PackedMatrix,
    x: &Int8Rows,
    tok: Range<usize>,
    rows: Range<usize>,
    out: OutPtr,
) {
    for group in rows.start / GROUP..rows.end / GROUP {
        let mut t = tok.start;
        while t < tok.end {
            let m = (tok.end - t).min(AVX2_TOKENS);
            // SAFETY: tokens t..t + m and the group's 16 rows lie inside the caller's rectangle.
            unsafe {
                match m {
                    6 => group_avx2::<6>(w, x, group, t, out),
                    5 => group_avx2::<5>(w, x, group, t, out),
                    4 => group_avx2::<4>(w, x, group, t, out),
                    3 => group_avx2::<3>(w, x, group, t, out),
                    2 => group_avx2::<2>(w, x, group, t, out),
                    _ => group_avx2::<1>(w, x, group, t, out),
                }
            }
            t += m;
        }
    }
}

/// Tokens per pass of the AVX2 kernel: their 16-bit sums take two registers each, and with
/// the step's two weight registers and the broadcast activations, six fill the sixteen.
const AVX2_TOKENS: usize = 6;

/// Rows `16·group ..+16` for tokens `t0 ..+M`. `maddubs` gives 16-bit sums of value pairs;
/// a block's eight steps add up to at most 8 × 2 × 15 × 127 = 30 480 in magnitude, so they
/// accumulate in 16 bits and widen once per block. The float sums live in the output
/// rectangle itself (read, multiply-added and written once per block): kept in registers
/// they would crowd out the integer sums, and the compiler would spill inside the steps.
///
/// # Safety
/// As for [`tile_avx2`], for that rectangle.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn group_avx2<const M: usize>(w: &PackedMatrix, x: &Int8Rows, group: usize, t0: usize, out: OutPtr) {
    let (cols, blocks) = (w.cols, w.blocks());
    // SAFETY: as in `panel_vnni`: every read stays inside the packed matrix's group and the
    // activations' rows `t0 ..+M`, every write inside the caller's rectangle.
    unsafe {
        let q = w.quants.as_ptr().add(group * GROUP * cols);
        let sc = w.scales.as_ptr().add(group * GROUP * blocks);
        let xv = x.values.as_ptr().add(t0 * cols);
        let xs = x.scales.as_ptr().add(t0 * blocks);
        let xo = x.offsets.as_ptr().add(t0 * blocks);
        let ones = _mm256_set1_epi16(1);
        let bias = w.bias.as_ptr().add(group * GROUP);
        let o: [*mut f32; M] = std::array::from_fn(|m| out.ptr.add((t0 + m) * out.stride + group * GROUP));
        for o in o {
            _mm256_storeu_ps(o, _mm256_loadu_ps(bias));
            _mm256_storeu_ps(o.add(8), _mm256_loadu_ps(bias.add(8)));
        }
        for b in 0..blocks {
            let mut dot = [[_mm256_setzero_si256(); 2]; M];
            for s in 0..STEPS {
                let at = (b * STEPS + s) * STEP_BYTES;
                let w0 = _mm256_loadu_si256(q.add(at).cast());
                let w1 = _mm256_loadu_si256(q.add(at + 32).cast());
                for (m, dot) in dot.iter_mut().enumerate() {
                    let a =
                        _mm256_set1_epi32(xv.add(m * cols + b * QK + s * 4).cast::<i32>().read_unaligned());
                    dot[0] = _mm256_add_epi16(dot[0], _mm256_maddubs_epi16(w0, a));
                    dot[1] = _mm256_add_epi16(dot[1], _mm256_maddubs_epi16(w1, a));
                }
            }
            let scale0 = _mm256_loadu_ps(sc.add(b * GROUP));
            let scale1 = _mm256_loadu_ps(sc.add(b * GROUP + 8));
            for m in 0..M {
                let offset = _mm256_set1_epi32(*xo.add(m * blocks + b));
                let da = _mm256_set1_ps(*xs.add(m * blocks + b));
                let i0 = _mm256_add_epi32(_mm256_madd_epi16(dot[m][0], ones), offset);
                let i1 = _mm256_add_epi32(_mm256_madd_epi16(dot[m][1], ones), offset);
                let f0 =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), _mm256_mul_ps(scale0, da), _mm256_loadu_ps(o[m]));
                let f1 = _mm256_fmadd_ps(
                    _mm256_cvtepi32_ps(i1),
                    _mm256_mul_ps(scale1, da),
                    _mm256_loadu_ps(o[m].add(8)),
                );
                _mm256_storeu_ps(o[m], f0);
                _mm256_storeu_ps(o[m].add(8), f1);
            }
        }
    }
}

/// One tile of the product with AVX-VNNI.
///
/// # Safety
/// The CPU must support AVX2, FMA and AVX-VNNI; otherwise as for [`tile_avx512_vnni`].
#[target_feature(enable = "avx2,fma,avxvnni")]
pub(super) unsafe fn tile_avx_vnni(
    w: &PackedMatrix,
    x: &Int8Rows,
    tok: Range<usize>,
    rows: Range<usize>,
    out: OutPtr,
) {
    for group in rows.start / GROUP..rows.end / GROUP {
        let mut t = tok.start;
        while t < tok.end {
            let m = (tok.end - t).min(3);
            // SAFETY: tokens t..t + m and the group's 16 rows lie inside the caller's rectangle.
            unsafe {
                match m {
                    3 => group_avx_vnni::<3>(w, x, group, t, out),
                    2 => group_avx_vnni::<2>(w, x, group, t, out),
                    _ => group_avx_vnni::<1>(w, x, group, t, out),
                }
            }
            t += m;
        }
    }
}

/// Rows `16·group ..+16` for tokens `t0 ..+M`, as [`group_avx2`] with `vpdpbusd` in place
/// of `maddubs` and the 16-bit sums: one instruction per step and token instead of two.
///
/// # Safety
/// As for [`tile_avx_vnni`], for that rectangle.
#[target_feature(enable = "avx2,fma,avxvnni")]
#[inline]
unsafe fn group_avx_vnni<const M: usize>(
    w: &PackedMatrix,
    x: &Int8Rows,
    group: usize,
    t0: usize,
    out: OutPtr,
) {
    let (cols, blocks) = (w.cols, w.blocks());
    // SAFETY: as in `panel_vnni`: every read stays inside the packed matrix's group and the
    // activations' rows `t0 ..+M`, every write inside the caller's rectangle.
    unsafe {
        let q = w.quants.as_ptr().add(group * GROUP * cols);
        let sc = w.scales.as_ptr().add(group * GROUP * blocks);
        let xv = x.values.as_ptr().add(t0 * cols);
        let xs = x.scales.as_ptr().add(t0 * blocks);
        let xo = x.offsets.as_ptr().add(t0 * blocks);
        let mut acc = [[_mm256_setzero_ps(); 2]; M];
        for b in 0..blocks {
            let mut dot = [[_mm256_setzero_si256(); 2]; M];
            for (m, dot) in dot.iter_mut().enumerate() {
                let offset = _mm256_set1_epi32(*xo.add(m * blocks + b));
                *dot = [offset, offset];
            }
            for s in 0..STEPS {
                let at = (b * STEPS + s) * STEP_BYTES;
                let w0 = _mm256_loadu_si256(q.add(at).cast());
                let w1 = _mm256_loadu_si256(q.add(at + 32).cast());
                for (m, dot) in dot.iter_mut().enumerate() {
                    let a =
                        _mm256_set1_epi32(xv.add(m * cols + b * QK + s * 4).cast::<i32>().read_unaligned());
                    dot[0] = _mm256_dpbusd_avx_epi32(dot[0], w0, a);
                    dot[1] = _mm256_dpbusd_avx_epi32(dot[1], w1, a);
                }
            }
            let scale0 = _mm256_loadu_ps(sc.add(b * GROUP));
            let scale1 = _mm256_loadu_ps(sc.add(b * GROUP + 8));
            for m in 0..M {
                let da = _mm256_set1_ps(*xs.add(m * blocks + b));
                acc[m][0] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[m][0]), _mm256_mul_ps(scale0, da), acc[m][0]);
                acc[m][1] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[m][1]), _mm256_mul_ps(scale1, da), acc[m][1]);
            }
        }
        let bias = w.bias.as_ptr().add(group * GROUP);
        for (m, acc) in acc.iter().enumerate() {
            let o = out.ptr.add((t0 + m) * out.stride + group * GROUP);
            _mm256_storeu_ps(o, _mm256_add_ps(acc[0], _mm256_loadu_ps(bias)));
            _mm256_storeu_ps(o.add(8), _mm256_add_ps(acc[1], _mm256_loadu_ps(bias.add(8))));
        }
    }
}
