//! What `pond forget` removed, kept so that no later sync stores it again although the
//! source files are still there: the forgotten sessions' ids and the files that held them
//! (`<store>/forgotten.json`, written atomically). `pending` is set before a forget
//! changes anything and cleared after its last step, so a forget that died is completed by
//! the next forget or sync.
//!
//! Which sessions a request selects is decided here too ([`select`]): by id, by project,
//! by age, always with their subagent sessions.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use arrow_array::types::UInt64Type;
use futures::TryStreamExt;
use pond_protocol::job::ForgetRequest;
use pond_rows::SessionRow;
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::read::{primitive_col, session_rows, string_col};
use crate::schema::{sql_str, MESSAGES, SESSIONS};
use crate::store::Store;

pub const FORGOTTEN: &str = "forgotten.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forgotten {
    pub sessions: BTreeSet<String>,
    /// Source files (their path keys) whose lines are not read again.
    pub paths: BTreeSet<String>,
    /// A forget began and has not finished.
    pub pending: bool,
}

impl Forgotten {
    /// The store's tombstones (none yet: empty). A damaged file is an error, never read as
    /// empty: that would let a sync bring back what the user removed.
    pub fn load(root: &Path) -> Result<Forgotten> {
        let path = root.join(FORGOTTEN);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                StoreError::Failed(format!(
                    "{} is damaged ({e}): it lists what `pond forget` removed, and a sync \
                     will not run without it; restore it or remove it to forget nothing",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Forgotten::default()),
            Err(e) => Err(e.into()),
        }
    }

    pub fn save(&self, root: &Path) -> Result<()> {
        crate::store::write_atomic(&root.join(FORGOTTEN), &serde_json::to_vec_pretty(self)?)
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty() && self.paths.is_empty()
    }
}

/// The row ids of the `messages` rows of `sessions`.
pub async fn message_rows(store: &Store, sessions: &BTreeSet<String>) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let Some(ds) = store.latest(MESSAGES).await? else {
        return Ok(out);
    };
    let ids: Vec<String> = sessions.iter().map(|s| sql_str(s)).collect();
    for chunk in ids.chunks(500) {
        let mut scan = ds.scan();
        scan.with_row_id()
            .project::<&str>(&[])?
            .filter(&format!("session_id IN ({})", chunk.join(",")))?;
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            out.extend(primitive_col::<UInt64Type>(&b, "_rowid")?.values().iter());
        }
    }
    Ok(out)
}

/// The sessions outside `sessions` that hold a copy of a message one of `sessions` owns,
/// with how many copies each holds, by id. A resumed session's file begins with its
/// predecessor's lines: once the predecessor is forgotten, its messages get an owner there
/// again (the copies are the other sessions' replayed rows until then).
pub async fn copies(store: &Store, sessions: &BTreeSet<String>) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let Some(ds) = store.latest(MESSAGES).await? else {
        return Ok(out);
    };
    let mut owned = HashSet::new();
    let ids: Vec<String> = sessions.iter().map(|s| sql_str(s)).collect();
    for chunk in ids.chunks(500) {
        let mut scan = ds.scan();
        scan.project(&["id"])?.filter(&format!(
            "session_id IN ({}) AND replayed = false",
            chunk.join(",")
        ))?;
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            owned.extend(string_col(&b, "id")?.iter().flatten().map(str::to_owned));
        }
    }
    if owned.is_empty() {
        return Ok(out);
    }
    let mut scan = ds.scan();
    scan.project(&["session_id", "id"])?
        .filter("replayed = true")?;
    let mut stream = scan.try_into_stream().await?;
    while let Some(b) = stream.try_next().await? {
        let (holders, ids) = (string_col(&b, "session_id")?, string_col(&b, "id")?);
        for i in 0..b.num_rows() {
            let holder = holders.value(i);
            if owned.contains(ids.value(i)) && !sessions.contains(holder) {
                *out.entry(holder.to_owned()).or_default() += 1;
            }
        }
    }
    Ok(out)
}

/// The stored sessions `req` selects (every selector given must match), with their
/// subagent sessions, in id order. A request with no selector is refused.
pub async fn select(store: &Store, req: &ForgetRequest) -> Result<Vec<SessionRow>> {
    if req.session.is_none() && req.project.is_none() && req.before_ms.is_none() {
        return Err(StoreError::InvalidQuery(
            "say what to forget: --session ID, --project SUBSTRING or --before DATE".into(),
        ));
    }
    if req.project.as_deref() == Some("") {
        return Err(StoreError::InvalidQuery(
            "an empty --project would match every session; name part of a project path".into(),
        ));
    }
    let Some(ds) = store.latest(SESSIONS).await? else {
        return Ok(Vec::new());
    };
    let all = session_rows(&ds, None).await?;
    let matches = |s: &SessionRow| {
        req.session.as_ref().is_none_or(|id| &s.id == id)
            && req.project.as_ref().is_none_or(|p| {
                s.project
                    .as_deref()
                    .is_some_and(|sp| sp.contains(p.as_str()))
            })
            && req
                .before_ms
                .is_none_or(|t| s.updated_at.or(s.created_at).is_some_and(|last| last < t))
    };
    let mut chosen: HashSet<String> = all
        .iter()
        .filter(|s| matches(s))
        .map(|s| s.id.clone())
        .collect();
    if let Some(id) = &req.session {
        if chosen.is_empty() {
            return Err(StoreError::NotFound(format!(
                "no stored session {id:?}; pond_search or `pond search` shows session ids"
            )));
        }
    }
    // Subagents, and theirs, to any depth.
    loop {
        let before = chosen.len();
        for s in &all {
            if s.parent_id.as_ref().is_some_and(|p| chosen.contains(p)) {
                chosen.insert(s.id.clone());
            }
        }
        if chosen.len() == before {
            break;
        }
    }
    let mut out: Vec<SessionRow> = all.into_iter().filter(|s| chosen.contains(&s.id)).collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}
