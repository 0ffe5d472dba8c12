//! `pond usage` and `pond_usage`: a summary's groups as an 80-column table with a totals
//! row, as JSON, or as CSV. Costs: what the clients recorded plus what the price table
//! computes; a group with tokens of a model without a price says so ("no price", or a `*`
//! when part of it is priced) instead of guessing.

use pond_protocol::usage::{Tokens, UsageGroup, UsageLine, UsageReport};
use serde::Serialize;

/// One group (or one model of a group, or the totals) with its cost.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UsageRow {
    pub group: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_write_tokens: u64,
    pub cache_read_tokens: u64,
    pub reasoning_tokens: u64,
    pub total_tokens: u64,
    pub calls: u64,
    /// Recorded plus computed; null when nothing with tokens had a price.
    pub cost_usd: Option<f64>,
    pub cost_recorded_usd: f64,
    pub cost_computed_usd: f64,
    /// Calls with tokens whose model has no price: their cost is in no figure.
    pub unpriced_calls: u64,
    #[serde(skip)]
    priced_calls: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<UsageRow>,
}

impl UsageRow {
    fn add(&mut self, l: &UsageLine) {
        let mut t = Tokens {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_write: self.cache_write_tokens,
            cache_read: self.cache_read_tokens,
            reasoning: self.reasoning_tokens,
        };
        t.add(&l.tokens);
        self.input_tokens = t.input;
        self.output_tokens = t.output;
        self.cache_write_tokens = t.cache_write;
        self.cache_read_tokens = t.cache_read;
        self.reasoning_tokens = t.reasoning;
        self.total_tokens = t.total();
        self.calls += l.calls;
        self.cost_recorded_usd += l.cost_recorded;
        self.cost_computed_usd += l.cost_computed;
        self.unpriced_calls += l.unpriced_calls;
        self.priced_calls += l.priced_calls;
        let priced = self.priced_calls > 0 || self.unpriced_calls == 0;
        self.cost_usd = priced.then_some(self.cost_recorded_usd + self.cost_computed_usd);
    }
}

/// The summary as data: groups in order (time groups oldest first, the others by cost),
/// each with its models, and the totals.
#[derive(Debug, Clone, Serialize)]
pub struct UsageSummary {
    pub group: &'static str,
    pub rows: Vec<UsageRow>,
    pub totals: UsageRow,
    /// False: the store holds lines not read for usage yet (a sync or `pond rebuild
    /// --usage` reads them).
    pub complete: bool,
    pub prices_date: String,
    /// Models with tokens and no price.
    pub unpriced_models: Vec<String>,
}

/// The answer in the format asked for: the table, the summary as JSON, or CSV.
pub fn answer(r: &UsageReport, format: pond_protocol::Format) -> String {
    match format {
        pond_protocol::Format::Table => table(r),
        pond_protocol::Format::Json => format!("{}\n", super::json(&summary(r))),
        pond_protocol::Format::Csv => csv(r),
    }
}

pub fn summary(r: &UsageReport) -> UsageSummary {
    use pond_protocol::Choice;
    let mut rows: Vec<UsageRow> = Vec::new();
    let mut totals = UsageRow {
        group: "Total".into(),
        ..UsageRow::default()
    };
    let mut unpriced = std::collections::BTreeSet::new();
    for l in &r.lines {
        if rows.last().is_none_or(|g| g.group != l.group) {
            rows.push(UsageRow {
                group: l.group.clone(),
                ..UsageRow::default()
            });
        }
        let g = rows.last_mut().expect("pushed above");
        g.add(l);
        let mut m = UsageRow {
            group: l.group.clone(),
            model: Some(l.model.clone().unwrap_or_else(|| "(none)".into())),
            ..UsageRow::default()
        };
        m.add(l);
        g.models.push(m);
        totals.add(l);
        if l.unpriced_calls > 0 {
            unpriced.insert(l.model.clone().unwrap_or_else(|| "(none)".into()));
        }
    }
    let by_time = matches!(
        r.group,
        UsageGroup::Daily | UsageGroup::Weekly | UsageGroup::Monthly
    );
    if !by_time {
        rows.sort_by(|a, b| {
            let cost = |r: &UsageRow| r.cost_usd.unwrap_or(0.0);
            cost(b)
                .total_cmp(&cost(a))
                .then(b.total_tokens.cmp(&a.total_tokens))
                .then(a.group.cmp(&b.group))
        });
    }
    for g in &mut rows {
        if r.group == UsageGroup::Model {
            g.models.clear();
        }
        g.models.sort_by(|a, b| {
            b.total_tokens
                .cmp(&a.total_tokens)
                .then(a.model.cmp(&b.model))
        });
    }
    UsageSummary {
        group: r.group.name(),
        rows,
        totals,
        complete: r.complete,
        prices_date: r.prices_date.clone(),
        unpriced_models: unpriced.into_iter().collect(),
    }
}

/// Tokens in at most 7 characters: exact below 10,000, then k, M, B.
fn count(n: u64) -> String {
    let f = n as f64;
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", f / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", f / 1e6),
        _ => format!("{:.1}B", f / 1e9),
    }
}

fn cost(r: &UsageRow) -> String {
    match r.cost_usd {
        None => "no price".into(),
        Some(c) if r.unpriced_calls > 0 => format!("${c:.2}*"),
        Some(c) => format!("${c:.2}"),
    }
}

/// The label column's width: what the numbers leave of 80 columns.
const LABEL: usize = 80 - 5 * 8 - 10;

fn cut(label: &str, width: usize) -> String {
    if label.chars().count() <= width {
        return label.to_owned();
    }
    // The end of a path or an id says more than its start.
    let tail: String = label
        .chars()
        .rev()
        .take(width - 1)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("…{tail}")
}

fn line(out: &mut String, label: &str, r: &UsageRow) {
    out.push_str(&format!(
        "{:<LABEL$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9}\n",
        cut(label, LABEL),
        count(r.input_tokens),
        count(r.output_tokens),
        count(r.cache_write_tokens),
        count(r.cache_read_tokens),
        count(r.total_tokens),
        cost(r)
    ));
}

pub fn table(r: &UsageReport) -> String {
    let s = summary(r);
    let mut out = String::new();
    if s.rows.is_empty() {
        out.push_str("No token counts recorded in this range.\n");
    } else {
        let head = match r.group {
            UsageGroup::Daily => "Day",
            UsageGroup::Weekly => "Week of",
            UsageGroup::Monthly => "Month",
            UsageGroup::Session => "Session",
            UsageGroup::Model => "Model",
            UsageGroup::Project => "Project",
            UsageGroup::Client => "Client",
        };
        out.push_str(&format!(
            "{:<LABEL$} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9}\n",
            head, "Input", "Output", "CacheWr", "CacheRd", "Total", "Cost"
        ));
        for g in &s.rows {
            line(&mut out, &g.group, g);
            if g.models.len() > 1 {
                for m in &g.models {
                    line(
                        &mut out,
                        &format!("  {}", m.model.as_deref().unwrap_or("")),
                        m,
                    );
                }
            }
        }
        out.push_str(&format!("{}\n", "-".repeat(80)));
        line(&mut out, "Total", &s.totals);
    }
    if !s.unpriced_models.is_empty() {
        out.push_str("* not in the cost: models without a price (--prices FILE adds them):\n");
        out.push_str(&wrap(&s.unpriced_models.join(", "), "  "));
    }
    out.push_str("Input excludes cache reads; output includes reasoning.\n");
    out.push_str(&format!(
        "Cost: as the client recorded it, else at the prices of {}.\n",
        s.prices_date
    ));
    if !s.complete {
        out.push_str("Part of the store was not read for token counts yet:\n");
        out.push_str("`pond sync` or `pond rebuild --usage` reads it.\n");
    }
    out
}

/// `text` in lines of at most 80 columns, each after `indent`, broken at spaces.
fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for word in text.split(' ') {
        if line.len() > indent.len() && line.chars().count() + 1 + word.chars().count() > 80 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(indent);
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

pub fn csv(r: &UsageReport) -> String {
    let s = summary(r);
    let mut out = String::from("group,model,input_tokens,output_tokens,cache_write_tokens,cache_read_tokens,reasoning_tokens,total_tokens,calls,cost_usd,unpriced_calls\n");
    let quote = |v: &str| {
        if v.contains([',', '"', '\n']) {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v.to_owned()
        }
    };
    // A group's models, one line each; a model group's rows have none: a row is its model.
    let lines = s.rows.iter().flat_map(|g| match g.models.is_empty() {
        true => std::slice::from_ref(g),
        false => &g.models[..],
    });
    for m in lines {
        let model = match r.group {
            UsageGroup::Model => &m.group,
            _ => m.model.as_deref().unwrap_or(""),
        };
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            quote(&m.group),
            quote(model),
            m.input_tokens,
            m.output_tokens,
            m.cache_write_tokens,
            m.cache_read_tokens,
            m.reasoning_tokens,
            m.total_tokens,
            m.calls,
            m.cost_usd.map_or(String::new(), |c| format!("{c:.6}")),
            m.unpriced_calls
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> UsageReport {
        let l = |group: &str, model: &str, input, cost, unpriced| UsageLine {
            group: group.into(),
            model: Some(model.into()),
            tokens: Tokens {
                input,
                output: 10,
                ..Tokens::default()
            },
            calls: 1,
            cost_computed: cost,
            priced_calls: 1 - unpriced,
            unpriced_calls: unpriced,
            ..UsageLine::default()
        };
        UsageReport {
            group: UsageGroup::Daily,
            lines: vec![
                l("2026-03-01", "claude-opus-4-6", 123_456_789, 12.5, 0),
                l("2026-03-01", "glm-5.1", 5, 0.0, 1),
                l("2026-03-02", "glm-5.1", 5, 0.0, 1),
            ],
            complete: true,
            prices_date: "2026-12-08".into(),
            elapsed_ms: 1,
        }
    }

    #[test]
    fn the_table_fits_80_columns_and_names_what_has_no_price() {
        let t = table(&report());
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        assert!(t.contains("$12.50*"), "{t}");
        assert!(t.contains("no price"), "{t}");
        assert!(t.contains("  glm-5.1\n"), "{t}");
        assert!(t.contains("123.5M"), "{t}");
        let s = summary(&report());
        assert_eq!(s.totals.cost_usd, Some(12.5));
        assert_eq!(s.rows[1].cost_usd, None, "only unpriced tokens: no cost");
    }

    #[test]
    fn csv_by_model_has_a_line_per_model() {
        let by_model = UsageReport {
            group: UsageGroup::Model,
            lines: vec![
                UsageLine {
                    group: "claude-opus-4-6".into(),
                    ..report().lines[0].clone()
                },
                UsageLine {
                    group: "glm-5.1".into(),
                    ..report().lines[1].clone()
                },
            ],
            ..report()
        };
        let c = csv(&by_model);
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 3, "{c}");
        assert!(
            lines[1].starts_with("claude-opus-4-6,claude-opus-4-6,123456789,10,"),
            "{c}"
        );
        assert!(lines[2].starts_with("glm-5.1,glm-5.1,5,10,"), "{c}");
        // A daily CSV stays a line per day and model.
        assert_eq!(csv(&report()).lines().count(), 4);
    }
}
