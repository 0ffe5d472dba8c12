//! The f32 parts of the encoder, compiled three times on x86-64 (for AVX-512, for AVX2 with
//! FMA, and for the baseline; the one run is chosen with the int8 kernel), written as plain
//! loops the compiler vectorizes.

/// A layer norm's parameters.
pub(crate) struct Norm {
    pub(crate) gamma: Vec<f32>,
    pub(crate) beta: Vec<f32>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Activation {
    /// BERT's exact GELU (erf).
    Gelu,
    /// The tanh approximation.
    GeluTanh,
    Relu,
}

impl Activation {
    pub(crate) fn parse(s: &str) -> Option<Activation> {
        match s {
            "gelu" => Some(Activation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Some(Activation::GeluTanh),
            "relu" => Some(Activation::Relu),
            _ => None,
        }
    }
}

/// The widest vector unit the f32 code may use here: the int8 kernel's (so
/// `POND_EMBED_KERNEL=avx2` runs the whole encoder as an AVX2 laptop would).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Level {
    Avx512,
    Avx2,
    Baseline,
}

fn level() -> Level {
    static LEVEL: std::sync::OnceLock<Level> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        // Every feature a version is compiled with is checked here (the kernel's probe
        // checks only its own).
        #[cfg(target_arch = "x86_64")]
        {
            use crate::cpu::Kernel;
            use std::arch::is_x86_feature_detected as has;
            let kernel = Kernel::detect();
            let avx2 = kernel != Kernel::Portable && has!("avx2") && has!("fma");
            if avx2
                && kernel == Kernel::Avx512Vnni
                && has!("avx512f")
                && has!("avx512bw")
                && has!("avx512vl")
            {
                return Level::Avx512;
            }
            if avx2 {
                return Level::Avx2;
            }
        }
        Level::Baseline
    })
}

macro_rules! versions {
    ($($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $body:block)*) => {
        $(
            $(#[$meta])*
            pub(crate) fn $name($($arg: $ty),*) {
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
                    unsafe fn wide($($arg: $ty),*) $body
                    #[target_feature(enable = "avx2,fma")]
                    unsafe fn fast($($arg: $ty),*) $body
                    match level() {
                        // SAFETY: level() found the features on this CPU.
                        Level::Avx512 => return unsafe { wide($($arg),*) },
                        Level::Avx2 => return unsafe { fast($($arg),*) },
                        Level::Baseline => {}
                    }
                }
                $body
            }
        )*
    };
}

versions! {
    /// `x = norm(x + add)` row by row.
    fn layer_norm(x: &mut [f32], add: Option<&[f32]>, norm: &Norm, h: usize, eps: f32) {
        for (r, row) in x.chunks_exact_mut(h).enumerate() {
            if let Some(add) = add {
                for (v, a) in row.iter_mut().zip(&add[r * h..(r + 1) * h]) {
                    *v += a;
                }
            }
            let mean = lanes(row, 0.0, sum, sum) / h as f32;
            let var = lanes(row, 0.0, |a, v| a + (v - mean) * (v - mean), sum) / h as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }

    fn activate(x: &mut [f32], act: Activation) {
        match act {
            Activation::Gelu => {
                for v in x.iter_mut() {
                    *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
                }
            }
            Activation::GeluTanh => {
                for v in x.iter_mut() {
                    let u = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
                    *v = 0.5 * *v * (1.0 + tanh(u));
                }
            }
            Activation::Relu => {
                for v in x.iter_mut() {
                    *v = v.max(0.0);
                }
            }
        }
    }

    /// Each row of `len` scores replaced by `e^(s - max)`, and `inv` by the inverse of each
    /// row's sum (what makes the row a softmax: the caller scales the product with V, `d`
    /// values a row, instead of the `len` probabilities).
    fn exp_rows(scores: &mut [f32], len: usize, inv: &mut [f32]) {
        for (row, inv) in scores.chunks_exact_mut(len).zip(inv.iter_mut()) {
            let max = lanes(row, f32::NEG_INFINITY, f32::max, f32::max);
            let mut acc = [0f32; 16];
            let mut chunks = row.chunks_exact_mut(16);
            for c in &mut chunks {
                for (a, s) in acc.iter_mut().zip(c.iter_mut()) {
                    *s = exp(*s - max);
                    *a += *s;
                }
            }
            let mut total = 0.0;
            for s in chunks.into_remainder() {
                *s = exp(*s - max);
                total += *s;
            }
            *inv = 1.0 / (total + acc.iter().sum::<f32>());
        }
    }

    /// `rows` rows of `d` values, each `stride` apart in `out`, scaled by `scale`, one a row.
    fn scale_rows(out: &mut [f32], d: usize, stride: usize, scale: &[f32]) {
        for (i, &s) in scale.iter().enumerate() {
            out[i * stride..i * stride + d].iter_mut().for_each(|v| *v *= s);
        }
    }

    /// Quantize `x` (rows of `k`) into `q` (rows of `kp`, the rest left as it is) and
    /// the row scales: per row, symmetric, in -127..=127, with `offset` added (128 makes
    /// them unsigned bytes for `vpdpbusd`).
    fn quantize(x: &[f32], k: usize, q: &mut [i8], kp: usize, scales: &mut [f32], offset: bool) {
        for ((row, out), s) in x.chunks_exact(k).zip(q.chunks_exact_mut(kp)).zip(scales.iter_mut()) {
            let max = lanes(row, 0.0, |m, v| m.max(v.abs()), f32::max);
            let scale = if max > 0.0 && max.is_finite() { max / 127.0 } else { 1.0 };
            let inv = 1.0 / scale;
            let add = if offset { 128 } else { 0 };
            for (o, x) in out[..k].iter_mut().zip(row) {
                // Round to nearest: adding 1.5 x 2^23 leaves the integer in the low bits.
                let r = (x * inv).clamp(-127.0, 127.0) + ROUND;
                *o = (r.to_bits() as i32 - ROUND_BITS + add) as u8 as i8;
            }
            if offset {
                out[k..].iter_mut().for_each(|o| *o = 0x80u8 as i8);
            }
            *s = scale;
        }
    }

    /// One row of a product's i32 sums to floats: `(acc - offset x sum) x row scale x
    /// output scale + bias`.
    fn dequantize(acc: &[i32], row_scale: f32, offset: i32, sums: &[i32], scales: &[f32], bias: &[f32], out: &mut [f32]) {
        for ((((o, &a), &s), &w), &b) in out.iter_mut().zip(acc).zip(sums).zip(scales).zip(bias) {
            *o = (a - offset * s) as f32 * row_scale * w + b;
        }
    }
}

/// Adding this to a float in +-2^22 rounds it to an integer held in the low mantissa bits.
const ROUND: f32 = 12_582_912.0;
const ROUND_BITS: i32 = 0x4B40_0000;

/// Fold `x` with `step` in sixteen independent lanes (so the loop vectorizes, one AVX-512
/// register or two AVX2 ones), then the lanes with `join`.
#[inline(always)]
fn lanes(
    x: &[f32],
    init: f32,
    step: impl Fn(f32, f32) -> f32,
    join: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut acc = [init; 16];
    let chunks = x.chunks_exact(16);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a = step(*a, *v);
        }
    }
    let mut r = tail.iter().fold(init, |a, &v| step(a, v));
    for a in acc {
        r = join(r, a);
    }
    r
}

fn sum(a: f32, b: f32) -> f32 {
    a + b
}

/// `e^x` to about 2 ulp for x in [-87, 88] (0 below), in operations that vectorize.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // n = round(x / ln 2) as a float and as the bits of an integer (no conversion
    // instruction, which would keep the loop scalar).
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let bits = t.to_bits() as i32 - ROUND_BITS;
    let n = t - ROUND;
    // x - n ln 2 in two parts, for precision.
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (0.166_666_67
                    + r * (0.041_666_668 + r * (0.008_333_334 + r * 0.001_388_889)))));
    p * f32::from_bits(((bits + 127) as u32) << 23)
}

/// erf to about 1.5e-7 (Abramowitz and Stegun 7.1.26).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let y = 1.0
        - t * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))))
            * exp(-a * a);
    y.copysign(x)
}

#[inline(always)]
fn tanh(x: f32) -> f32 {
    let e = exp(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

#[cfg(test)]
mod tests {
    #[test]
    fn exp_and_erf_match_the_library() {
        let mut worst = (0f32, 0f32);
        for i in -8700..=8800 {
            let x = i as f32 / 100.0;
            let rel = (super::exp(x) - x.exp()).abs() / x.exp();
            worst.0 = worst.0.max(rel);
        }
        for i in -600..=600 {
            let x = i as f32 / 100.0;
            // erf through f64's library: std has no erf, so against a series.
            let want = erf_series(x as f64) as f32;
            worst.1 = worst.1.max((super::erf(x) - want).abs());
        }
        assert!(worst.0 < 1e-6 && worst.1 < 5e-7, "{worst:?}");
        assert!(super::exp(-1000.0) < 1e-37 && super::exp(1000.0).is_finite());
    }

    fn erf_series(x: f64) -> f64 {
        if x.abs() > 5.0 {
            return x.signum();
        }
        // Maclaurin series, exact enough in f64 for |x| <= 5.
        let mut sum = 0.0;
        let mut term = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 || n < 5.0 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
            if n > 200.0 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }
}
