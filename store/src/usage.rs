//! The `usage` dataset: one row per model call with the tokens its client recorded
//! (`pond_rows::UsageRow`), each call's key stored once store-wide, and `pond usage`'s
//! sums over it ([`summarize`], run in the sql worker).
//!
//! Dedupe: rows arrive in the sync's order (a file's lines in order, session files before
//! subagent files), and a key already stored is not stored again, so a Claude Code
//! response written over several lines counts its first line (ccusage's rule) and a
//! subagent's replay of its parent's lines counts nothing.
//!
//! Coverage: a store written before usage existed holds lines never read for it. The
//! marker file [`FILLED`] says the dataset covers every stored line; until it exists a
//! sync first reads the stored lines for usage (`pond_workers::usage::fill`, resumable
//! through [`PROGRESS`]), and `pond rebuild --usage` reads them all again.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use arrow_array::types::{Float64Type, TimestampMillisecondType, UInt64Type};
use arrow_array::Array;
use chrono::{DateTime, Datelike, Local, NaiveDate};
use futures::TryStreamExt;
use pond_protocol::usage::{Tokens, UsageGroup, UsageLine, UsageReport, UsageRequest};
use pond_rows::UsageRow;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::Result;
use crate::filters::SearchFilters;
use crate::prices::PriceTable;
use crate::read::{primitive_col, string_col};
use crate::schema::{self, sql_str, USAGE};
use crate::store::{Store, StoreLock};

/// The marker: `usage` covers every line the store holds.
pub const FILLED: &str = "usage.filled";
/// How far a fill got: the number of files done, in its order.
pub const PROGRESS: &str = "usage.progress";

/// Whether `usage` covers every stored line.
pub fn is_filled(store: &Store) -> bool {
    store.root().join(FILLED).exists()
}

/// Say `usage` covers every stored line (after the commit that made it so).
pub fn mark_filled(store: &Store) -> Result<()> {
    crate::store::write_atomic(&store.root().join(FILLED), b"")?;
    let _ = std::fs::remove_file(store.root().join(PROGRESS));
    Ok(())
}

/// Files a fill has done, in its order (0 when none or unknown).
pub fn progress(store: &Store) -> usize {
    std::fs::read_to_string(store.root().join(PROGRESS))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

pub fn save_progress(store: &Store, files_done: usize) -> Result<()> {
    crate::store::write_atomic(
        &store.root().join(PROGRESS),
        files_done.to_string().as_bytes(),
    )
}

/// Start over: no marker, no progress, no rows (`pond rebuild --usage`).
pub async fn reset(store: &Store, _lock: &StoreLock) -> Result<()> {
    let _ = std::fs::remove_file(store.root().join(FILLED));
    let _ = std::fs::remove_file(store.root().join(PROGRESS));
    if store.exists(USAGE) {
        store
            .overwrite_empty(USAGE, schema::USAGE_SCHEMA.clone())
            .await?;
    }
    Ok(())
}

/// Delete the rows read from `paths` (a fill resumed after its last commit: the files it
/// was reading when it stopped may be stored in part).
pub async fn forget_files(store: &Store, _lock: &StoreLock, paths: &[String]) -> Result<()> {
    let Some(mut ds) = store.latest(USAGE).await? else {
        return Ok(());
    };
    for chunk in paths.chunks(500) {
        let list: Vec<String> = chunk.iter().map(|p| sql_str(p)).collect();
        ds.delete(&format!("source_path IN ({})", list.join(",")))
            .await?;
    }
    Ok(())
}

/// Append rows outside a sync's transaction (a fill, which commits as it goes).
pub async fn append(store: &Store, _lock: &StoreLock, rows: &[&UsageRow]) -> Result<()> {
    store.append(USAGE, schema::usage_batch(rows)?).await
}

/// The keys of the stored model calls, as hashes.
#[derive(Debug, Default)]
pub struct Keys(HashSet<u64>);

impl Keys {
    pub async fn load(store: &Store) -> Result<Keys> {
        let mut keys = HashSet::new();
        if let Some(ds) = store.latest(USAGE).await? {
            let mut stream = ds.scan().project(&["key"])?.try_into_stream().await?;
            while let Some(b) = stream.try_next().await? {
                let col = string_col(&b, "key")?;
                keys.extend((0..b.num_rows()).map(|i| xxh3_64(col.value(i).as_bytes())));
            }
        }
        Ok(Keys(keys))
    }

    /// The rows whose key is not stored yet (the first of each key), now noted as stored.
    pub fn fresh<'r>(&mut self, rows: &'r [UsageRow]) -> Vec<&'r UsageRow> {
        rows.iter()
            .filter(|r| self.0.insert(xxh3_64(r.key.as_bytes())))
            .collect()
    }
}

/// The name of the group a call at `ms` falls in, in the zone days are read in.
fn time_group(group: UsageGroup, ms: i64, utc: bool) -> String {
    let t = DateTime::from_timestamp_millis(ms).unwrap_or_default();
    let day: NaiveDate = if utc {
        t.date_naive()
    } else {
        t.with_timezone(&Local).date_naive()
    };
    match group {
        UsageGroup::Weekly => {
            let monday = day - chrono::Days::new(day.weekday().num_days_from_monday().into());
            monday.format("%Y-%m-%d").to_string()
        }
        UsageGroup::Monthly => format!("{:04}-{:02}", day.year(), day.month()),
        _ => day.format("%Y-%m-%d").to_string(),
    }
}

/// Sum the calls `req` selects by its group and by model, costing each call: the cost its
/// client recorded, else its tokens at the price table's rates, else (no price) none, the
/// call counted as unpriced. A call without tokens costs nothing, priced or not.
pub async fn summarize(store: &Store, req: &UsageRequest) -> Result<UsageReport> {
    let started = Instant::now();
    let prices = PriceTable::with_overrides(req.prices.as_deref())?;
    let filters = SearchFilters {
        project: req.project.clone(),
        source_agent: req.client.clone(),
        from: req.since_ms,
        to: req.until_ms,
        ..SearchFilters::default()
    };
    filters.check_range()?;
    let mut filter = filters.to_sql()?;
    if let Some(m) = &req.model {
        let escaped = m
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        let m = format!(
            "model ILIKE {} ESCAPE '\\'",
            sql_str(&format!("%{escaped}%"))
        );
        filter = Some(match filter {
            Some(f) => format!("{f} AND {m}"),
            None => m,
        });
    }
    let by: Option<&str> = match req.group {
        UsageGroup::Session => Some("session_id"),
        UsageGroup::Project => Some("project"),
        UsageGroup::Client => Some("source_agent"),
        _ => None,
    };
    let mut lines: BTreeMap<(String, Option<String>), UsageLine> = BTreeMap::new();
    if let Some(ds) = store.dataset(USAGE).await? {
        let mut columns = vec![
            "timestamp",
            "model",
            "input_tokens",
            "output_tokens",
            "cache_write_tokens",
            "cache_read_tokens",
            "reasoning_tokens",
            "cost_usd",
        ];
        columns.extend(by);
        let mut scan = ds.scan();
        scan.project(&columns)?;
        if let Some(f) = &filter {
            scan.filter(f)?;
        }
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            let b = crate::read::plain_strings(b)?;
            let ts = primitive_col::<TimestampMillisecondType>(&b, "timestamp")?;
            let model = string_col(&b, "model")?;
            let n = |c: &str| primitive_col::<UInt64Type>(&b, c);
            let (input, output, write, read, reasoning) = (
                n("input_tokens")?,
                n("output_tokens")?,
                n("cache_write_tokens")?,
                n("cache_read_tokens")?,
                n("reasoning_tokens")?,
            );
            let cost = primitive_col::<Float64Type>(&b, "cost_usd")?;
            let by_col = by.map(|c| string_col(&b, c)).transpose()?;
            for i in 0..b.num_rows() {
                let group = match by_col {
                    None if req.group == UsageGroup::Model => match model.is_valid(i) {
                        true => model.value(i).to_owned(),
                        false => "(none)".to_owned(),
                    },
                    None => time_group(req.group, ts.value(i), req.utc),
                    Some(c) if !c.is_valid(i) => "(none)".to_owned(),
                    Some(c) if req.group == UsageGroup::Client => {
                        c.value(i).split('/').next().unwrap_or_default().to_owned()
                    }
                    Some(c) => c.value(i).to_owned(),
                };
                let m = model.is_valid(i).then(|| model.value(i).to_owned());
                let tokens = Tokens {
                    input: input.value(i),
                    output: output.value(i),
                    cache_write: write.value(i),
                    cache_read: read.value(i),
                    reasoning: reasoning.value(i),
                };
                let line = lines
                    .entry((group.clone(), m.clone()))
                    .or_insert_with(|| UsageLine {
                        group,
                        model: m.clone(),
                        ..UsageLine::default()
                    });
                line.tokens.add(&tokens);
                line.calls += 1;
                let price = m.as_deref().and_then(|m| prices.find(m));
                match (cost.is_valid(i), price) {
                    (true, _) => {
                        line.cost_recorded += cost.value(i);
                        line.priced_calls += 1;
                    }
                    (false, _) if tokens.total() == 0 => {}
                    (false, Some(p)) => {
                        line.cost_computed += p.cost(&tokens);
                        line.priced_calls += 1;
                    }
                    (false, None) => line.unpriced_calls += 1,
                }
            }
        }
    }
    Ok(UsageReport {
        group: req.group,
        lines: lines.into_values().collect(),
        complete: is_filled(store) || !store.exists(schema::RECORDS),
        prices_date: prices.date,
        elapsed_ms: started.elapsed().as_millis() as u64,
    })
}
