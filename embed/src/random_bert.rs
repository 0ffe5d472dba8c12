//! Random-weight BERT models of any shape, written as a Hugging Face style folder (f32
//! safetensors, `config.json`, a WordPiece `tokenizer.json`): the models tests and benchmarks
//! use where no real weights can be downloaded. The weights are generated tensor by tensor
//! while the file is written, so even a 470 MB model needs one tensor of memory.

use std::borrow::Cow;
use std::path::Path;

use safetensors::tensor::{Dtype, View};
use serde_json::json;

use crate::Result;

/// A BERT shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub vocab: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
}

impl Shape {
    /// A few thousand parameters per layer: for tests.
    pub fn tiny() -> Shape {
        Shape {
            vocab: 1024,
            hidden: 32,
            layers: 2,
            heads: 4,
            intermediate: 64,
            max_positions: 128,
        }
    }

    /// `intfloat/multilingual-e5-small`: ~118M parameters, ~470 MB in f32.
    pub fn e5_small() -> Shape {
        Shape {
            vocab: 250_037,
            hidden: 384,
            layers: 12,
            heads: 12,
            intermediate: 1536,
            max_positions: 512,
        }
    }
}

/// One tensor's values: layer-norm weights 1, biases 0, everything else uniform in
/// [-0.05, 0.05] from a seeded generator.
struct Generated {
    shape: Vec<usize>,
    fill: Fill,
    seed: u64,
}

#[derive(Clone, Copy)]
enum Fill {
    Ones,
    Zeros,
    Random,
}

impl View for Generated {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        let n: usize = self.shape.iter().product();
        let mut state = self.seed | 1;
        let mut out = Vec::with_capacity(n * 4);
        for _ in 0..n {
            let x = match self.fill {
                Fill::Ones => 1.0f32,
                Fill::Zeros => 0.0,
                Fill::Random => {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
                }
            };
            out.extend_from_slice(&x.to_le_bytes());
        }
        Cow::Owned(out)
    }

    fn data_len(&self) -> usize {
        self.shape.iter().product::<usize>() * 4
    }
}

/// The WordPiece vocabulary of the generated tokenizer: specials, single characters and
/// their continuations, and common words. Ids stay below every shape's vocabulary.
fn vocab() -> Vec<String> {
    let mut v: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let chars: Vec<char> = ('a'..='z')
        .chain('0'..='9')
        .chain("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".chars())
        .collect();
    v.extend(chars.iter().map(|c| c.to_string()));
    v.extend(chars.iter().map(|c| format!("##{c}")));
    for w in [
        "the", "to", "of", "and", "in", "is", "it", "for", "on", "test", "error", "file", "fix",
        "bug", "code", "function", "parser", "cache", "memory", "query", "index", "search", "time",
        "out", "timeout", "retry", "data", "base", "database", "server", "client",
    ] {
        v.push(w.to_string());
    }
    v
}

/// Write a random-weight BERT of `shape` to `dir` (created if needed).
pub fn write(dir: &Path, shape: Shape, seed: u64) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let vocab = vocab();
    assert!(
        vocab.len() <= shape.vocab,
        "the vocabulary fits every shape"
    );
    let config = json!({
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": shape.vocab,
        "hidden_size": shape.hidden,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "intermediate_size": shape.intermediate,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": shape.max_positions,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    });
    std::fs::write(dir.join("config.json"), serde_json::to_vec_pretty(&config)?)?;
    let ids: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), json!(i)))
        .collect();
    let special = |id: usize, content: &str| {
        json!({"id": id, "content": content, "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"),
                         special(3, "[SEP]"), special(4, "[MASK]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
                       "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids}
    });
    std::fs::write(dir.join("tokenizer.json"), serde_json::to_vec(&tokenizer)?)?;

    let (h, i) = (shape.hidden, shape.intermediate);
    let mut tensors: Vec<(String, Vec<usize>, Fill)> = vec![
        (
            "embeddings.word_embeddings.weight".into(),
            vec![shape.vocab, h],
            Fill::Random,
        ),
        (
            "embeddings.position_embeddings.weight".into(),
            vec![shape.max_positions, h],
            Fill::Random,
        ),
        (
            "embeddings.token_type_embeddings.weight".into(),
            vec![2, h],
            Fill::Random,
        ),
        ("embeddings.LayerNorm.weight".into(), vec![h], Fill::Ones),
        ("embeddings.LayerNorm.bias".into(), vec![h], Fill::Zeros),
    ];
    for l in 0..shape.layers {
        let p = format!("encoder.layer.{l}");
        for (name, dims) in [
            ("attention.self.query", vec![h, h]),
            ("attention.self.key", vec![h, h]),
            ("attention.self.value", vec![h, h]),
            ("attention.output.dense", vec![h, h]),
            ("intermediate.dense", vec![i, h]),
            ("output.dense", vec![h, i]),
        ] {
            let out = dims[0];
            tensors.push((format!("{p}.{name}.weight"), dims, Fill::Random));
            tensors.push((format!("{p}.{name}.bias"), vec![out], Fill::Random));
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            tensors.push((format!("{p}.{norm}.weight"), vec![h], Fill::Ones));
            tensors.push((format!("{p}.{norm}.bias"), vec![h], Fill::Zeros));
        }
    }
    let views = tensors
        .into_iter()
        .enumerate()
        .map(|(k, (name, shape, fill))| {
            let seed = seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(k as u64 + 1);
            (name, Generated { shape, fill, seed })
        });
    safetensors::serialize_to_file(views, None, &dir.join("model.safetensors"))?;
    Ok(())
}
