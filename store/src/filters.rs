//! The restrictions every search mode shares (project, session, agent, role, time), as a
//! Lance filter expression: every value quoted by `schema::sql_str`, every name checked.

use crate::error::{Result, StoreError};
use crate::schema::sql_str;

/// Restrictions shared by every search mode.
#[derive(Debug, Clone, Default)]
pub struct SearchFilters {
    /// Substring of the project path (`shop` matches `/home/a/shop`).
    pub project: Option<String>,
    pub session_id: Option<String>,
    /// A client's name (`claude-code`, `codex`, `copilot`: also its subagents) or a
    /// variant's (`claude-code/subagent`).
    pub source_agent: Option<String>,
    pub role: Option<String>,
    /// Inclusive lower bound, epoch ms.
    pub from: Option<i64>,
    /// Exclusive upper bound, epoch ms.
    pub to: Option<i64>,
}

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
                "project LIKE {} ESCAPE '\\'",
                sql_str(&format!("%{escaped}%"))
            ));
        }
        if let Some(s) = &self.session_id {
            parts.push(format!("session_id = {}", sql_str(s)));
        }
        if let Some(a) = &self.source_agent {
            parts.push(agent_filter(a)?);
        }
        if let Some(r) = &self.role {
            if pond_ingest::Role::parse(r).is_none() {
                return Err(StoreError::InvalidQuery(format!(
                    "unknown role {r:?}: use user, assistant, system or tool"
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
}

/// A client's name (or alias) matches its sessions and its subagents' (`claude-code`,
/// `claude-code/subagent`); a variant's name matches that variant only.
fn agent_filter(a: &str) -> Result<String> {
    if let Some(source) = pond_ingest::Source::parse(a) {
        let mut names = vec![source.name];
        names.extend(source.agents);
        let list: Vec<String> = names.iter().map(|n| sql_str(n)).collect();
        return Ok(format!("source_agent IN ({})", list.join(", ")));
    }
    let names = pond_ingest::sources::agent_names();
    if names.contains(&a) {
        return Ok(format!("source_agent = {}", sql_str(a)));
    }
    Err(StoreError::InvalidQuery(format!(
        "unknown agent {a:?}: use {}",
        pond_ingest::sources::name_list(&names)
    )))
}

fn ts_literal(ms: i64) -> String {
    let t = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    format!("TIMESTAMP '{}'", t.format("%Y-%m-%d %H:%M:%S%.3f"))
}

/// `2026-03-01`, `2026-03-01T10:00:00Z` or any RFC 3339 time, to epoch ms.
pub fn parse_date(s: &str) -> Result<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d
            .and_hms_opt(0, 0, 0)
            .expect("midnight")
            .and_utc()
            .timestamp_millis());
    }
    Err(StoreError::InvalidQuery(format!(
        "cannot read date {s:?}: use YYYY-MM-DD or an RFC 3339 time like 2026-03-01T10:00:00Z"
    )))
}
