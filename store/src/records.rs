//! Reading `records` back file by file: every source line as it was stored, in line order.
//! This is what lets a store re-derive its sessions, messages and parts without the source
//! files (an upgrade, a repair).

use std::collections::HashMap;

use arrow_array::types::UInt64Type;
use futures::TryStreamExt;
use lance::dataset::ProjectionRequest;
use lance::Dataset;

use crate::error::{Result, StoreError};
use crate::read::{primitive_col, string_col};
use crate::schema::RECORDS;
use crate::store::Store;

/// One stored source line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLine {
    pub line: u64,
    pub byte_offset: u64,
    pub raw: String,
}

/// The stored lines of every file: path -> (line number, row id) in line order. Two narrow
/// columns are scanned; the text is read later, a file at a time ([`StoredLines::read`]).
pub struct StoredLines {
    ds: Dataset,
    pub by_file: HashMap<String, Vec<(u64, u64)>>,
}

impl StoredLines {
    /// `None` when the store has no records.
    pub async fn index(store: &Store) -> Result<Option<StoredLines>> {
        let Some(ds) = store.latest(RECORDS).await? else {
            return Ok(None);
        };
        let mut by_file: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
        let mut scan = ds.scan();
        scan.with_row_id().project(&["source_path", "line"])?;
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            let path = string_col(&b, "source_path")?;
            let line = primitive_col::<UInt64Type>(&b, "line")?;
            let row = primitive_col::<UInt64Type>(&b, "_rowid")?;
            for i in 0..b.num_rows() {
                let p = path.value(i);
                let entry = match by_file.get_mut(p) {
                    Some(v) => v,
                    None => by_file.entry(p.to_owned()).or_default(),
                };
                entry.push((line.value(i), row.value(i)));
            }
        }
        for lines in by_file.values_mut() {
            lines.sort_unstable();
        }
        Ok(Some(StoredLines { ds, by_file }))
    }

    /// The lines with these row ids, in the order asked.
    pub async fn read(&self, row_ids: &[u64]) -> Result<Vec<StoredLine>> {
        let projection = ProjectionRequest::from_columns(
            ["_rowid", "line", "byte_offset", "raw"],
            self.ds.schema(),
        );
        let b = self.ds.take_rows(row_ids, projection).await?;
        if b.num_rows() != row_ids.len() {
            return Err(StoreError::NotFound(format!(
                "asked records for {} lines, got {}",
                row_ids.len(),
                b.num_rows()
            )));
        }
        let order: HashMap<u64, usize> = row_ids.iter().enumerate().map(|(i, r)| (*r, i)).collect();
        let row = primitive_col::<UInt64Type>(&b, "_rowid")?;
        let line = primitive_col::<UInt64Type>(&b, "line")?;
        let offset = primitive_col::<UInt64Type>(&b, "byte_offset")?;
        let raw = string_col(&b, "raw")?;
        let mut out: Vec<(usize, StoredLine)> = (0..b.num_rows())
            .map(|i| {
                let at = order.get(&row.value(i)).copied().unwrap_or(usize::MAX);
                let l = StoredLine {
                    line: line.value(i),
                    byte_offset: offset.value(i),
                    raw: raw.value(i).to_owned(),
                };
                (at, l)
            })
            .collect();
        out.sort_by_key(|(at, _)| *at);
        Ok(out.into_iter().map(|(_, l)| l).collect())
    }
}
