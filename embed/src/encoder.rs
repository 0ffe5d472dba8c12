//! The BERT encoder pond serves: int8 linear layers ([`crate::int8`]), f32 attention, layer
//! norm and GELU, over ragged batches.
//!
//! A batch is its texts' tokens one after another, with no padding: the linear layers see one
//! `[tokens][hidden]` matrix, and attention runs per text, so no product is spent on a pad
//! and no `batch x heads x length^2` score tensor exists (one text's `length^2` scores at a
//! time, per thread). The word table stays in the mapped asset (f16, read a row per token),
//! so the process's own memory holds only the encoder's packed int8 layers and the buffers
//! of one batch.
//!
//! Layer norms, GELU and the softmax's scaling split by rows across rayon's threads above
//! 65,536 values (`by_rows`), in the f32 kernels of `crate::f32k`; the buffers are
//! thread-local and reused across calls. Vectors agree with candle's f32 BERT
//! (`crate::reference`) to cosine >= 0.99 (tested; measured by encoder_bench).

use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::int8::QLinear;
use crate::{EmbedError, Result};

use crate::f32k::{self, Activation, Norm};

/// The parts of a BERT `config.json` the encoder is built from.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "gelu")]
    pub hidden_act: String,
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
    #[serde(default)]
    pub model_type: Option<String>,
}

fn two() -> usize {
    2
}
fn eps() -> f64 {
    1e-12
}
fn gelu() -> String {
    "gelu".into()
}
fn absolute() -> String {
    "absolute".into()
}

impl BertConfig {
    pub fn read(dir: &Path) -> Result<BertConfig> {
        let text = std::fs::read_to_string(dir.join("config.json"))?;
        let config: BertConfig = serde_json::from_str(&text)
            .map_err(|e| EmbedError::Invalid(format!("config.json is not a BERT config: {e}")))?;
        config.check()?;
        Ok(config)
    }

    /// Refuse a config the encoder cannot be built from, with the reason.
    pub fn check(&self) -> Result<()> {
        let bad = |what: String| {
            Err(EmbedError::Invalid(format!(
                "config.json: {what}; import a BERT-shaped model"
            )))
        };
        if let Some(t) = &self.model_type {
            if t != "bert" {
                return Err(EmbedError::Invalid(format!(
                    "config.json says model_type {t:?}: pond embeds with BERT encoders (model_type bert)"
                )));
            }
        }
        if self.hidden_size == 0 || self.num_attention_heads == 0 || self.num_hidden_layers == 0 {
            return bad(format!(
                "hidden_size {}, num_attention_heads {}, num_hidden_layers {} must all be positive",
                self.hidden_size, self.num_attention_heads, self.num_hidden_layers
            ));
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.vocab_size == 0
            || self.intermediate_size == 0
            || self.max_position_embeddings == 0
            || self.type_vocab_size == 0
        {
            return bad(
                "vocab_size, intermediate_size, max_position_embeddings and type_vocab_size must be positive"
                    .into(),
            );
        }
        if self.num_hidden_layers > 256
            || self.hidden_size > 65_536
            || self.intermediate_size > 262_144
        {
            return bad(format!(
                "{} layers of {} dims is not a sentence embedder pond can serve",
                self.num_hidden_layers, self.hidden_size
            ));
        }
        if Activation::parse(&self.hidden_act).is_none() {
            return bad(format!(
                "hidden_act {:?} is not one pond runs (gelu, gelu_new, gelu_pytorch_tanh, relu)",
                self.hidden_act
            ));
        }
        if self.position_embedding_type != "absolute" {
            return bad(format!(
                "position_embedding_type {:?}: pond runs absolute positions",
                self.position_embedding_type
            ));
        }
        Ok(())
    }
}

/// The names of an encoder layer's four int8 products, in the asset (without `.weight`).
pub(crate) const LINEARS: [&str; 6] = [
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
];

/// Whether tensor `name` (of an asset or a source model) is an encoder layer's linear weight:
/// what import quantizes.
pub(crate) fn is_linear_weight(name: &str) -> bool {
    name.contains("encoder.layer.")
        && LINEARS
            .iter()
            .any(|l| name.ends_with(&format!(".{l}.weight")))
}

/// The suffix of a quantized weight's per-output scales.
pub(crate) const SCALE_SUFFIX: &str = "_scale";

struct Layer {
    /// Query, key and value in one product of `3 x hidden` outputs.
    qkv: QLinear,
    out: QLinear,
    norm1: Norm,
    up: QLinear,
    down: QLinear,
    norm2: Norm,
}

/// The word table where it lies in the mapped asset.
struct WordTable {
    map: memmap2::Mmap,
    offset: usize,
    rows: usize,
}

pub struct Encoder {
    hidden: usize,
    heads: usize,
    intermediate: usize,
    eps: f32,
    act: Activation,
    words: WordTable,
    /// Position embeddings plus the token type 0 embedding, `[positions][hidden]`.
    positions: Vec<f32>,
    max_positions: usize,
    norm: Norm,
    layers: Vec<Layer>,
}

/// Read access to the asset's tensors under one naming prefix (`bert.` or none).
struct Tensors<'a> {
    st: SafeTensors<'a>,
    prefix: &'static str,
}

impl Tensors<'_> {
    fn view(&self, name: &str) -> Result<safetensors::tensor::TensorView<'_>> {
        self.st
            .tensor(&format!("{}{name}", self.prefix))
            .map_err(|_| EmbedError::Invalid(format!("the model asset has no tensor {name}")))
    }

    /// A float tensor of `len` values as f32.
    fn f32s(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let v = self.view(name)?;
        let out = floats(&v).ok_or_else(|| {
            EmbedError::Invalid(format!(
                "tensor {name} of the model asset is {:?}, not a float",
                v.dtype()
            ))
        })?;
        if out.len() != len {
            return Err(EmbedError::Invalid(format!(
                "tensor {name} has {} values, the config says {len}",
                out.len()
            )));
        }
        Ok(out)
    }

    fn norm(&self, name: &str, hidden: usize) -> Result<Norm> {
        let get = |a: &str, b: &str| {
            self.f32s(&format!("{name}.{a}"), hidden)
                .or_else(|_| self.f32s(&format!("{name}.{b}"), hidden))
        };
        Ok(Norm {
            gamma: get("weight", "gamma")?,
            beta: get("bias", "beta")?,
        })
    }

    /// Linear layer `name`'s int8 weights `[n][k]` and per-output scales: stored so by
    /// import, or quantized here for an asset written before (f16).
    fn int8(&self, name: &str, n: usize, k: usize) -> Result<(Vec<i8>, Vec<f32>)> {
        let weight = format!("{name}.weight");
        let v = self.view(&weight)?;
        if v.shape() != [n, k] {
            return Err(EmbedError::Invalid(format!(
                "tensor {weight} is {:?}, the config says [{n}, {k}]",
                v.shape()
            )));
        }
        if v.dtype() == Dtype::I8 {
            let q = v.data().iter().map(|&b| b as i8).collect();
            let scales = self.f32s(&format!("{weight}{SCALE_SUFFIX}"), n)?;
            Ok((q, scales))
        } else {
            Ok(crate::int8::quantize_rows(&self.f32s(&weight, n * k)?, k))
        }
    }

    fn linear(&self, names: &[String], n: usize, k: usize) -> Result<QLinear> {
        let (mut q, mut scales, mut bias) = (Vec::new(), Vec::new(), Vec::new());
        for name in names {
            let (wq, ws) = self.int8(name, n, k)?;
            q.extend(wq);
            scales.extend(ws);
            bias.extend(self.f32s(&format!("{name}.bias"), n)?);
        }
        Ok(QLinear::new(&q, &scales, bias, n * names.len(), k))
    }
}

impl Encoder {
    /// Load the encoder of the asset whose weights are `weights`.
    pub fn load(weights: &Path, c: &BertConfig) -> Result<Encoder> {
        c.check()?;
        let file = std::fs::File::open(weights)?;
        // SAFETY: read-only map of the asset, which is only ever replaced by rename (the
        // mapped file stays whole while this process maps it).
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let (h, i) = (c.hidden_size, c.intermediate_size);
        let (words_offset, layers, positions, norm) = {
            let st = SafeTensors::deserialize(&map)?;
            let prefix = if st.tensor("bert.embeddings.word_embeddings.weight").is_ok() {
                "bert."
            } else {
                ""
            };
            let t = Tensors { st, prefix };
            let word = t.view("embeddings.word_embeddings.weight")?;
            if word.dtype() != Dtype::F16 || word.shape() != [c.vocab_size, h] {
                return Err(EmbedError::Invalid(format!(
                    "the word table of the model asset is {:?} {:?}, not F16 [{}, {h}]; import the model again with `pond model import`",
                    word.dtype(),
                    word.shape(),
                    c.vocab_size
                )));
            }
            let words_offset = word.data().as_ptr() as usize - map.as_ptr() as usize;
            let p = c.max_position_embeddings;
            let mut positions = t.f32s("embeddings.position_embeddings.weight", p * h)?;
            let types = t.f32s(
                "embeddings.token_type_embeddings.weight",
                c.type_vocab_size * h,
            )?;
            for row in positions.chunks_exact_mut(h) {
                for (x, y) in row.iter_mut().zip(&types[..h]) {
                    *x += y;
                }
            }
            let norm = t.norm("embeddings.LayerNorm", h)?;
            let mut layers = Vec::with_capacity(c.num_hidden_layers);
            for l in 0..c.num_hidden_layers {
                let name = |s: &str| format!("encoder.layer.{l}.{s}");
                layers.push(Layer {
                    qkv: t.linear(
                        &[name(LINEARS[0]), name(LINEARS[1]), name(LINEARS[2])],
                        h,
                        h,
                    )?,
                    out: t.linear(&[name(LINEARS[3])], h, h)?,
                    norm1: t.norm(&name("attention.output.LayerNorm"), h)?,
                    up: t.linear(&[name(LINEARS[4])], i, h)?,
                    down: t.linear(&[name(LINEARS[5])], h, i)?,
                    norm2: t.norm(&name("output.LayerNorm"), h)?,
                });
            }
            (words_offset, layers, positions, norm)
        };
        Ok(Encoder {
            hidden: h,
            heads: c.num_attention_heads,
            intermediate: i,
            eps: c.layer_norm_eps as f32,
            act: Activation::parse(&c.hidden_act).expect("checked"),
            words: WordTable {
                map,
                offset: words_offset,
                rows: c.vocab_size,
            },
            positions,
            max_positions: c.max_position_embeddings,
            norm,
            layers,
        })
    }

    /// Mean-pooled unit vectors of `texts` (token ids, each at most the model's positions).
    pub fn embed(&self, texts: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let starts: Vec<usize> = texts
            .iter()
            .scan(0, |s, t| {
                let start = *s;
                *s += t.len().min(self.max_positions);
                Some(start)
            })
            .collect();
        let total: usize = texts.iter().map(|t| t.len().min(self.max_positions)).sum();
        let spans: Vec<(usize, usize)> = starts
            .iter()
            .zip(texts)
            .map(|(&s, t)| (s, t.len().min(self.max_positions)))
            .collect();
        SCRATCH.with_borrow_mut(|scratch| {
            let mut b = scratch.buffers(total, h, self.intermediate);
            self.layers(&mut b, texts, &spans);
            self.pool(b.x, &spans)
        })
    }

    /// The forward pass over the texts at `spans`: `b.x` ends as the last layer's output.
    fn layers(&self, b: &mut Buffers, texts: &[&[u32]], spans: &[(usize, usize)]) {
        let Buffers {
            x,
            qkv,
            ctx,
            tmp,
            inner,
        } = b;
        let h = self.hidden;
        let total = x.len() / h;
        for (&(s, len), ids) in spans.iter().zip(texts) {
            for (p, &id) in ids[..len].iter().enumerate() {
                let row = &mut x[(s + p) * h..(s + p + 1) * h];
                self.word(id, row);
                for (v, q) in row.iter_mut().zip(&self.positions[p * h..(p + 1) * h]) {
                    *v += q;
                }
            }
        }
        let eps = self.eps;
        by_rows(x, h, |x, _| f32k::layer_norm(x, None, &self.norm, h, eps));
        for layer in &self.layers {
            layer.qkv.forward(x, total, qkv);
            self.attention(qkv, spans, ctx);
            layer.out.forward(ctx, total, tmp);
            by_rows(x, h, |x, r| {
                let add = Some(&tmp[r.start * h..r.end * h]);
                f32k::layer_norm(x, add, &layer.norm1, h, eps)
            });
            layer.up.forward(x, total, inner);
            by_rows(inner, self.intermediate, |x, _| f32k::activate(x, self.act));
            layer.down.forward(inner, total, tmp);
            by_rows(x, h, |x, r| {
                let add = Some(&tmp[r.start * h..r.end * h]);
                f32k::layer_norm(x, add, &layer.norm2, h, eps)
            });
        }
    }

    /// Each text's mean of its rows of `x`, as a unit vector.
    fn pool(&self, x: &[f32], spans: &[(usize, usize)]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        spans
            .iter()
            .map(|&(s, len)| {
                let mut mean = vec![0f32; h];
                for row in x[s * h..(s + len) * h].chunks_exact(h) {
                    for (m, v) in mean.iter_mut().zip(row) {
                        *m += v;
                    }
                }
                let n = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                mean.iter_mut().for_each(|v| *v /= n);
                mean
            })
            .collect()
    }

    /// Token `id`'s row of the word table into `row` (the unknown token's row 0 for an id
    /// past the table, which a tokenizer of the same model never gives).
    fn word(&self, id: u32, row: &mut [f32]) {
        let id = if (id as usize) < self.words.rows {
            id as usize
        } else {
            0
        };
        let h = self.hidden;
        let bytes = &self.words.map[self.words.offset + id * h * 2..][..h * 2];
        for (v, b) in row.iter_mut().zip(bytes.chunks_exact(2)) {
            *v = half::f16::from_le_bytes([b[0], b[1]]).to_f32();
        }
    }

    /// Self-attention of every text over its own tokens: `qkv` rows are `[q | k | v]`.
    fn attention(&self, qkv: &[f32], spans: &[(usize, usize)], ctx: &mut [f32]) {
        let h = self.hidden;
        let heads = self.heads;
        // The context rows of each text, split off `ctx` so texts run in parallel.
        let mut parts = Vec::with_capacity(spans.len());
        let mut rest = ctx;
        for &(_, len) in spans {
            let (mine, tail) = rest.split_at_mut(len * h);
            parts.push(mine);
            rest = tail;
        }
        let run = |(out, &(s, len)): (&mut &mut [f32], &(usize, usize))| {
            attend(&qkv[s * 3 * h..(s + len) * 3 * h], len, h, heads, out);
        };
        let work: usize = spans.iter().map(|&(_, l)| l * l).sum::<usize>() * h;
        if spans.len() > 1 && work >= 1 << 20 {
            parts.par_iter_mut().zip(spans.par_iter()).for_each(run);
        } else {
            parts.iter_mut().zip(spans.iter()).for_each(run);
        }
    }
}

thread_local! {
    /// The forward pass's buffers, kept between calls on a thread: fresh ones would be
    /// fresh pages, faulted in and zeroed by the kernel at every call.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

#[derive(Default)]
struct Scratch([Vec<f32>; 5]);

/// One call's buffers: the hidden rows, the q/k/v rows, the attention's output, the
/// sublayers' output, the feed-forward's inner rows.
struct Buffers<'a> {
    x: &'a mut [f32],
    qkv: &'a mut [f32],
    ctx: &'a mut [f32],
    tmp: &'a mut [f32],
    inner: &'a mut [f32],
}

impl Scratch {
    /// Buffers for `tokens` rows (grown as needed; what they hold is left over from the
    /// last call, and every value is written before it is read).
    fn buffers(&mut self, tokens: usize, hidden: usize, intermediate: usize) -> Buffers<'_> {
        let row = tokens * hidden;
        let lens = [row, 3 * row, row, row, tokens * intermediate];
        for (v, &n) in self.0.iter_mut().zip(&lens) {
            if v.len() < n {
                v.resize(n, 0.0);
            }
        }
        let [x, qkv, ctx, tmp, inner] = &mut self.0;
        Buffers {
            x: &mut x[..lens[0]],
            qkv: &mut qkv[..lens[1]],
            ctx: &mut ctx[..lens[2]],
            tmp: &mut tmp[..lens[3]],
            inner: &mut inner[..lens[4]],
        }
    }
}

/// `f` over blocks of whole rows of `x` (rows of `width` values; `f` gets a block and its
/// rows' range), on the thread pool when there are enough of them to pay for it.
fn by_rows(x: &mut [f32], width: usize, f: impl Fn(&mut [f32], Range<usize>) + Sync) {
    /// Below this many values one thread does it all.
    const PARALLEL_MIN: usize = 1 << 16;
    let rows = x.len() / width.max(1);
    let threads = rayon::current_num_threads();
    if x.len() < PARALLEL_MIN || threads < 2 {
        f(x, 0..rows);
        return;
    }
    let per = rows.div_ceil(threads * 2);
    x.par_chunks_mut(per * width)
        .enumerate()
        .for_each(|(i, block)| f(block, i * per..i * per + block.len() / width));
}

/// One text's attention: `qkv` is `len` rows of `[q | k | v]` (`3 x h`), `out` gets `len`
/// rows of `h`. The two products per head are gemm's (f32, read in place through strides).
fn attend(qkv: &[f32], len: usize, h: usize, heads: usize, out: &mut [f32]) {
    assert_eq!((qkv.len(), out.len()), (len * 3 * h, len * h));
    thread_local! {
        static SCORES: std::cell::RefCell<(Vec<f32>, Vec<f32>)> = const {
            std::cell::RefCell::new((Vec::new(), Vec::new()))
        };
    }
    SCORES.with_borrow_mut(|(scores, inv)| {
        // Every value is written before it is read.
        scores.resize(scores.len().max(len * len), 0.0);
        inv.resize(inv.len().max(len), 0.0);
        let (scores, inv) = (&mut scores[..len * len], &mut inv[..len]);
        heads_of(qkv, len, h, heads, scores, inv, out)
    });
}

/// [`attend`] with its scratch: one head's scores and their rows' inverse sums.
fn heads_of(
    qkv: &[f32],
    len: usize,
    h: usize,
    heads: usize,
    scores: &mut [f32],
    inv: &mut [f32],
    out: &mut [f32],
) {
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let row = 3 * h as isize;
    for head in 0..heads {
        let q = qkv[head * d..].as_ptr();
        let k = qkv[h + head * d..].as_ptr();
        let v = qkv[2 * h + head * d..].as_ptr();
        // SAFETY: every element read is within `qkv` (`len` rows of `3h`, a head's `d`
        // columns at most `3h` into a row) and every one written within `scores` or `out`.
        unsafe {
            // scores = scale x Q K^T: K^T's element (e, j) is k[j * 3h + e].
            gemm::gemm(
                len,
                len,
                d,
                scores.as_mut_ptr(),
                1,
                len as isize,
                false,
                q,
                1,
                row,
                k,
                row,
                1,
                0.0,
                scale,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
        f32k::exp_rows(scores, len, inv);
        unsafe {
            // out[:, head] = P V, P the exponentials (the rows' sums taken out below).
            gemm::gemm(
                len,
                d,
                len,
                out[head * d..].as_mut_ptr(),
                1,
                h as isize,
                false,
                scores.as_ptr(),
                1,
                len as isize,
                v,
                1,
                row,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
        f32k::scale_rows(&mut out[head * d..], d, h, inv);
    }
}

/// Reads one little-endian float element as f32.
pub(crate) type ReadFloat = fn(&[u8]) -> f32;

/// How to read one element of a float tensor as f32: its width in bytes and the reader
/// (`None` for a tensor of another type).
pub(crate) fn float_reader(dtype: Dtype) -> Option<(usize, ReadFloat)> {
    match dtype {
        Dtype::F32 => Some((4, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        Dtype::BF16 => Some((2, |b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())),
        Dtype::F16 => Some((2, |b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())),
        _ => None,
    }
}

/// A float tensor's values as f32 (`None` for a tensor of another type).
pub(crate) fn floats(view: &safetensors::tensor::TensorView) -> Option<Vec<f32>> {
    let (width, read) = float_reader(view.dtype())?;
    Some(view.data().chunks_exact(width).map(read).collect())
}
