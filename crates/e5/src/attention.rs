//! Scaled dot-product attention, each text over its own tokens only: texts of a batch share
//! one activation matrix without padding, so a text's span of rows is its whole world.
//! Jobs are (text, head) pairs spread over rayon's threads; each works in float on copies
//! of its head's keys (transposed, so that 16 scores come from one vector multiply-add per
//! dimension) and values (contiguous), four queries at a time so that every loaded key or
//! value serves four rows. The two products have explicit x86 kernels
//! (`attention_x86.rs`): the compiler's vectoriser handles the portable loops below well for
//! one lane of 16 accumulators at a time, not for the several that hide the FMA latency.

use std::ops::Range;

use rayon::prelude::*;

use super::Isa;
use super::packed::OutPtr;
use super::rowwise::{LANES, exp, fmadd, max, reduce};

/// Queries handled together.
const QUERIES: usize = 4;

/// Per-thread buffers, grown to the longest text and kept.
#[derive(Default)]
struct Scratch {
    /// Keys transposed: `[dimension][token]`, rows padded to whole lanes with zeros.
    keys: Vec<f32>,
    /// Values: `[token][dimension]`.
    values: Vec<f32>,
    /// `QUERIES` queries (already scaled by 1/√d, see `model.rs`).
    queries: Vec<f32>,
    /// `QUERIES` rows of scores, then of probabilities (`[query][padded token]`).
    scores: Vec<f32>,
    /// `QUERIES` rows of weighted values.
    outputs: Vec<f32>,
}

/// Head dimensions the attention supports: whole lanes of 16.
pub(super) fn supports_head_dim(d: usize) -> bool {
    d > 0 && d.is_multiple_of(LANES) && d <= 256
}

/// `ctx[t][h·d ..+d] = softmax(q_t · K_hᵀ) · V_h` for every token `t` of every span in
/// `texts`, where `qkv` holds each token's query, key and value (`3 × hidden` floats), the
/// query already divided by √d.
pub(super) fn attention(
    isa: Isa,
    qkv: &[f32],
    hidden: usize,
    heads: usize,
    texts: &[Range<usize>],
    ctx: &mut [f32],
) {
    let end = texts.iter().map(|t| t.end).max().unwrap_or(0);
    assert!(qkv.len() >= end * 3 * hidden && ctx.len() >= end * hidden);
    let out = OutPtr { ptr: ctx.as_mut_ptr(), stride: hidden };
    (0..texts.len() * heads).into_par_iter().for_each_init(Scratch::default, |scratch, job| {
        let (text, head) = (texts[job / heads].clone(), job % heads);
        attend(isa, qkv, hidden, hidden / heads, text, head, scratch, out);
    });
}

/// One head of one text.
#[allow(clippy::too_many_arguments)]
fn attend(
    isa: Isa,
    qkv: &[f32],
    hidden: usize,
    d: usize,
    text: Range<usize>,
    head: usize,
    s: &mut Scratch,
    out: OutPtr,
) {
    let stride = 3 * hidden;
    let len = text.len();
    let padded = len.next_multiple_of(LANES);
    let row = |t: usize, part: usize| &qkv[(text.start + t) * stride + part * hidden + head * d..][..d];

    s.keys.clear();
    s.keys.resize(d * padded, 0.0);
    s.values.clear();
    for t in 0..len {
        for (e, &k) in row(t, 1).iter().enumerate() {
            s.keys[e * padded + t] = k;
        }
        s.values.extend_from_slice(row(t, 2));
    }
    s.scores.clear();
    s.scores.resize(QUERIES * padded, 0.0);
    s.queries.clear();
    s.queries.resize(QUERIES * d, 0.0);
    s.outputs.clear();
    s.outputs.resize(QUERIES * d, 0.0);

    for first in (0..len).step_by(QUERIES) {
        let rows = (len - first).min(QUERIES);
        for r in 0..rows {
            s.queries[r * d..][..d].copy_from_slice(row(first + r, 0));
        }
        s.queries[rows * d..].fill(0.0);
        scores(isa, &s.keys, padded, &s.queries, d, &mut s.scores);
        softmax(isa, &mut s.scores[..rows * padded], padded, len);
        weighted_values(isa, &s.values, d, &s.scores, padded, len, &mut s.outputs);
        for r in 0..rows {
            let dst = (text.start + first + r) * out.stride + head * d;
            for (e, &v) in s.outputs[r * d..][..d].iter().enumerate() {
                // SAFETY: this job alone writes the columns of `head` in the rows of `text`,
                // and `attention` checked that `ctx` holds every row of every text.
                unsafe { *out.ptr.add(dst + e) = v };
            }
        }
    }
}

/// `scores[r][t] = queries[r] · keys[·][t]` for `QUERIES` rows and every padded token.
fn scores(isa: Isa, keys: &[f32], padded: usize, queries: &[f32], d: usize, scores: &mut [f32]) {
    assert!(keys.len() >= d * padded && queries.len() >= QUERIES * d && scores.len() >= QUERIES * padded);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX-512F (checked when `isa` was made) and the lengths were
        // checked above.
        Isa::Avx512Vnni => unsafe {
            super::attention_x86::scores_avx512::<QUERIES>(keys, padded, queries, d, scores)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX2 and FMA; lengths as above.
        Isa::Avx2 | Isa::AvxVnni => unsafe {
            super::attention_x86::scores_avx2::<QUERIES>(keys, padded, queries, d, scores)
        },
        _ => scores_portable(keys, padded, queries, d, scores),
    }
}

fn scores_portable(keys: &[f32], padded: usize, queries: &[f32], d: usize, scores: &mut [f32]) {
    for c in (0..padded).step_by(LANES) {
        let mut acc = [[0f32; LANES]; QUERIES];
        for e in 0..d {
            let k: &[f32; LANES] = keys[e * padded + c..][..LANES].try_into().unwrap();
            for (r, acc) in acc.iter_mut().enumerate() {
                let q = queries[r * d + e];
                for (a, &k) in acc.iter_mut().zip(k) {
                    *a += q * k;
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            scores[r * padded + c..][..LANES].copy_from_slice(acc);
        }
    }
}

/// `outputs[r] = Σ_t probabilities[r][t] · values[t]` over the `len` tokens.
fn weighted_values(
    isa: Isa,
    values: &[f32],
    d: usize,
    probs: &[f32],
    padded: usize,
    len: usize,
    outputs: &mut [f32],
) {
    assert!(values.len() >= len * d && probs.len() >= QUERIES * padded && len <= padded);
    assert!(outputs.len() >= QUERIES * d);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX-512F (checked when `isa` was made) and the lengths were
        // checked above.
        Isa::Avx512Vnni => unsafe {
            super::attention_x86::weighted_avx512::<QUERIES>(values, d, probs, padded, len, outputs)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX2 and FMA; lengths as above.
        Isa::Avx2 | Isa::AvxVnni => unsafe {
            super::attention_x86::weighted_avx2::<QUERIES>(values, d, probs, padded, len, outputs)
        },
        _ => weighted_portable(values, d, probs, padded, len, outputs),
    }
}

fn weighted_portable(
    values: &[f32],
    d: usize,
    probs: &[f32],
    padded: usize,
    len: usize,
    outputs: &mut [f32],
) {
    let p: [&[f32]; QUERIES] = std::array::from_fn(|r| &probs[r * padded..][..len]);
    for c in (0..d).step_by(LANES) {
        let mut acc = [[0f32; LANES]; QUERIES];
        for t in 0..len {
            let v: &[f32; LANES] = values[t * d + c..][..LANES].try_into().unwrap();
            for (acc, p) in acc.iter_mut().zip(&p) {
                for (a, &v) in acc.iter_mut().zip(v) {
                    *a += p[t] * v;
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            outputs[r * d + c..][..LANES].copy_from_slice(acc);
        }
    }
}

#[inline(always)]
fn softmax_body<const FMA: bool>(scores: &mut [f32], padded: usize, len: usize) {
    for row in scores.chunks_exact_mut(padded) {
        let row = &mut row[..len];
        let m = max(row);
        let mut lanes = [0f32; LANES];
        let mut chunks = row.chunks_exact_mut(LANES);
        for c in &mut chunks {
            let c: &mut [f32; LANES] = c.try_into().unwrap();
            for j in 0..LANES {
                c[j] = exp::<FMA>(c[j] - m);
                lanes[j] += c[j];
            }
        }
        let mut total = reduce(lanes, |a, b| a + b);
        let tail = chunks.into_remainder();
        for v in tail.iter_mut() {
            *v = exp::<FMA>(*v - m);
            total += *v;
        }
        let inv = 1.0 / total;
        for v in row.iter_mut() {
            *v = fmadd::<FMA>(*v, inv, 0.0);
        }
    }
}

multiversion!(
    /// Each row of `scores` (`padded` floats, of which the first `len` count) replaced by
    /// its softmax.
    fn softmax(scores: &mut [f32], padded: usize, len: usize) => softmax_body
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Attention in f64, the plain way.
    fn naive(qkv: &[f32], hidden: usize, heads: usize, text: Range<usize>) -> Vec<f64> {
        let d = hidden / heads;
        let at = |t: usize, part: usize, h: usize, e: usize| {
            qkv[t * 3 * hidden + part * hidden + h * d + e] as f64
        };
        let mut out = vec![0f64; text.len() * hidden];
        for h in 0..heads {
            for i in text.clone() {
                let scores: Vec<f64> = text
                    .clone()
                    .map(|j| (0..d).map(|e| at(i, 0, h, e) * at(j, 1, h, e)).sum::<f64>())
                    .collect();
                let m = scores.iter().cloned().fold(f64::MIN, f64::max);
                let total: f64 = scores.iter().map(|s| (s - m).exp()).sum();
                for (k, j) in text.clone().enumerate() {
                    let p = (scores[k] - m).exp() / total;
                    for e in 0..d {
                        out[(i - text.start) * hidden + h * d + e] += p * at(j, 2, h, e);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_instruction_set_attends_like_the_definition_within_each_text() {
        let (hidden, heads) = (64, 2);
        let texts = [0..1, 1..6, 6..43];
        let tokens = 43;
        let qkv: Vec<f32> =
            (0..tokens * 3 * hidden).map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 300.0).collect();
        for isa in Isa::available() {
            let mut ctx = vec![0f32; tokens * hidden];
            attention(isa, &qkv, hidden, heads, &texts, &mut ctx);
            for text in &texts {
                let expected = naive(&qkv, hidden, heads, text.clone());
                let got = &ctx[text.start * hidden..text.end * hidden];
                for (g, e) in got.iter().zip(&expected) {
                    assert!((*g as f64 - e).abs() < 1e-5, "{isa:?} {text:?}: {g} vs {e}");
                }
            }
        }
    }
}
