//! The x86-64 kernels of attention's two products (contracts in `attention.rs`): scores of
//! `QUERIES` (four) queries against 32 (AVX-512) or 16 (AVX2) keys per pass, and the four queries'
//! weighted values 32 or 16 dimensions per pass. Each pass keeps eight independent
//! accumulators, enough to hide the latency of the multiply-adds.

use std::arch::x86_64::*;

/// `scores[r][t] = queries[r] · keys[·][t]`.
///
/// # Safety
/// The CPU must have AVX-512F. `keys` holds `d × padded` floats, `queries` `QUERIES × d`,
/// `scores` `QUERIES × padded`; `padded` is a multiple of 16.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn scores_avx512<const QUERIES: usize>(
    keys: &[f32],
    padded: usize,
    queries: &[f32],
    d: usize,
    scores: &mut [f32],
) {
    let (k, q, s) = (keys.as_ptr(), queries.as_ptr(), scores.as_mut_ptr());
    let mut c = 0;
    // SAFETY (all reads and writes): columns c..c + 32 (or + 16) lie within `padded`, rows
    // within `d` and `QUERIES`, which the caller guarantees the buffers hold.
    unsafe {
        while c + 32 <= padded {
            let mut acc = [[_mm512_setzero_ps(); 2]; QUERIES];
            for e in 0..d {
                let k0 = _mm512_loadu_ps(k.add(e * padded + c));
                let k1 = _mm512_loadu_ps(k.add(e * padded + c + 16));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let qv = _mm512_set1_ps(*q.add(r * d + e));
                    acc[0] = _mm512_fmadd_ps(qv, k0, acc[0]);
                    acc[1] = _mm512_fmadd_ps(qv, k1, acc[1]);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                _mm512_storeu_ps(s.add(r * padded + c), acc[0]);
                _mm512_storeu_ps(s.add(r * padded + c + 16), acc[1]);
            }
            c += 32;
        }
        if c < padded {
            let mut acc = [_mm512_setzero_ps(); QUERIES];
            for e in 0..d {
                let k0 = _mm512_loadu_ps(k.add(e * padded + c));
                for (r, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_fmadd_ps(_mm512_set1_ps(*q.add(r * d + e)), k0, *acc);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                _mm512_storeu_ps(s.add(r * padded + c), *acc);
            }
        }
    }
}

/// `outputs[r] = Σ_{t < len} probs[r][t] · values[t]`.
///
/// # Safety
/// The CPU must have AVX-512F. `values` holds `len × d` floats, `probs` `QUERIES × padded`
/// with `len ≤ padded`, `outputs` `QUERIES × d`; `d` is a multiple of 16.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn weighted_avx512<const QUERIES: usize>(
    values: &[f32],
    d: usize,
    probs: &[f32],
    padded: usize,
    len: usize,
    outputs: &mut [f32],
) {
    let (v, p, o) = (values.as_ptr(), probs.as_ptr(), outputs.as_mut_ptr());
    let mut c = 0;
    // SAFETY (all reads and writes): dimensions c..c + 32 (or + 16) lie within `d`, tokens
    // within `len`, rows within `QUERIES`, which the caller guarantees the buffers hold.
    unsafe {
        while c + 32 <= d {
            let mut acc = [[_mm512_setzero_ps(); 2]; QUERIES];
            for t in 0..len {
                let v0 = _mm512_loadu_ps(v.add(t * d + c));
                let v1 = _mm512_loadu_ps(v.add(t * d + c + 16));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let w = _mm512_set1_ps(*p.add(r * padded + t));
                    acc[0] = _mm512_fmadd_ps(w, v0, acc[0]);
                    acc[1] = _mm512_fmadd_ps(w, v1, acc[1]);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                _mm512_storeu_ps(o.add(r * d + c), acc[0]);
                _mm512_storeu_ps(o.add(r * d + c + 16), acc[1]);
            }
            c += 32;
        }
        if c < d {
            let mut acc = [_mm512_setzero_ps(); QUERIES];
            for t in 0..len {
                let v0 = _mm512_loadu_ps(v.add(t * d + c));
                for (r, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_fmadd_ps(_mm512_set1_ps(*p.add(r * padded + t)), v0, *acc);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                _mm512_storeu_ps(o.add(r * d + c), *acc);
            }
        }
    }
}

/// As [`scores_avx512`], 16 keys per pass.
///
/// # Safety
/// The CPU must have AVX2 and FMA; buffers as for [`scores_avx512`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn scores_avx2<const QUERIES: usize>(
    keys: &[f32],
    padded: usize,
    queries: &[f32],
    d: usize,
    scores: &mut [f32],
) {
    let (k, q, s) = (keys.as_ptr(), queries.as_ptr(), scores.as_mut_ptr());
    // SAFETY: as in `scores_avx512`; `padded` is a multiple of 16.
    unsafe {
        for c in (0..padded).step_by(16) {
            let mut acc = [[_mm256_setzero_ps(); 2]; QUERIES];
            for e in 0..d {
                let k0 = _mm256_loadu_ps(k.add(e * padded + c));
                let k1 = _mm256_loadu_ps(k.add(e * padded + c + 8));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let qv = _mm256_set1_ps(*q.add(r * d + e));
                    acc[0] = _mm256_fmadd_ps(qv, k0, acc[0]);
                    acc[1] = _mm256_fmadd_ps(qv, k1, acc[1]);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                _mm256_storeu_ps(s.add(r * padded + c), acc[0]);
                _mm256_storeu_ps(s.add(r * padded + c + 8), acc[1]);
            }
        }
    }
}

/// As [`weighted_avx512`], 16 dimensions per pass.
///
/// # Safety
/// The CPU must have AVX2 and FMA; buffers as for [`weighted_avx512`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn weighted_avx2<const QUERIES: usize>(
    values: &[f32],
    d: usize,
    probs: &[f32],
    padded: usize,
    len: usize,
    outputs: &mut [f32],
) {
    let (v, p, o) = (values.as_ptr(), probs.as_ptr(), outputs.as_mut_ptr());
    // SAFETY: as in `weighted_avx512`; `d` is a multiple of 16.
    unsafe {
        for c in (0..d).step_by(16) {
            let mut acc = [[_mm256_setzero_ps(); 2]; QUERIES];
            for t in 0..len {
                let v0 = _mm256_loadu_ps(v.add(t * d + c));
                let v1 = _mm256_loadu_ps(v.add(t * d + c + 8));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let w = _mm256_set1_ps(*p.add(r * padded + t));
                    acc[0] = _mm256_fmadd_ps(w, v0, acc[0]);
                    acc[1] = _mm256_fmadd_ps(w, v1, acc[1]);
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                _mm256_storeu_ps(o.add(r * d + c), acc[0]);
                _mm256_storeu_ps(o.add(r * d + c + 8), acc[1]);
            }
        }
    }
}
