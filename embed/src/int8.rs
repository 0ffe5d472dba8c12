//! Int8 matrix products for the encoder's linear layers.
//!
//! Weights are quantized per output (symmetric, one f32 scale each) when a model is imported;
//! activations per row as they arrive. Products accumulate in i32 and each result gets its
//! row's and its output's scale once. The weights are packed at load in tiles of 16 outputs
//! by 4 inputs (64 bytes: one AVX-512 register), the shape `vpdpbusd` consumes.
//!
//! The kernel is chosen at run time: AVX-512 VNNI (`vpdpbusd`, 64 products an instruction:
//! activations offset to unsigned, the offset taken back through each output's weight sum),
//! AVX2 (`vpmaddubsw` on |w| and sign(a, w), which cannot saturate with values in -127..=127),
//! and portable Rust elsewhere (aarch64, old x86).
//! `POND_EMBED_KERNEL=avx2|portable` forces a narrower one (`crate::cpu`).
//!
//! Threads: a product of fewer than `PARALLEL_MIN_MACS` multiply-adds (a query of a few
//! tokens) runs on the calling thread; a larger one splits its rows over rayon's threads in
//! blocks, each block quantizing its own rows into thread-local scratch and walking the
//! weights a `PANEL_BYTES` panel at a time, so a layer larger than L2 is read from memory
//! once per block of rows.

use rayon::prelude::*;
use std::ops::Range;

/// Outputs per packed tile.
const TILE: usize = 16;
/// Rows of one AVX-512 micro-kernel call, and tiles (of 16 outputs) it covers.
const MR512: usize = 6;
const NT512: usize = 4;
/// Rows of one AVX2 micro-kernel call (one tile).
const MR256: usize = 4;
/// Weight bytes the rows meet before the next panel: well inside a core's L2 (512 KB on
/// small AMD and Intel cores), leaving room for the activation rows.
const PANEL_BYTES: usize = 192 * 1024;
/// Below this many products a matrix product runs on the calling thread: a query of a few
/// tokens gains nothing from a second core and would pay for the hand-over.
const PARALLEL_MIN_MACS: usize = 1 << 22;

pub use crate::cpu::Kernel;

impl Kernel {
    /// The offset added to activations so the kernel can read them as unsigned bytes.
    fn offset(self) -> i32 {
        match self {
            Kernel::Avx512Vnni => 128,
            Kernel::Avx2 | Kernel::Portable => 0,
        }
    }
}

/// Symmetric per-row quantization of row-major `w` with rows of `k` values: the int8 values
/// (in -127..=127) and one scale per row.
pub fn quantize_rows(w: &[f32], k: usize) -> (Vec<i8>, Vec<f32>) {
    let rows = w.len() / k.max(1);
    let mut q = vec![0i8; rows * k];
    let mut scales = vec![0f32; rows];
    for (r, (row, out)) in w.chunks_exact(k).zip(q.chunks_exact_mut(k)).enumerate() {
        let scale = quantize_row(row, out);
        scales[r] = scale;
    }
    (q, scales)
}

/// Quantize one row into `out`, returning its scale (1 for a row of zeros).
fn quantize_row(row: &[f32], out: &mut [i8]) -> f32 {
    let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 && max.is_finite() {
        max / 127.0
    } else {
        1.0
    };
    let inv = 1.0 / scale;
    for (o, x) in out.iter_mut().zip(row) {
        *o = (x * inv).round().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// A linear layer `y = x W^T + b` with int8 weights, packed for the kernels.
pub struct QLinear {
    /// Outputs and inputs.
    n: usize,
    k: usize,
    /// Inputs padded to a multiple of 4.
    kp: usize,
    /// `[tile][kp / 4][16 outputs][4 inputs]`, zero past `n` and `k`.
    packed: Vec<i8>,
    /// Per output: the weights' scale and the sum of its int8 weights.
    scales: Vec<f32>,
    sums: Vec<i32>,
    bias: Vec<f32>,
}

impl QLinear {
    /// From int8 weights `[n][k]` (row-major, one output a row), their per-row scales and
    /// the bias.
    pub fn new(q: &[i8], scales: &[f32], bias: Vec<f32>, n: usize, k: usize) -> QLinear {
        assert_eq!(q.len(), n * k, "weights of {n} x {k}");
        assert_eq!((scales.len(), bias.len()), (n, n), "scales and bias of {n}");
        let kp = k.div_ceil(4) * 4;
        let tiles = n.div_ceil(TILE);
        let mut packed = vec![0i8; tiles * TILE * kp];
        for o in 0..n {
            let (t, j) = (o / TILE, o % TILE);
            for (i, &w) in q[o * k..(o + 1) * k].iter().enumerate() {
                let (g, e) = (i / 4, i % 4);
                packed[((t * (kp / 4) + g) * TILE + j) * 4 + e] = w;
            }
        }
        let sums = (0..n)
            .map(|o| q[o * k..(o + 1) * k].iter().map(|&w| w as i32).sum())
            .collect();
        QLinear {
            n,
            k,
            kp,
            packed,
            scales: scales.to_vec(),
            sums,
            bias,
        }
    }

    /// Quantize f32 weights `[n][k]`.
    pub fn quantize(w: &[f32], bias: Vec<f32>, n: usize, k: usize) -> QLinear {
        let (q, scales) = quantize_rows(w, k);
        QLinear::new(&q, &scales, bias, n, k)
    }

    pub fn outputs(&self) -> usize {
        self.n
    }

    /// `out = x W^T + b` for `m` rows of `x` (`[m][k]`), `out` being `[m][n]`.
    pub fn forward(&self, x: &[f32], m: usize, out: &mut [f32]) {
        self.forward_with(Kernel::detect(), x, m, out)
    }

    pub(crate) fn forward_with(&self, kernel: Kernel, x: &[f32], m: usize, out: &mut [f32]) {
        assert_eq!(x.len(), m * self.k);
        assert_eq!(out.len(), m * self.n);
        if m == 0 {
            return;
        }
        let step = match kernel {
            Kernel::Avx512Vnni => MR512,
            Kernel::Avx2 => MR256,
            Kernel::Portable => 1,
        };
        let threads = rayon::current_num_threads();
        if m * self.n * self.k < PARALLEL_MIN_MACS || threads < 2 || m <= step {
            self.block(kernel, x, out);
            return;
        }
        // A few row blocks per thread, each a multiple of the kernel's rows; each block
        // quantizes its own rows.
        let per = m.div_ceil(threads * 4).div_ceil(step) * step;
        out.par_chunks_mut(per * self.n)
            .zip(x.par_chunks(per * self.k))
            .for_each(|(o, x)| self.block(kernel, x, o));
    }

    /// The product for the rows of `x` into `out`: the rows quantized (into this thread's
    /// scratch), then the kernel.
    fn block(&self, kernel: Kernel, x: &[f32], out: &mut [f32]) {
        thread_local! {
            static ACTS: std::cell::RefCell<(Vec<i8>, Vec<f32>)> = const {
                std::cell::RefCell::new((Vec::new(), Vec::new()))
            };
        }
        let m = x.len() / self.k;
        ACTS.with_borrow_mut(|(q, scales)| {
            q.resize(m * self.kp, 0);
            scales.resize(m, 0.0);
            // Rows of `kp` bytes (whatever pads them meets zero weights).
            crate::f32k::quantize(
                x,
                self.k,
                &mut q[..m * self.kp],
                self.kp,
                &mut scales[..m],
                kernel.offset() != 0,
            );
            let acts = Acts {
                q: &q[..m * self.kp],
                scales: &scales[..m],
            };
            self.rows(kernel, &acts, out);
        });
    }

    /// The product of the quantized rows `acts` into `out`, a panel of weights at a time:
    /// every row meets one panel (sized to stay in a core's L2) before the next is read, so
    /// a matrix larger than the cache (E5's 384x1536 layers are 590 KB in int8) is read
    /// from memory once per block of rows instead of once per kernel call.
    fn rows(&self, kernel: Kernel, acts: &Acts, out: &mut [f32]) {
        let tiles = self.n.div_ceil(TILE);
        let tile_bytes = TILE * self.kp;
        let panel = (PANEL_BYTES / tile_bytes).max(1);
        for first in (0..tiles).step_by(panel) {
            self.panel(kernel, acts, first..(first + panel).min(tiles), out);
        }
    }

    /// The product of the quantized rows `acts` with the weight tiles `panel` into `out`.
    fn panel(&self, kernel: Kernel, acts: &Acts, panel: Range<usize>, out: &mut [f32]) {
        let m = out.len() / self.n;
        let tile_bytes = TILE * self.kp;
        let mut acc = [0i32; MR512 * NT512 * TILE];
        let mut r = 0;
        while r < m {
            match kernel {
                #[cfg(target_arch = "x86_64")]
                Kernel::Avx512Vnni => {
                    let rows = (m - r).min(MR512);
                    let mut t = panel.start;
                    while t < panel.end {
                        let nt = (panel.end - t).min(NT512);
                        // SAFETY: the kernel was detected on this CPU; the pointers cover
                        // `rows` activation rows of `kp` bytes and `nt` tiles of weights.
                        unsafe {
                            x86::vnni512_dispatch(
                                rows,
                                nt,
                                acts.q[r * self.kp..].as_ptr(),
                                self.kp,
                                self.packed[t * tile_bytes..].as_ptr(),
                                tile_bytes,
                                &mut acc,
                            )
                        };
                        self.store(kernel, acts, r, rows, t, nt, &acc, out);
                        t += nt;
                    }
                    r += rows;
                }
                #[cfg(target_arch = "x86_64")]
                Kernel::Avx2 => {
                    let rows = (m - r).min(MR256);
                    for t in panel.clone() {
                        // SAFETY: as above, one tile.
                        unsafe {
                            x86::avx2_dispatch(
                                rows,
                                acts.q[r * self.kp..].as_ptr(),
                                self.kp,
                                self.packed[t * tile_bytes..].as_ptr(),
                                &mut acc,
                            )
                        };
                        self.store(kernel, acts, r, rows, t, 1, &acc, out);
                    }
                    r += rows;
                }
                _ => {
                    let a = &acts.q[r * self.kp..(r + 1) * self.kp];
                    for t in panel.clone() {
                        portable(
                            a,
                            &self.packed[t * tile_bytes..(t + 1) * tile_bytes],
                            &mut acc,
                        );
                        self.store(kernel, acts, r, 1, t, 1, &acc, out);
                    }
                    r += 1;
                }
            }
        }
    }

    /// Scale the accumulators of `rows` rows from `row` by `nt` tiles (laid out
    /// `[row][nt * 16]`) from tile `t` into `out`.
    #[allow(clippy::too_many_arguments)]
    fn store(
        &self,
        kernel: Kernel,
        acts: &Acts,
        row: usize,
        rows: usize,
        t: usize,
        nt: usize,
        acc: &[i32],
        out: &mut [f32],
    ) {
        let offset = kernel.offset();
        let c0 = t * TILE;
        let c1 = ((t + nt) * TILE).min(self.n);
        let width = nt * TILE;
        for i in 0..rows {
            let o = &mut out[(row + i) * self.n..(row + i + 1) * self.n];
            crate::f32k::dequantize(
                &acc[i * width..i * width + (c1 - c0)],
                acts.scales[row + i],
                offset,
                &self.sums[c0..c1],
                &self.scales[c0..c1],
                &self.bias[c0..c1],
                &mut o[c0..c1],
            );
        }
    }
}

/// Quantized activation rows.
struct Acts<'a> {
    q: &'a [i8],
    scales: &'a [f32],
}

/// One activation row against one tile: 16 sums into `acc[..16]`.
fn portable(a: &[i8], tile: &[i8], acc: &mut [i32]) {
    let mut s = [0i32; TILE];
    for (g, a4) in a.chunks_exact(4).enumerate() {
        let w = &tile[g * TILE * 4..(g + 1) * TILE * 4];
        for (j, sj) in s.iter_mut().enumerate() {
            let w4 = &w[j * 4..j * 4 + 4];
            *sj += a4[0] as i32 * w4[0] as i32
                + a4[1] as i32 * w4[1] as i32
                + a4[2] as i32 * w4[2] as i32
                + a4[3] as i32 * w4[3] as i32;
        }
    }
    acc[..TILE].copy_from_slice(&s);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{MR256, MR512, NT512, TILE};
    use std::arch::x86_64::*;

    /// `rows` (1..=6) activation rows (offset to unsigned) against `nt` (1..=4) tiles.
    ///
    /// # Safety
    /// AVX-512 F, BW and VNNI present; `a` covers `rows` rows of `lda` bytes, `w` covers `nt`
    /// tiles of `tile_bytes`.
    pub(super) unsafe fn vnni512_dispatch(
        rows: usize,
        nt: usize,
        a: *const i8,
        lda: usize,
        w: *const i8,
        tile_bytes: usize,
        acc: &mut [i32; MR512 * NT512 * TILE],
    ) {
        macro_rules! go {
            ($($r:literal),*) => {
                match (rows, nt) {
                    $(
                        ($r, 4) => vnni512::<$r, 4>(a, lda, w, tile_bytes, acc),
                        ($r, 3) => vnni512::<$r, 3>(a, lda, w, tile_bytes, acc),
                        ($r, 2) => vnni512::<$r, 2>(a, lda, w, tile_bytes, acc),
                        ($r, 1) => vnni512::<$r, 1>(a, lda, w, tile_bytes, acc),
                    )*
                    _ => unreachable!("{rows} rows by {nt} tiles"),
                }
            };
        }
        go!(1, 2, 3, 4, 5, 6)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn vnni512<const R: usize, const T: usize>(
        a: *const i8,
        lda: usize,
        w: *const i8,
        tile_bytes: usize,
        out: &mut [i32; MR512 * NT512 * TILE],
    ) {
        let groups = lda / 4;
        let mut acc = [[_mm512_setzero_si512(); T]; R];
        for g in 0..groups {
            let mut wv = [_mm512_setzero_si512(); T];
            for (t, v) in wv.iter_mut().enumerate() {
                *v = _mm512_loadu_si512(w.add(t * tile_bytes + g * 64) as *const _);
            }
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_epi32(std::ptr::read_unaligned(
                    a.add(r * lda + g * 4) as *const i32
                ));
                for (acc_rt, wt) in acc_r.iter_mut().zip(&wv) {
                    *acc_rt = _mm512_dpbusd_epi32(*acc_rt, av, *wt);
                }
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            for (t, v) in acc_r.iter().enumerate() {
                _mm512_storeu_si512(out.as_mut_ptr().add(r * T * TILE + t * TILE) as *mut _, *v);
            }
        }
    }

    /// `rows` (1..=4) signed activation rows against one tile.
    ///
    /// # Safety
    /// AVX2 present; `a` covers `rows` rows of `lda` bytes, `w` one tile.
    pub(super) unsafe fn avx2_dispatch(
        rows: usize,
        a: *const i8,
        lda: usize,
        w: *const i8,
        acc: &mut [i32; MR512 * NT512 * TILE],
    ) {
        match rows {
            4 => avx2::<4>(a, lda, w, acc),
            3 => avx2::<3>(a, lda, w, acc),
            2 => avx2::<2>(a, lda, w, acc),
            1 => avx2::<1>(a, lda, w, acc),
            _ => unreachable!("{rows} rows"),
        }
        const _: () = assert!(MR256 == 4);
    }

    #[target_feature(enable = "avx2")]
    unsafe fn avx2<const R: usize>(
        a: *const i8,
        lda: usize,
        w: *const i8,
        out: &mut [i32; MR512 * NT512 * TILE],
    ) {
        let groups = lda / 4;
        let ones = _mm256_set1_epi16(1);
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for g in 0..groups {
            let w0 = _mm256_loadu_si256(w.add(g * 64) as *const _);
            let w1 = _mm256_loadu_si256(w.add(g * 64 + 32) as *const _);
            let (u0, u1) = (_mm256_abs_epi8(w0), _mm256_abs_epi8(w1));
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let av = _mm256_set1_epi32(std::ptr::read_unaligned(
                    a.add(r * lda + g * 4) as *const i32
                ));
                // |w| x (a with w's sign) = a x w, in pairs that stay within i16.
                let p0 = _mm256_maddubs_epi16(u0, _mm256_sign_epi8(av, w0));
                let p1 = _mm256_maddubs_epi16(u1, _mm256_sign_epi8(av, w1));
                acc_r[0] = _mm256_add_epi32(acc_r[0], _mm256_madd_epi16(p0, ones));
                acc_r[1] = _mm256_add_epi32(acc_r[1], _mm256_madd_epi16(p1, ones));
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            let o = out.as_mut_ptr().add(r * TILE);
            _mm256_storeu_si256(o as *mut _, acc_r[0]);
            _mm256_storeu_si256(o.add(8) as *mut _, acc_r[1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// Every kernel this CPU has gives the exact integer result the portable one does, at
    /// shapes with row, tile and input tails, and stays close to the f32 product.
    #[test]
    fn every_kernel_matches_the_f32_product() {
        let mut kernels = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                kernels.push(Kernel::Avx2);
            }
            if is_x86_feature_detected!("avx512vnni") && is_x86_feature_detected!("avx512bw") {
                kernels.push(Kernel::Avx512Vnni);
            }
        }
        for &(m, n, k) in &[
            (1, 16, 4),
            (7, 40, 30),
            (13, 96, 384),
            (64, 1536, 384),
            (5, 384, 1536),
        ] {
            let w = values(n * k, 1);
            let x = values(m * k, 2);
            let bias = values(n, 3);
            let lin = QLinear::quantize(&w, bias.clone(), n, k);
            let mut want = vec![0f32; m * n];
            for r in 0..m {
                for c in 0..n {
                    let dot: f32 = (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum();
                    want[r * n + c] = dot + bias[c];
                }
            }
            let mut first: Option<Vec<f32>> = None;
            for &kernel in &kernels {
                let mut got = vec![0f32; m * n];
                lin.forward_with(kernel, &x, m, &mut got);
                let err = got
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0f32, f32::max);
                let scale = want.iter().fold(0f32, |a, b| a.max(b.abs()));
                assert!(
                    err < 0.02 * scale,
                    "{kernel:?} {m}x{n}x{k}: error {err} of {scale}"
                );
                match &first {
                    None => first = Some(got),
                    Some(f) => {
                        let worst = f
                            .iter()
                            .zip(&got)
                            .map(|(a, b)| (a - b).abs())
                            .fold(0f32, f32::max);
                        assert!(worst <= 1e-4 * scale, "{kernel:?} {m}x{n}x{k}: {worst}");
                    }
                }
            }
        }
    }

    #[test]
    fn rows_of_zeros_and_extremes_quantize_without_nan() {
        let (q, s) = quantize_rows(&[0.0, 0.0, 1e30, -1e30, 0.5, -0.25], 2);
        assert_eq!(s[0], 1.0);
        assert_eq!(&q[2..4], &[127, -127]);
        assert_eq!(&q[4..6], &[127, -64]);
        assert!(s.iter().all(|x| x.is_finite()));
    }
}
