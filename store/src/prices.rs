//! The price table: USD per million tokens per model, dated, with where each price came
//! from (`store/prices.json`, compiled in); `--prices FILE` in the same format replaces or
//! adds models. A model the table does not name has no price: its tokens are shown, its
//! cost is not guessed.

use std::collections::HashMap;

use serde::Deserialize;

use crate::error::{Result, StoreError};

/// The embedded table.
const EMBEDDED: &str = include_str!("../prices.json");

/// Tokens of one kind in one call past which `above_200k` rates apply.
pub const TIER_TOKENS: u64 = 200_000;

/// The highest rate a price file may give, USD per million tokens: far above any model's,
/// low enough that a cost summed over the store stays a finite number.
pub const MAX_RATE: f64 = 10_000.0;

/// USD per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub model: String,
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
    #[serde(default)]
    pub above_200k: Option<Rates>,
    pub source: String,
    pub date: String,
}

/// A price file: its `about` (what the numbers mean) is for the reader.
#[derive(Debug, Deserialize)]
struct PriceFile {
    date: String,
    models: Vec<Price>,
}

#[derive(Debug, Clone)]
pub struct PriceTable {
    /// The table's date (an override file's when one is given).
    pub date: String,
    /// By model name in lower case.
    by_model: HashMap<String, Price>,
}

/// How each kind of token is counted for a price: `(count, base rate, rate past the tier)`.
fn tiered(tokens: u64, base: f64, above: Option<f64>) -> f64 {
    match above {
        Some(a) if tokens > TIER_TOKENS => {
            (TIER_TOKENS as f64 * base + (tokens - TIER_TOKENS) as f64 * a) / 1e6
        }
        _ => tokens as f64 * base / 1e6,
    }
}

impl Price {
    /// The USD of one call's tokens.
    pub fn cost(&self, t: &pond_protocol::usage::Tokens) -> f64 {
        let a = self.above_200k;
        tiered(t.input, self.input, a.map(|a| a.input))
            + tiered(t.output, self.output, a.map(|a| a.output))
            + tiered(t.cache_write, self.cache_write, a.map(|a| a.cache_write))
            + tiered(t.cache_read, self.cache_read, a.map(|a| a.cache_read))
    }
}

fn parse(text: &str, origin: &str) -> Result<PriceFile> {
    let file: PriceFile = serde_json::from_str(text).map_err(|e| {
        StoreError::InvalidQuery(format!(
            "{origin}: {e}; a price file is JSON: {{\"date\": \"YYYY-MM-DD\", \"models\": \
             [{{\"model\", \"input\", \"output\", \"cache_write\", \"cache_read\" (USD per \
             million tokens), \"source\", \"date\"}}]}}, as pond's own store/prices.json"
        ))
    })?;
    for p in &file.models {
        let base = [
            ("input", p.input),
            ("output", p.output),
            ("cache_write", p.cache_write),
            ("cache_read", p.cache_read),
        ];
        let tier = p.above_200k.map(|a| {
            [
                ("above_200k.input", a.input),
                ("above_200k.output", a.output),
                ("above_200k.cache_write", a.cache_write),
                ("above_200k.cache_read", a.cache_read),
            ]
        });
        let bad = base
            .into_iter()
            .chain(tier.into_iter().flatten())
            .find(|(_, r)| !(0.0..=MAX_RATE).contains(r));
        if let Some((field, _)) = bad {
            return Err(StoreError::InvalidQuery(format!(
                "{origin}: {}'s {field} must be a number from 0 to {MAX_RATE} (USD per \
                 million tokens)",
                p.model
            )));
        }
    }
    Ok(file)
}

impl PriceTable {
    /// The embedded table, with `overrides` (a price file's text) replacing or adding
    /// models.
    pub fn with_overrides(overrides: Option<&str>) -> Result<PriceTable> {
        let base = parse(EMBEDDED, "the embedded price table")?;
        let mut table = PriceTable {
            date: base.date,
            by_model: base
                .models
                .into_iter()
                .map(|p| (p.model.to_lowercase(), p))
                .collect(),
        };
        if let Some(text) = overrides {
            let extra = parse(text, "the --prices file")?;
            table.date = extra.date;
            for p in extra.models {
                table.by_model.insert(p.model.to_lowercase(), p);
            }
        }
        Ok(table)
    }

    /// The price of `model`: by its name in any case, else without a trailing `-YYYYMMDD`
    /// date, else without a `provider/` prefix. Nothing else is tried: a near name is not
    /// a price.
    pub fn find(&self, model: &str) -> Option<&Price> {
        let model = model.to_lowercase();
        let model = model.as_str();
        let undated = |m: &str| -> Option<String> {
            let (head, tail) = m.rsplit_once('-')?;
            (tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit())).then(|| head.to_owned())
        };
        let bare = model.rsplit_once('/').map(|(_, m)| m);
        [
            Some(model.to_owned()),
            undated(model),
            bare.map(str::to_owned),
            bare.and_then(undated),
        ]
        .into_iter()
        .flatten()
        .find_map(|m| self.by_model.get(&m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_protocol::usage::Tokens;

    #[test]
    fn models_are_found_by_name_date_or_provider_and_never_guessed() {
        let t = PriceTable::with_overrides(None).unwrap();
        assert_eq!(
            t.find("claude-haiku-4-5-20251001").unwrap().model,
            "claude-haiku-4-5"
        );
        assert_eq!(
            t.find("anthropic/claude-sonnet-4-6").unwrap().model,
            "claude-sonnet-4-6"
        );
        assert!(t.find("claude-sonnet-4-6-preview").is_none());
        assert!(t.find("glm-5.1").is_none());
        assert!(t.find("<synthetic>").is_none());
    }

    #[test]
    fn cost_per_kind_with_the_long_context_tier() {
        let t = PriceTable::with_overrides(None).unwrap();
        let tokens = Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_write: 1_000_000,
            cache_read: 1_000_000,
            reasoning: 7,
        };
        let opus = t.find("claude-opus-4-6").unwrap().cost(&tokens);
        assert!((opus - (5.0 + 25.0 + 6.25 + 0.5)).abs() < 1e-9, "{opus}");
        // Sonnet 4.5 past 200k tokens of a kind: 200k at the base rate, the rest at the tier's.
        let input = Tokens {
            input: 300_000,
            ..Tokens::default()
        };
        let s = t.find("claude-sonnet-4-5").unwrap().cost(&input);
        assert!((s - (0.2 * 3.0 + 0.1 * 6.0)).abs() < 1e-9, "{s}");
    }

    #[test]
    fn a_price_file_replaces_and_adds_models_and_says_what_is_wrong() {
        let file = r#"{"date": "2027-01-01", "models": [
            {"model": "glm-5.1", "input": 1, "output": 2, "cache_write": 0, "cache_read": 0.5, "source": "me", "date": "2027-01-01"},
            {"model": "claude-opus-4-6", "input": 1, "output": 1, "cache_write": 1, "cache_read": 1, "source": "me", "date": "2027-01-01"}]}"#;
        let t = PriceTable::with_overrides(Some(file)).unwrap();
        assert_eq!(t.date, "2027-01-01");
        assert_eq!(t.find("glm-5.1").unwrap().output, 2.0);
        assert_eq!(t.find("claude-opus-4-6").unwrap().input, 1.0);
        let bad = PriceTable::with_overrides(Some(r#"{"date": "x", "models": [{"model": "m"}]}"#))
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("--prices") && bad.contains("missing field"),
            "{bad}"
        );
    }

    #[test]
    fn a_rate_past_the_bound_is_refused_naming_the_model_and_field() {
        let file = |output: &str, tier: &str| {
            format!(
                r#"{{"date": "2027-01-01", "models": [{{"model": "huge", "input": 1, "output": {output}, "cache_write": 0, "cache_read": 0, {tier}"source": "me", "date": "2027-01-01"}}]}}"#
            )
        };
        let e = PriceTable::with_overrides(Some(&file("1e300", "")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("huge's output must be a number from 0 to 10000"),
            "{e}"
        );
        let tier =
            r#""above_200k": {"input": 1, "output": 1, "cache_write": 1, "cache_read": 20000}, "#;
        let e = PriceTable::with_overrides(Some(&file("1", tier)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("huge's above_200k.cache_read must"), "{e}");
        let at_bound = PriceTable::with_overrides(Some(&file("10000", ""))).unwrap();
        assert_eq!(at_bound.find("huge").unwrap().output, MAX_RATE);
    }

    #[test]
    fn model_names_match_in_any_case() {
        let file = r#"{"date": "2027-01-01", "models": [
            {"model": "GLM-5.1", "input": 1, "output": 2, "cache_write": 0, "cache_read": 0.5, "source": "me", "date": "2027-01-01"}]}"#;
        let t = PriceTable::with_overrides(Some(file)).unwrap();
        assert_eq!(t.find("glm-5.1").unwrap().model, "GLM-5.1");
        assert_eq!(t.find("zai/Glm-5.1").unwrap().output, 2.0);
        assert_eq!(
            t.find("Claude-Haiku-4-5-20251001").unwrap().model,
            "claude-haiku-4-5"
        );
    }
}
