//! The restrictions every search mode shares (project, session, agent, role, time), as a
//! Lance filter expression: every value quoted by `schema::sql_str`, every name checked.

use crate::error::{Result, StoreError};
use crate::schema::sql_str;

/// Restrictions shared by every search mode.
#[derive(Debug, Clone, Default)]
pub struct SearchFilters {
    /// Substring of the project path, in any case (`Shop` matches `/home/a/shop`).
    pub project: Option<String>,
    pub session_id: Option<String>,
    /// A client's name (`claude-code`, `codex`, `copilot`: also its subagents) or a
    /// variant's (`claude-code/subagent`).
    pub source_agent: Option<String>,
    pub role: Option<String>,
    /// Inclusive lower bound, epoch ms.
    pub from: Option<i64>,
    /// Exclusive upper bound, epoch ms ([`parse_end_date`] reads a day as its end).
    pub to: Option<i64>,
}

/// The roles search covers: only user and assistant messages have search text (a system
/// note, a tool call or result is stored, listed in its session and read by SQL).
pub const SEARCHABLE_ROLES: [&str; 2] = ["user", "assistant"];

impl SearchFilters {
    /// The Lance filter expression, or `None` when nothing is restricted.
    pub fn to_sql(&self) -> Result<Option<String>> {
        let mut parts = Vec::new();
        if let Some(p) = &self.project {
            let escaped = p
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            parts.push(format!(
                "project ILIKE {} ESCAPE '\\'",
                sql_str(&format!("%{escaped}%"))
            ));
        }
        if let Some(s) = &self.session_id {
            parts.push(format!("session_id = {}", sql_str(s)));
        }
        if let Some(a) = &self.source_agent {
            parts.push(agent_filter(&a.to_lowercase())?);
        }
        if let Some(r) = &self.role.as_deref().map(str::to_lowercase) {
            if !SEARCHABLE_ROLES.contains(&r.as_str()) {
                let why = match pond_rows::Role::parse(r) {
                    Some(_) => format!(
                        "no {r} message is searchable (search covers user and assistant \
                         messages; SQL reads the others: SELECT ... FROM messages WHERE role = '{r}')"
                    ),
                    None => format!("unknown role {r:?}"),
                };
                return Err(StoreError::InvalidQuery(format!(
                    "{why}: use user or assistant"
                )));
            }
            parts.push(format!("role = {}", sql_str(r)));
        }
        if let Some(f) = self.from {
            parts.push(format!("timestamp >= {}", ts_literal(f)));
        }
        if let Some(t) = self.to {
            parts.push(format!("timestamp < {}", ts_literal(t)));
        }
        Ok((!parts.is_empty()).then(|| parts.join(" AND ")))
    }

    /// Refuse a time range that holds no instant (its start not before its end).
    pub fn check_range(&self) -> Result<()> {
        match (self.from, self.to) {
            (Some(f), Some(t)) if f >= t => Err(StoreError::InvalidQuery(format!(
                "the time range is reversed or empty: from {} is not before to {}; swap them \
                 (a to date without a time includes its whole day)",
                show_ms(f),
                show_ms(t)
            ))),
            _ => Ok(()),
        }
    }
}

/// An instant as a person reads it in an error: in the zone days are read in, with its
/// offset (`UTC` for zero), as the front shows times.
fn show_ms(ms: i64) -> String {
    let t = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    let t = if crate::zone::is_utc() {
        t.fixed_offset()
    } else {
        t.with_timezone(&chrono::Local).fixed_offset()
    };
    match t.offset().local_minus_utc() {
        0 => t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        _ => t.format("%Y-%m-%d %H:%M:%S %:z").to_string(),
    }
}

/// A client's name (or alias) matches its sessions and its subagents' (`claude-code`,
/// `claude-code/subagent`); a variant's name matches that variant only.
fn agent_filter(a: &str) -> Result<String> {
    if let Some(source) = pond_rows::Client::parse(a) {
        let mut names = vec![source.name];
        names.extend(source.agents);
        let list: Vec<String> = names.iter().map(|n| sql_str(n)).collect();
        return Ok(format!("source_agent IN ({})", list.join(", ")));
    }
    let names = pond_rows::clients::agent_names();
    if names.contains(&a) {
        return Ok(format!("source_agent = {}", sql_str(a)));
    }
    Err(StoreError::InvalidQuery(format!(
        "unknown agent {a:?}: use {}",
        pond_rows::clients::name_list(&names)
    )))
}

/// The first and last instants a bound may name (years 1 to 9999): a bound past them
/// (`--to 9999-12-31`, `--since 20000y`) means no bound on that side, not an error.
const EARLIEST_MS: i64 = -62_135_596_800_000;
const LATEST_MS: i64 = 253_402_300_799_999;

fn ts_literal(ms: i64) -> String {
    let ms = ms.clamp(EARLIEST_MS, LATEST_MS);
    let t = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    format!("TIMESTAMP '{}'", t.format("%Y-%m-%d %H:%M:%S%.3f"))
}

/// How a date may be written, for errors.
pub const DATE_FORMS: &str = "YYYY-MM-DD (a day in your time zone), an RFC 3339 time like \
    2026-03-01T10:00:00Z, today, yesterday, or a time ago like 12h, 3d, 2w, 6mo, 1y";

/// A lower bound: a day (`2026-03-01`, `today`, `yesterday`) as its start in the person's
/// zone ([`crate::zone`]), an RFC 3339 time as it is, a time ago (`3d`, `2w`) as that
/// instant.
pub fn parse_date(s: &str) -> Result<i64> {
    parse_bound(s, 0)
}

/// An upper bound, exclusive: a day as its end (the next day's start), so `--from D --to D`
/// is day D and `--to yesterday` takes in all of yesterday; an RFC 3339 time or a time ago
/// as that instant.
pub fn parse_end_date(s: &str) -> Result<i64> {
    parse_bound(s, 1)
}

fn parse_bound(s: &str, days_after: u64) -> Result<i64> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    let day = match s.to_ascii_lowercase().as_str() {
        "today" => Some(crate::zone::today()),
        "yesterday" => crate::zone::today().pred_opt(),
        _ => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok(),
    };
    if let Some(d) = day {
        let day = d
            .checked_add_days(chrono::Days::new(days_after))
            .unwrap_or(d);
        return Ok(crate::zone::day_start(day));
    }
    if let Some(ago) = time_ago(s) {
        return Ok(ago);
    }
    Err(StoreError::InvalidQuery(format!(
        "cannot read date {s:?}: use {DATE_FORMS}"
    )))
}

/// `12h`, `3d`, `2w`, `6mo`, `1y` (or `3days`, `2 weeks`): that long before now, epoch ms.
fn time_ago(s: &str) -> Option<i64> {
    let s = s.to_ascii_lowercase();
    let digits = s.find(|c: char| !c.is_ascii_digit())?;
    let n: i64 = s[..digits].parse().ok()?;
    let unit = s[digits..].trim();
    let unit = unit.strip_suffix(" ago").unwrap_or(unit).trim();
    let now = chrono::Utc::now();
    let then = match unit {
        "h" | "hour" | "hours" => now.checked_sub_signed(chrono::Duration::try_hours(n)?),
        "d" | "day" | "days" => now.checked_sub_signed(chrono::Duration::try_days(n)?),
        "w" | "week" | "weeks" => now.checked_sub_signed(chrono::Duration::try_weeks(n)?),
        "mo" | "month" | "months" => {
            now.checked_sub_months(chrono::Months::new(n.try_into().ok()?))
        }
        "y" | "year" | "years" => {
            now.checked_sub_months(chrono::Months::new(n.checked_mul(12)?.try_into().ok()?))
        }
        _ => None,
    }?;
    Some(then.timestamp_millis())
}
