//! How a bench prints: one JSON line a reader can diff, then a human table.

use serde_json::Value;

/// Print `figures` (a flat JSON object) as one line, then as an aligned two-column table.
pub fn print(bench: &str, figures: &Value) {
    let mut line = serde_json::json!({ "bench": bench });
    if let (Some(dst), Some(src)) = (line.as_object_mut(), figures.as_object()) {
        for (k, v) in src {
            dst.insert(k.clone(), v.clone());
        }
    }
    println!("{line}");
    let Some(obj) = figures.as_object() else {
        return;
    };
    let width = obj.keys().map(String::len).max().unwrap_or(0);
    println!("{bench}");
    for (k, v) in obj {
        let shown = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        println!("  {k:<width$}  {shown}");
    }
}

/// `x` rounded to two decimals, for the JSON line.
pub fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The p-th percentile (0..=100) of unsorted samples, in the samples' unit.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * (samples.len() - 1) as f64).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentiles() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(super::percentile(&mut v, 50.0), 51.0);
        assert_eq!(super::percentile(&mut v, 95.0), 95.0);
        assert_eq!(super::percentile(&mut [], 50.0), 0.0);
    }
}
