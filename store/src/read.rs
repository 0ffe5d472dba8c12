//! Typed access to scanned batches.

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, TimestampMillisecondType, UInt32Type, UInt64Type};
use arrow_array::{Array, PrimitiveArray, RecordBatch, StringArray};
use futures::TryStreamExt;
use lance::Dataset;
use pond_rows::SessionRow;

use crate::error::{Result, StoreError};

/// What describes a message in a hit, the row map and an embedding row (with `_rowid`).
pub(crate) const MESSAGE_COLUMNS: [&str; 7] = [
    "session_id",
    "id",
    "timestamp",
    "role",
    "source_agent",
    "project",
    "search_text",
];

fn missing(name: &str) -> StoreError {
    StoreError::NotFound(format!("column {name} missing or of an unexpected type"))
}

/// `b` with its string columns as `Utf8` (a computed projection, like `left(text, n)`, may
/// come back as a string view).
pub(crate) fn plain_strings(b: RecordBatch) -> Result<RecordBatch> {
    use arrow_schema::{DataType, Field, Schema};
    let needs = |t: &DataType| matches!(t, DataType::Utf8View | DataType::LargeUtf8);
    if !b.schema().fields().iter().any(|f| needs(f.data_type())) {
        return Ok(b);
    }
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        if needs(f.data_type()) {
            columns.push(arrow_cast::cast(c, &DataType::Utf8)?);
            fields.push(Field::new(f.name(), DataType::Utf8, f.is_nullable()));
        } else {
            columns.push(c.clone());
            fields.push(f.as_ref().clone());
        }
    }
    Ok(RecordBatch::try_new(
        std::sync::Arc::new(Schema::new(fields)),
        columns,
    )?)
}

pub(crate) fn string_col<'b>(b: &'b RecordBatch, name: &str) -> Result<&'b StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or_else(|| missing(name))
}

/// A column of primitive type `T` (row ids, scores, distances).
pub(crate) fn primitive_col<'b, T: ArrowPrimitiveType>(
    b: &'b RecordBatch,
    name: &str,
) -> Result<&'b PrimitiveArray<T>> {
    b.column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<T>())
        .ok_or_else(|| missing(name))
}

pub(crate) fn opt_str(col: &StringArray, i: usize) -> Option<String> {
    col.is_valid(i).then(|| col.value(i).to_owned())
}

pub(crate) fn ts_at(b: &RecordBatch, name: &str, i: usize) -> Result<Option<i64>> {
    let c = b
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<TimestampMillisecondType>())
        .ok_or_else(|| missing(name))?;
    Ok(c.is_valid(i).then(|| c.value(i)))
}

pub(crate) fn u64_at(b: &RecordBatch, name: &str, i: usize) -> Result<u64> {
    b.column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<UInt64Type>())
        .map(|c| c.value(i))
        .ok_or_else(|| missing(name))
}

pub(crate) fn u32_at(b: &RecordBatch, name: &str, i: usize) -> Result<u32> {
    b.column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<UInt32Type>())
        .map(|c| c.value(i))
        .ok_or_else(|| missing(name))
}

pub(crate) fn bool_at(b: &RecordBatch, name: &str, i: usize) -> Result<Option<bool>> {
    let c = b
        .column_by_name(name)
        .and_then(|c| c.as_boolean_opt())
        .ok_or_else(|| missing(name))?;
    Ok(c.is_valid(i).then(|| c.value(i)))
}

/// Every batch of a scan with an optional filter, collected (callers bound the size).
pub(crate) async fn scan_all(
    ds: &Dataset,
    columns: &[&str],
    filter: Option<&str>,
) -> Result<Vec<RecordBatch>> {
    let mut scan = ds.scan();
    scan.project(columns)?;
    if let Some(f) = filter {
        scan.filter(f)?;
    }
    Ok(scan.try_into_stream().await?.try_collect().await?)
}

pub(crate) async fn session_rows(ds: &Dataset, filter: Option<&str>) -> Result<Vec<SessionRow>> {
    let cols = [
        "id",
        "parent_session_id",
        "source_agent",
        "project",
        "created_at",
        "updated_at",
        "title",
        "source_path",
        "header",
    ];
    let mut out = Vec::new();
    for b in scan_all(ds, &cols, filter).await? {
        let id = string_col(&b, "id")?;
        let parent = string_col(&b, "parent_session_id")?;
        let agent = string_col(&b, "source_agent")?;
        let project = string_col(&b, "project")?;
        let title = string_col(&b, "title")?;
        let path = string_col(&b, "source_path")?;
        let header = string_col(&b, "header")?;
        for i in 0..b.num_rows() {
            out.push(SessionRow {
                id: id.value(i).to_owned(),
                parent_id: opt_str(parent, i),
                source_agent: agent.value(i).to_owned(),
                project: opt_str(project, i),
                created_at: ts_at(&b, "created_at", i)?,
                updated_at: ts_at(&b, "updated_at", i)?,
                title: opt_str(title, i),
                source_path: path.value(i).to_owned(),
                header: opt_str(header, i),
            });
        }
    }
    Ok(out)
}
