//! The row-wise steps between the products: residual add and layer normalisation, GELU,
//! each followed by the int8 quantisation of the next product's input, and the fast `exp`
//! and `erf` they need. Written as plain loops over 16-float lanes so that the compiler
//! vectorises them; `multiversion!` compiles each for AVX-512, AVX2 and the baseline.

use super::Isa;
use super::format::QK;
use super::packed::quantize_row;

/// Floats per partial-sum lane set: one AVX-512 register, two AVX2 ones.
pub(super) const LANES: usize = 16;

/// `a × b + c`, fused when the target has FMA (a plain multiply-add otherwise, since a
/// software fused multiply-add would be far slower).
#[inline(always)]
pub(super) fn fmadd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// `e^x`, relative error below 2e-7: `x = n·ln2 + r` with `|r| ≤ ln2/2`, a degree-7
/// polynomial for `e^r`, and `2^n` built in the exponent bits. Inputs are clamped to
/// [-87, 88], where `2^n` stays a normal float; softmax and `erf` never need more.
#[inline(always)]
pub(super) fn exp<const FMA: bool>(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0;
    // ln 2 in two parts (Cody–Waite), so that `x - n·ln2` loses no bits.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    // The rounded integer is in `shifted`'s low mantissa bits: read it with integer
    // operations rather than a float-to-int conversion, whose saturating form the compiler
    // does not vectorise.
    let n_int = shifted.to_bits() as i32 - ROUND.to_bits() as i32;
    let r = fmadd::<FMA>(-n, LN2_LO, fmadd::<FMA>(-n, LN2_HI, x));
    let mut p = 1.0 / 5040.0;
    for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = fmadd::<FMA>(p, r, c);
    }
    p * f32::from_bits(((n_int + 127) as u32) << 23)
}

/// The error function, absolute error below 2e-7 (Abramowitz and Stegun 7.1.26).
#[inline(always)]
fn erf<const FMA: bool>(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / fmadd::<FMA>(0.327_591_1, a, 1.0);
    let mut p = 1.061_405_4;
    for c in [-1.453_152, 1.421_413_8, -0.284_496_74, 0.254_829_6] {
        p = fmadd::<FMA>(p, t, c);
    }
    let y = 1.0 - p * t * exp::<FMA>(-a * a);
    y.copysign(x)
}

/// GELU in its exact form, `x/2 · (1 + erf(x/√2))`, as BERT and the reference use it.
#[inline(always)]
pub(super) fn gelu<const FMA: bool>(x: f32) -> f32 {
    0.5 * x * (1.0 + erf::<FMA>(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The sum of `xs`, in 16 interleaved partial sums (vectorisable, unlike a running sum).
#[inline(always)]
pub(super) fn sum(xs: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        let c: &[f32; LANES] = c.try_into().unwrap();
        for j in 0..LANES {
            lanes[j] += c[j];
        }
    }
    reduce(lanes, |a, b| a + b) + tail
}

/// The largest of `xs` (−∞ when empty; NaNs are not expected).
#[inline(always)]
pub(super) fn max(xs: &[f32]) -> f32 {
    let larger = |a: f32, b: f32| if a > b { a } else { b };
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder().iter().fold(f32::NEG_INFINITY, |m, &v| larger(m, v));
    for c in chunks {
        let c: &[f32; LANES] = c.try_into().unwrap();
        for j in 0..LANES {
            lanes[j] = larger(lanes[j], c[j]);
        }
    }
    larger(reduce(lanes, larger), tail)
}

/// Folds 16 lanes pairwise, halving the width each step (a few vector operations).
#[inline(always)]
pub(super) fn reduce(mut lanes: [f32; LANES], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut width = LANES / 2;
    while width > 0 {
        for j in 0..width {
            lanes[j] = f(lanes[j], lanes[j + width]);
        }
        width /= 2;
    }
    lanes[0]
}

/// Layer normalisation of each row of `x` (of `weight.len()` floats) after adding the same
/// row of `residual` (when not empty); then, when `values` is not empty, the rows quantised.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn add_norm_quantize_body<const FMA: bool>(
    x: &mut [f32],
    residual: &[f32],
    weight: &[f32],
    bias: &[f32],
    eps: f32,
    values: &mut [i8],
    scales: &mut [f32],
    offsets: &mut [i32],
) {
    let h = weight.len();
    for (i, row) in x.chunks_exact_mut(h).enumerate() {
        if !residual.is_empty() {
            for (v, r) in row.iter_mut().zip(&residual[i * h..(i + 1) * h]) {
                *v += r;
            }
        }
        let mean = sum(row) / h as f32;
        let mut lanes = [0f32; LANES];
        for c in row.chunks_exact(LANES) {
            let c: &[f32; LANES] = c.try_into().unwrap();
            for j in 0..LANES {
                lanes[j] = fmadd::<FMA>(c[j] - mean, c[j] - mean, lanes[j]);
            }
        }
        let tail: f32 = row.chunks_exact(LANES).remainder().iter().map(|v| (v - mean) * (v - mean)).sum();
        let var = (reduce(lanes, |a, b| a + b) + tail) / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
            *v = fmadd::<FMA>((*v - mean) * inv, *w, *b);
        }
        if !values.is_empty() {
            let nb = h / QK;
            quantize_row(
                row,
                &mut values[i * h..(i + 1) * h],
                &mut scales[i * nb..(i + 1) * nb],
                &mut offsets[i * nb..(i + 1) * nb],
            );
        }
    }
}

multiversion!(
    /// `x = LayerNorm(x + residual)` row by row, then the rows quantised into `values`,
    /// `scales` and `offsets` (skipped when `values` is empty).
    pub(super) fn add_norm_quantize(
        x: &mut [f32],
        residual: &[f32],
        weight: &[f32],
        bias: &[f32],
        eps: f32,
        values: &mut [i8],
        scales: &mut [f32],
        offsets: &mut [i32]
    ) => add_norm_quantize_body
);

#[inline(always)]
fn gelu_quantize_body<const FMA: bool>(
    x: &[f32],
    values: &mut [i8],
    scales: &mut [f32],
    offsets: &mut [i32],
) {
    let mut block = [0f32; QK];
    for (((x, q), s), o) in x
        .chunks_exact(QK)
        .zip(values.chunks_exact_mut(QK))
        .zip(scales.chunks_exact_mut(1))
        .zip(offsets.chunks_exact_mut(1))
    {
        for (b, &v) in block.iter_mut().zip(x) {
            *b = gelu::<FMA>(v);
        }
        quantize_row(&block, q, s, o);
    }
}

multiversion!(
    /// GELU of every value of `x`, quantised into `values`, `scales` and `offsets`; the
    /// activated floats themselves are not needed and never stored.
    pub(super) fn gelu_quantize(x: &[f32], values: &mut [i8], scales: &mut [f32], offsets: &mut [i32]) => gelu_quantize_body
);

#[inline(always)]
fn quantize_body<const FMA: bool>(x: &[f32], values: &mut [i8], scales: &mut [f32], offsets: &mut [i32]) {
    quantize_row(x, values, scales, offsets);
}

multiversion!(
    /// `x` quantised into `values`, `scales` and `offsets`.
    pub(super) fn quantize(x: &[f32], values: &mut [i8], scales: &mut [f32], offsets: &mut [i32]) => quantize_body
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_matches_the_standard_library() {
        for i in -8700..=8800 {
            let x = i as f32 / 100.0;
            let (fast, exact) = (exp::<false>(x), x.exp());
            assert!(((fast - exact) / exact).abs() < 3e-7, "exp({x}) = {fast}, expected {exact}");
            assert!(((exp::<true>(x) - exact) / exact).abs() < 3e-7);
        }
        assert_eq!(exp::<false>(-1e9), exp::<false>(-87.0));
    }

    #[test]
    fn gelu_matches_its_definition() {
        // erf by its Taylor series in f64, accurate for |z| ≤ 3 where the series converges fast.
        fn erf64(z: f64) -> f64 {
            let (mut term, mut total) = (z, z);
            for n in 1..200 {
                term *= -z * z / n as f64;
                total += term / (2 * n + 1) as f64;
            }
            total * 2.0 / std::f64::consts::PI.sqrt()
        }
        for i in -400..=400 {
            let x = i as f32 / 100.0;
            let exact = 0.5 * x as f64 * (1.0 + erf64(x as f64 / std::f64::consts::SQRT_2));
            // erf's 2e-7, scaled by x/2, plus the rounding of an f32 near x.
            let tolerance = 6e-7 * f64::from(x.abs().max(1.0));
            assert!((gelu::<false>(x) as f64 - exact).abs() < tolerance, "gelu({x})");
            assert!((gelu::<true>(x) as f64 - exact).abs() < tolerance, "gelu({x})");
        }
        assert_eq!(gelu::<false>(-20.0), 0.0);
        assert_eq!(gelu::<false>(20.0), 20.0);
    }

    #[test]
    fn every_instruction_set_normalises_alike() {
        let h = 64;
        let x0: Vec<f32> = (0..3 * h).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        let residual: Vec<f32> = (0..3 * h).map(|i| (i % 5) as f32).collect();
        let weight: Vec<f32> = (0..h).map(|i| 1.0 + i as f32 / 100.0).collect();
        let bias: Vec<f32> = (0..h).map(|i| i as f32 / 50.0).collect();
        let run = |isa| {
            let mut x = x0.clone();
            let (mut q, mut s, mut o) = (vec![0i8; 3 * h], vec![0f32; 6], vec![0i32; 6]);
            add_norm_quantize(isa, &mut x, &residual, &weight, &bias, 1e-12, &mut q, &mut s, &mut o);
            (x, q)
        };
        let (reference, _) = run(Isa::Scalar);
        for isa in Isa::available() {
            let (x, q) = run(isa);
            assert!(x.iter().zip(&reference).all(|(a, b)| (a - b).abs() < 1e-4), "{isa:?}");
            assert!(q.iter().all(|&v| v > -128), "{isa:?}");
        }
    }
}
