//! Read-only SQL over the store's datasets with DataFusion.
//!
//! One `SELECT` (or `WITH ... SELECT`) statement; DDL, DML, `COPY`, `SET` and multiple
//! statements are refused before planning, and DataFusion's own read-only options refuse
//! anything that slips through. Unless secrets are revealed, the query reads the tables
//! through masked views (`sql_mask`). Results are capped by rows and by the bytes their
//! cells print; the query by a timeout and a memory pool. In the long-lived front this runs in the `sql` worker, which can be
//! killed: a timeout in this function stops a query that yields, not one that does not.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::error::DataFusionError;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{Expr, Query, SetExpr, Statement, Visit, Visitor};
use futures::StreamExt;
use lance::datafusion::LanceTableProvider;
use pond_protocol::Format;

use crate::error::{Result, StoreError};
use crate::schema::{FILES, MESSAGES, PARTS, RECORDS, SESSIONS, USAGE};
use crate::store::Store;
use crate::{sql_caps, sql_mask};

#[derive(Debug, Clone, Copy)]
pub struct SqlLimits {
    pub max_rows: usize,
    pub max_bytes: usize,
    pub timeout: Duration,
    /// DataFusion memory pool; sorts and joins past it fail instead of growing.
    pub memory_bytes: usize,
}

impl Default for SqlLimits {
    fn default() -> Self {
        SqlLimits {
            max_rows: 200,
            max_bytes: 256 * 1024,
            timeout: Duration::from_secs(30),
            memory_bytes: 512 << 20,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SqlResult {
    pub batches: Vec<RecordBatch>,
    pub rows: usize,
    /// Why the result stops early, if it does.
    pub truncated: Option<String>,
    pub elapsed: Duration,
}

impl SqlResult {
    /// Rows, time, and why the result stops early if it does.
    pub fn footer(&self) -> String {
        let mut s = format!("{} rows in {} ms", self.rows, self.elapsed.as_millis());
        if let Some(t) = &self.truncated {
            s.push_str("; ");
            s.push_str(t);
        }
        s
    }
}

/// The longest query text accepted.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;
/// The deepest nesting of expressions accepted: DataFusion plans and optimizes expressions
/// recursively, and a chain of 500 `+` (or 1,000 `OR`) overflowed its stack.
pub const MAX_EXPR_DEPTH: usize = 256;
/// The parse and the checks run on a thread with this much stack: a deep expression tree is
/// also visited and dropped recursively (only the pages touched are ever resident).
const CHECK_STACK: usize = 256 << 20;

/// Refuse anything but one read-only query, before anything is planned: one statement, a
/// query whose every part reads (no `WITH … INSERT`, no `SELECT … INTO`), of bounded size
/// and expression depth.
pub fn check_read_only(sql: &str) -> Result<()> {
    if sql.len() > MAX_QUERY_BYTES {
        return Err(StoreError::InvalidQuery(format!(
            "the query is {} bytes, over the {MAX_QUERY_BYTES}-byte limit; select with a shorter query",
            sql.len()
        )));
    }
    let sql = sql.to_owned();
    std::thread::Builder::new()
        .name("sql-check".into())
        .stack_size(CHECK_STACK)
        .spawn(move || check_statement(&sql))
        .map_err(StoreError::Io)?
        .join()
        .unwrap_or_else(|_| {
            Err(StoreError::InvalidQuery(
                "the query could not be checked (it is too deeply nested); simplify it".into(),
            ))
        })
}

fn check_statement(sql: &str) -> Result<()> {
    let statements = DFParser::parse_sql(sql)
        .map_err(|e| StoreError::InvalidQuery(format!("cannot parse the query: {e}")))?;
    match statements.len() {
        0 => return Err(StoreError::InvalidQuery("the query is empty".into())),
        1 => {}
        n => {
            return Err(StoreError::InvalidQuery(format!(
                "{n} statements given; send one SELECT at a time"
            )))
        }
    }
    let refuse = |what: &str| {
        StoreError::InvalidQuery(format!(
            "only read-only SELECT/WITH queries are allowed; {what} is refused (the archive is never changed through SQL)"
        ))
    };
    let query = match &statements[0] {
        DfStatement::Statement(s) => match &**s {
            Statement::Query(q) => q,
            other => {
                let shown = other.to_string();
                return Err(refuse(
                    shown.split_whitespace().next().unwrap_or("this statement"),
                ));
            }
        },
        other => {
            let shown = other.to_string();
            return Err(refuse(
                shown.split_whitespace().next().unwrap_or("this statement"),
            ));
        }
    };
    let mut gate = ReadOnlyGate::default();
    if let ControlFlow::Break(e) = query.visit(&mut gate) {
        return Err(e);
    }
    Ok(())
}

/// Walks a parsed query: every nested query must be a read, and expressions nest at most
/// [`MAX_EXPR_DEPTH`] deep.
#[derive(Default)]
struct ReadOnlyGate {
    depth: usize,
}

impl Visitor for ReadOnlyGate {
    type Break = StoreError;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<StoreError> {
        let writes = match &*query.body {
            SetExpr::Insert(_) => Some("INSERT"),
            SetExpr::Update(_) => Some("UPDATE"),
            SetExpr::Delete(_) => Some("DELETE"),
            SetExpr::Merge(_) => Some("MERGE"),
            SetExpr::Select(s) if s.into.is_some() => Some("SELECT … INTO"),
            _ => None,
        };
        match writes {
            Some(w) => ControlFlow::Break(StoreError::InvalidQuery(format!(
                "only read-only SELECT/WITH queries are allowed; {w} is refused, inside a WITH too (the archive is never changed through SQL)"
            ))),
            None => ControlFlow::Continue(()),
        }
    }

    fn pre_visit_statement(&mut self, s: &Statement) -> ControlFlow<StoreError> {
        let shown = s.to_string();
        let verb = shown
            .split_whitespace()
            .next()
            .unwrap_or("a statement")
            .to_owned();
        ControlFlow::Break(StoreError::InvalidQuery(format!(
            "only read-only SELECT/WITH queries are allowed; {verb} inside the query is refused"
        )))
    }

    fn pre_visit_expr(&mut self, _: &Expr) -> ControlFlow<StoreError> {
        self.depth += 1;
        if self.depth > MAX_EXPR_DEPTH {
            return ControlFlow::Break(StoreError::InvalidQuery(format!(
                "the query nests expressions more than {MAX_EXPR_DEPTH} deep (a long chain of +, ||, AND or OR counts one level per operator); shorten it: `x IN (a, b, c)` for many ORs, concat(a, b, c) for many ||, or a CTE"
            )));
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<StoreError> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
}

/// The tables a query can name, and what each holds.
pub const TABLES: [(&str, &str); 6] = [
    (SESSIONS, "one row per session: id, parent_session_id, source_agent, project, created_at, updated_at, title, source_path, header"),
    (MESSAGES, "one row per message line of a session: session_id, id, timestamp, role, source_agent, project, search_text, searchable, model, source_path, source_line, origin (own, copied, sidechain), replayed (a copy of a message another session owns)"),
    (PARTS, "content blocks: session_id, message_id, ordinal, part_type, tool_name, call_id, is_error, text, body"),
    (RECORDS, "every source line verbatim: source_path, line, byte_offset, session_id, record_type, raw"),
    (FILES, "ingest state per source file: path, cursor (JSON), synced_at"),
    (USAGE, "one row per model call (an API response, a Codex turn) with the tokens its client recorded, each call once: session_id (a subagent's calls count for its parent session), message_id, key, timestamp, source_agent, project, model, request_id, input_tokens (not read from a cache), output_tokens (reasoning included), cache_write_tokens, cache_read_tokens, reasoning_tokens, cost_usd (only where the client recorded it; pond usage prices the rest), source_path, source_line"),
];

/// Run one read-only query. With `masked`, every table is read through its masked view
/// (`sql_mask::masked_table`): no function of the query sees a secret, so none returns one
/// transformed; without it (the CLI's `--reveal-secrets`) the tables are read as stored.
pub async fn run_sql(
    store: &Store,
    sql: &str,
    limits: SqlLimits,
    masked: bool,
) -> Result<SqlResult> {
    check_read_only(sql)?;
    let started = Instant::now();
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(limits.memory_bytes, 1.0)
        .with_disk_manager_builder(
            DiskManagerBuilder::default()
                .with_mode(DiskManagerMode::Directories(vec![spill_dir(store)?])),
        )
        .build_arc()?;
    let config = SessionConfig::new().with_batch_size(1024);
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    sql_caps::register(&ctx);
    for (name, _) in TABLES {
        if let Some(ds) = store.dataset(name).await? {
            let table: Arc<dyn TableProvider> =
                Arc::new(LanceTableProvider::new(Arc::new(ds), false, false));
            let table = match masked {
                true => sql_mask::masked_table(name, table)?,
                false => table,
            };
            ctx.register_table(name, table)?;
        }
    }
    let options = SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let sql = sql.to_owned();
    let run = async move {
        let df = ctx
            .sql_with_options(&sql, options)
            .await
            .map_err(query_error)?;
        let mut stream = df.execute_stream().await.map_err(query_error)?;
        let mut batches = Vec::new();
        let (mut rows, mut bytes) = (0usize, 0usize);
        let mut truncated = None;
        while let Some(b) = stream.next().await {
            let b = b.map_err(query_error)?;
            // Cells are cut to the byte cap before anything is kept, and a batch is cut at
            // the row whose printed cells would pass the cap (the first row is always kept):
            // no result outgrows it, whatever one row holds.
            let b = sql_caps::cap_cells(&b, limits.max_bytes).unwrap_or(b);
            let most = b.num_rows().min(limits.max_rows - rows);
            let mut take = 0;
            for size in printed_bytes(&b, most)? {
                if bytes + size > limits.max_bytes && rows + take > 0 {
                    break;
                }
                bytes += size;
                take += 1;
            }
            rows += take;
            let full = take < most;
            batches.push(b.slice(0, take));
            if full {
                truncated = Some(format!(
                    "stopped at the byte cap ({} bytes of cells); select fewer or shorter columns",
                    limits.max_bytes
                ));
                break;
            }
            if rows >= limits.max_rows {
                truncated = Some(format!(
                    "stopped at the row cap ({} rows); add LIMIT/OFFSET or raise max_rows",
                    limits.max_rows
                ));
                break;
            }
        }
        Ok::<_, StoreError>((batches, rows, truncated))
    };
    // A spawned task, so the timeout fires even while a plan computes without yielding.
    // The task itself may go on burning CPU until its process exits: the CLI exits right
    // after, and the front runs SQL in a worker it kills.
    let task = tokio::spawn(run);
    let abort = task.abort_handle();
    let (batches, rows, truncated) = match tokio::time::timeout(limits.timeout, task).await {
        Ok(joined) => {
            joined.map_err(|e| StoreError::InvalidQuery(format!("query task failed: {e}")))??
        }
        Err(_) => {
            abort.abort();
            return Err(StoreError::Timeout(limits.timeout.as_secs()));
        }
    };
    Ok(SqlResult {
        batches,
        rows,
        truncated,
        elapsed: started.elapsed(),
    })
}

/// The bytes each of `b`'s first `rows` rows prints: its cells as the text table shows
/// them (before long ones are shortened), and one separator a cell.
fn printed_bytes(b: &RecordBatch, rows: usize) -> Result<Vec<usize>> {
    use std::fmt::Write;
    /// Counts what is written to it.
    struct Count(usize);
    impl Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let opts = arrow_cast::display::FormatOptions::default().with_null("NULL");
    let cells = b
        .columns()
        .iter()
        .map(|c| arrow_cast::display::ArrayFormatter::try_new(c.as_ref(), &opts))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((0..rows)
        .map(|row| {
            let mut n = Count(0);
            for c in &cells {
                let _ = write!(n, "{} ", c.value(row));
            }
            n.0
        })
        .collect())
}

/// A query's failure, classified: what the query asks that cannot be (an unknown table or
/// column, a type that does not fit, a value that does not parse, a function's argument
/// out of range) is the caller's mistake, said with how to fix it (DataFusion's messages
/// name the columns an unknown one could be; an unknown table is answered with the
/// tables); a failure to read the store is pond's.
fn query_error(e: DataFusionError) -> StoreError {
    use arrow_schema::ArrowError;
    let mistake = match e.find_root() {
        DataFusionError::Plan(_)
        | DataFusionError::SchemaError(..)
        | DataFusionError::SQL(..)
        | DataFusionError::NotImplemented(_)
        | DataFusionError::Execution(_) => true,
        DataFusionError::ArrowError(a, _) => matches!(
            **a,
            ArrowError::CastError(_)
                | ArrowError::ParseError(_)
                | ArrowError::InvalidArgumentError(_)
                | ArrowError::DivideByZero
                | ArrowError::ArithmeticOverflow(_)
                | ArrowError::ComputeError(_)
        ),
        // A function's own refusal of its argument, e.g. a regular expression that does
        // not parse (regexp_replace('a', '(', 'b'), `x ~ '('`).
        DataFusionError::External(inner) => inner.to_string().contains("regex parse error"),
        _ => false,
    };
    if !mistake {
        return StoreError::DataFusion(e);
    }
    let mut message = e.find_root().to_string();
    if message.contains("table") && message.contains("not found") {
        let names: Vec<&str> = TABLES.iter().map(|(name, _)| *name).collect();
        message.push_str(&format!("; the tables are {}", names.join(", ")));
    }
    StoreError::InvalidQuery(message)
}

/// Where this process's queries spill (under the store, not the system's temp dir: spilled
/// rows are archive text), after removing what queries of processes that died left.
fn spill_dir(store: &Store) -> Result<PathBuf> {
    let root = store.root().join("tmp");
    for e in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let dead = name
            .strip_prefix("sql-")
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if dead {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let dir = root.join(format!("sql-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Longest cell shown in the text table.
const CELL_CHARS: usize = 200;

/// Render a result, its cells masked first when `mask` (so a table's columns are laid out
/// around the placeholders): text, the UTF-8 of bytes, and the text inside lists, structs,
/// maps and dictionaries, whatever a query built from literals; the text table shortens
/// long cells (JSON and CSV keep them whole).
pub fn render(result: &SqlResult, format: Format, mask: bool) -> Result<String> {
    let masked: Vec<RecordBatch>;
    let batches = if mask {
        masked = result
            .batches
            .iter()
            .map(|b| {
                let columns = b.columns().iter().map(sql_mask::mask_array).collect();
                RecordBatch::try_new(b.schema(), columns)
            })
            .collect::<std::result::Result<_, _>>()?;
        &masked
    } else {
        &result.batches
    };
    match format {
        Format::Table => {
            let opts = arrow_cast::display::FormatOptions::default().with_null("NULL");
            let shortened: Vec<RecordBatch> = batches
                .iter()
                .map(|b| shorten_cells(b, CELL_CHARS))
                .collect::<Result<_>>()?;
            Ok(
                arrow_cast::pretty::pretty_format_batches_with_options(&shortened, &opts)?
                    .to_string(),
            )
        }
        Format::Json => {
            let mut w = arrow_json::ArrayWriter::new(Vec::new());
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
            let out = w.into_inner();
            Ok(if out.is_empty() {
                "[]".into()
            } else {
                String::from_utf8_lossy(&out).into_owned()
            })
        }
        Format::Csv => {
            let mut w = arrow_csv::WriterBuilder::new()
                .with_header(true)
                .build(Vec::new());
            for b in batches {
                w.write(b)?;
            }
            Ok(String::from_utf8_lossy(&w.into_inner()).into_owned())
        }
    }
}

fn shorten_cells(b: &RecordBatch, max_chars: usize) -> Result<RecordBatch> {
    map_strings(b, |v| {
        let one_line = v.replace('\n', "⏎");
        if one_line.chars().count() > max_chars {
            let mut t: String = one_line.chars().take(max_chars).collect();
            t.push('…');
            t
        } else {
            one_line
        }
    })
}

/// `b` with every string cell (of any string type; a column of another type is kept)
/// passed through `f`; string columns come back as `Utf8`.
fn map_strings(b: &RecordBatch, f: impl Fn(&str) -> String) -> Result<RecordBatch> {
    use arrow_array::cast::AsArray;
    use arrow_array::{ArrayRef, StringArray};
    use arrow_schema::DataType;
    let cols: Vec<ArrayRef> = b
        .columns()
        .iter()
        .map(|c| {
            let strings = |it: &mut dyn Iterator<Item = Option<&str>>| {
                Arc::new(it.map(|v| v.map(&f)).collect::<StringArray>()) as ArrayRef
            };
            match c.data_type() {
                DataType::Utf8 => strings(&mut c.as_string::<i32>().iter()),
                DataType::LargeUtf8 => strings(&mut c.as_string::<i64>().iter()),
                DataType::Utf8View => strings(&mut c.as_string_view().iter()),
                _ => c.clone(),
            }
        })
        .collect();
    let fields: Vec<_> = b
        .schema()
        .fields()
        .iter()
        .zip(&cols)
        .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(arrow_schema::Schema::new(fields)),
        cols,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_gate() {
        assert!(check_read_only("SELECT 1").is_ok());
        assert!(check_read_only("with t as (select 1 as x) select x from t").is_ok());
        for bad in [
            "DELETE FROM messages",
            "DROP TABLE messages",
            "INSERT INTO messages VALUES (1)",
            "CREATE TABLE x AS SELECT 1",
            "SELECT 1; SELECT 2",
            "COPY messages TO '/tmp/x'",
            "SET datafusion.execution.batch_size = 1",
            "",
            "SELEC oops",
            "WITH t AS (SELECT 1) INSERT INTO messages SELECT * FROM t",
            "SELECT * INTO newtable FROM messages",
            "WITH t AS (SELECT * INTO x FROM messages) SELECT 1",
            "SELECT * FROM (SELECT * INTO x FROM messages) AS y",
        ] {
            assert!(check_read_only(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn deep_or_huge_queries_are_refused_with_a_hint_not_a_crash() {
        for (op, n) in [
            ("+", 500),
            (" OR ", 1000),
            ("||", 600),
            (" AND ", 5000),
            ("+", 30000),
        ] {
            let q = format!("SELECT {}", vec!["1"; n].join(op));
            let e = check_read_only(&q).unwrap_err().to_string();
            assert!(
                e.contains("nests expressions") || e.contains("byte limit"),
                "{e}"
            );
        }
        let nested = format!("SELECT {}1{}", "(".repeat(300), ")".repeat(300));
        assert!(check_read_only(&nested).is_err());
        let fine = format!("SELECT {}", vec!["1"; 100].join(" + "));
        assert!(check_read_only(&fine).is_ok());
        let long = format!("SELECT '{}'", "x".repeat(MAX_QUERY_BYTES));
        assert!(check_read_only(&long)
            .unwrap_err()
            .to_string()
            .contains("byte limit"));
    }
}
