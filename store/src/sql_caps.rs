//! What keeps one SQL query from building huge values: DataFusion's memory pool accounts
//! for sorts, joins and aggregates, not for the values scalar functions return, so
//! `repeat('x', 200000000)` built 200 MB per row and `range(1e9)` a billion-element list.
//! The functions that build a value from a size argument are replaced by versions that
//! check the size first ([`register`]); and every cell a query returns is cut to a cap
//! before the result is kept ([`cap_cells`]).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, FieldRef, Schema};
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

/// The most bytes one call of a size-taking function may build over a batch of rows.
pub const VALUE_BYTES: i64 = 64 << 20;
/// The most elements one list-building call may make over a batch.
pub const LIST_ITEMS: i64 = 4 << 20;

/// How a function's size arguments are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Rule {
    /// `repeat(text, n)`: bytes = len(text) * n.
    Repeat,
    /// `lpad`/`rpad(text, n, ...)`: up to 4 bytes a character.
    Pad,
    /// `array_repeat(x, n)`: n elements.
    ListOf,
    /// `range`/`generate_series(start, stop[, step])` or `(stop)`: (stop - start) / step.
    Series,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Capped {
    inner: ScalarUDF,
    rule: Rule,
}

/// Replace the size-taking functions `ctx` has with checked versions.
pub fn register(ctx: &SessionContext) {
    for (name, rule) in [
        ("repeat", Rule::Repeat),
        ("lpad", Rule::Pad),
        ("rpad", Rule::Pad),
        ("array_repeat", Rule::ListOf),
        ("range", Rule::Series),
        ("generate_series", Rule::Series),
    ] {
        if let Ok(f) = ctx.udf(name) {
            let capped = Capped {
                inner: f.as_ref().clone(),
                rule,
            };
            ctx.register_udf(ScalarUDF::new_from_impl(capped));
        }
    }
}

/// The largest integer argument `i` takes over the batch (`None`: not an integer, or null).
fn max_int(args: &[ColumnarValue], i: usize) -> Option<i64> {
    match args.get(i)? {
        ColumnarValue::Scalar(s) => match s {
            ScalarValue::Int64(v) => *v,
            ScalarValue::Int32(v) => v.map(i64::from),
            _ => None,
        },
        ColumnarValue::Array(a) => a
            .as_primitive_opt::<Int64Type>()
            .and_then(|a| a.iter().flatten().max()),
    }
}

fn min_int(args: &[ColumnarValue], i: usize) -> Option<i64> {
    match args.get(i)? {
        ColumnarValue::Array(a) => a
            .as_primitive_opt::<Int64Type>()
            .and_then(|a| a.iter().flatten().min()),
        scalar => max_int(std::slice::from_ref(scalar), 0),
    }
}

/// The longest text argument `i` holds over the batch, in bytes.
fn max_len(args: &[ColumnarValue], i: usize) -> i64 {
    let Some(v) = args.get(i) else { return 0 };
    let len = match v {
        ColumnarValue::Scalar(s) => match s {
            ScalarValue::Utf8(Some(t))
            | ScalarValue::LargeUtf8(Some(t))
            | ScalarValue::Utf8View(Some(t)) => t.len(),
            _ => 0,
        },
        ColumnarValue::Array(a) => match a.data_type() {
            DataType::Utf8 => a.as_string::<i32>().iter().flatten().map(str::len).max(),
            DataType::LargeUtf8 => a.as_string::<i64>().iter().flatten().map(str::len).max(),
            DataType::Utf8View => a.as_string_view().iter().flatten().map(str::len).max(),
            _ => None,
        }
        .unwrap_or(0),
    };
    len as i64
}

impl Capped {
    fn check(&self, args: &[ColumnarValue], rows: usize) -> datafusion::common::Result<()> {
        let rows = rows.max(1) as i64;
        let (size, cap, what) = match self.rule {
            Rule::Repeat => (
                max_len(args, 0).saturating_mul(max_int(args, 1).unwrap_or(0)),
                VALUE_BYTES,
                "bytes",
            ),
            Rule::Pad => (
                max_int(args, 1).unwrap_or(0).saturating_mul(4),
                VALUE_BYTES,
                "bytes",
            ),
            Rule::ListOf => (max_int(args, 1).unwrap_or(0), LIST_ITEMS, "elements"),
            Rule::Series => {
                let (start, stop) = match args.len() {
                    1 => (Some(0), max_int(args, 0)),
                    _ => (min_int(args, 0), max_int(args, 1)),
                };
                let step = match args.get(2) {
                    Some(_) => min_int(args, 2)
                        .map(i64::abs)
                        .filter(|s| *s > 0)
                        .unwrap_or(1),
                    None => 1,
                };
                let span = match (start, stop) {
                    (Some(a), Some(b)) => b.saturating_sub(a).saturating_abs() / step,
                    _ => 0,
                };
                (span, LIST_ITEMS, "elements")
            }
        };
        if size.saturating_mul(rows) > cap {
            return Err(DataFusionError::Execution(format!(
                "{}() would build {} {what} here (over pond's cap of {cap} per batch of rows); ask for smaller values",
                self.inner.name(),
                size.saturating_mul(rows)
            )));
        }
        Ok(())
    }
}

impl ScalarUDFImpl for Capped {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs,
    ) -> datafusion::common::Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> datafusion::common::Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        self.check(&args.args, args.number_rows)?;
        self.inner.invoke_with_args(args)
    }
}

/// `b` with every text cell longer than `max` bytes cut there, and a note of how much was
/// left out; `None` when no cell was that long (the batch is kept as it is).
pub fn cap_cells(b: &RecordBatch, max: usize) -> Option<RecordBatch> {
    let long = |c: &ArrayRef| {
        c.as_string_opt::<i32>()
            .is_some_and(|s| s.iter().flatten().any(|v| v.len() > max))
    };
    if !b.columns().iter().any(long) {
        return None;
    }
    let columns: Vec<ArrayRef> = b
        .columns()
        .iter()
        .map(|c| match c.as_string_opt::<i32>() {
            Some(s) if long(c) => Arc::new(
                s.iter()
                    .map(|v| {
                        v.map(|v| {
                            if v.len() <= max {
                                return v.to_owned();
                            }
                            let cut = v.floor_char_boundary(max);
                            format!("{} … [{} more bytes]", &v[..cut], v.len() - cut)
                        })
                    })
                    .collect::<StringArray>(),
            ) as ArrayRef,
            _ => c.clone(),
        })
        .collect();
    let fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).ok()
}
