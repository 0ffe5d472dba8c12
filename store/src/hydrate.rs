//! Hydration: from the row ids a ranked query returns to what a hit shows (session, message
//! id, role, time, project, agent, text). Rows the row map covers are read from the map
//! (memory-mapped, no Lance data pages); rows newer than the map, or every row when there
//! is no usable map, are taken from `messages` by row id.

use arrow_array::RecordBatch;
use lance::Dataset;
use serde::Serialize;

use crate::error::{Result, StoreError};
use crate::read::{opt_str, string_col, ts_at};
use crate::rowmap::Mapped;

/// What a hit shows of its row, besides score and text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HitRow {
    pub session_id: String,
    pub message_id: String,
    pub role: String,
    pub timestamp: i64,
    pub project: Option<String>,
    pub source_agent: String,
}

/// A hydrated row and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowMeta {
    pub row_id: u64,
    /// The row's position in the row map, `None` when it came from Lance.
    pub map_pos: Option<usize>,
    pub row: HitRow,
}

const META_COLUMNS: [&str; 6] = [
    "session_id",
    "id",
    "role",
    "timestamp",
    "project",
    "source_agent",
];

/// Rows of `messages` by row id, in the order asked (ids must be distinct).
async fn take(ds: &Dataset, row_ids: &[u64], columns: &[&str]) -> Result<RecordBatch> {
    let projection = ds.schema().project(columns)?;
    let b = ds.take_rows(row_ids, projection).await?;
    if b.num_rows() != row_ids.len() {
        return Err(StoreError::NotFound(format!(
            "asked messages for {} rows by id, got {}",
            row_ids.len(),
            b.num_rows()
        )));
    }
    Ok(b)
}

/// The metadata of `row_ids` (distinct), in the same order.
pub async fn metas(ds: &Dataset, mapped: Option<&Mapped>, row_ids: &[u64]) -> Result<Vec<RowMeta>> {
    let mut out: Vec<Option<RowMeta>> = vec![None; row_ids.len()];
    let mut missing = Vec::new();
    for (i, &row_id) in row_ids.iter().enumerate() {
        let pos = match mapped {
            Some(m) => m.position(row_id)?,
            None => None,
        };
        match (mapped, pos) {
            (Some(m), Some(pos)) => {
                let r = m.map.row(pos)?;
                out[i] = Some(RowMeta {
                    row_id,
                    map_pos: Some(pos),
                    row: HitRow {
                        session_id: r.session_id.to_owned(),
                        message_id: r.message_id.into_owned(),
                        role: r.role.to_owned(),
                        timestamp: r.timestamp,
                        project: r.project.map(str::to_owned),
                        source_agent: r.source_agent.to_owned(),
                    },
                });
            }
            _ => missing.push(i),
        }
    }
    if !missing.is_empty() {
        let ids: Vec<u64> = missing.iter().map(|&i| row_ids[i]).collect();
        let b = take(ds, &ids, &META_COLUMNS).await?;
        let (session, id, role, project, agent) = (
            string_col(&b, "session_id")?,
            string_col(&b, "id")?,
            string_col(&b, "role")?,
            string_col(&b, "project")?,
            string_col(&b, "source_agent")?,
        );
        for (k, &i) in missing.iter().enumerate() {
            out[i] = Some(RowMeta {
                row_id: row_ids[i],
                map_pos: None,
                row: HitRow {
                    session_id: session.value(k).to_owned(),
                    message_id: id.value(k).to_owned(),
                    role: role.value(k).to_owned(),
                    timestamp: ts_at(&b, "timestamp", k)?.unwrap_or_default(),
                    project: opt_str(project, k),
                    source_agent: agent.value(k).to_owned(),
                },
            });
        }
    }
    Ok(out.into_iter().flatten().collect())
}

/// The search text of each row (`None` for a message with none), in the same order.
pub async fn texts(
    ds: &Dataset,
    mapped: Option<&Mapped>,
    rows: &[&RowMeta],
) -> Result<Vec<Option<String>>> {
    let mut out = vec![None; rows.len()];
    let mut missing = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        match (mapped, r.map_pos) {
            (Some(m), Some(pos)) => out[i] = m.map.text(pos)?,
            _ => missing.push(i),
        }
    }
    if !missing.is_empty() {
        let ids: Vec<u64> = missing.iter().map(|&i| rows[i].row_id).collect();
        let b = take(ds, &ids, &["search_text"]).await?;
        let text = string_col(&b, "search_text")?;
        for (k, &i) in missing.iter().enumerate() {
            out[i] = opt_str(text, k);
        }
    }
    Ok(out)
}
