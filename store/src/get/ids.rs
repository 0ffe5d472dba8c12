//! Ids a person can type: a session or message id given whole, or as an unambiguous
//! prefix of at least [`MIN_ID_PREFIX`] characters (git-style). Every verb and tool that
//! takes an id resolves it here.
//!
//! A prefix is looked up as a range (`id >= prefix AND id < next`): `messages.id` has a
//! B-tree, so a message prefix reads a few index pages, not the column; `sessions` is one
//! row per session.

use lance::Dataset;

use crate::error::{Result, StoreError};
use crate::read::string_col;
use crate::schema::{sql_str, MESSAGES, SESSIONS};
use crate::store::Store;

/// The shortest prefix that stands for a whole id.
pub const MIN_ID_PREFIX: usize = 6;
/// Candidates an ambiguous prefix lists.
const SHOWN: usize = 5;

/// The session id `given` names: itself if it is one (or matches none: the caller says it
/// is not found), else the one session whose id starts with it.
pub async fn resolve_session_id(store: &Store, given: &str) -> Result<String> {
    let Some(ds) = store.latest(SESSIONS).await? else {
        return Ok(given.to_owned());
    };
    resolve(&ds, given, None, "session").await
}

/// The message id `given` names, as [`resolve_session_id`] does for sessions. A replayed
/// copy of a message is not a candidate (its owner's row is).
pub async fn resolve_message_id(store: &Store, given: &str) -> Result<String> {
    let Some(ds) = store.latest(MESSAGES).await? else {
        return Ok(given.to_owned());
    };
    if let Some(m) = store.mapped(&ds) {
        if m.map.position_of_message(given)?.is_some() {
            return Ok(given.to_owned());
        }
    }
    resolve(&ds, given, Some("NOT replayed"), "message").await
}

async fn resolve(ds: &Dataset, given: &str, also: Option<&str>, what: &str) -> Result<String> {
    if given.is_empty() {
        return Ok(given.to_owned());
    }
    let mut filter = format!("id >= {}", sql_str(given));
    if let Some(next) = next_prefix(given) {
        filter.push_str(&format!(" AND id < {}", sql_str(&next)));
    }
    if let Some(a) = also {
        filter = format!("{a} AND {filter}");
    }
    let mut found = ids(ds, &filter, Some(SHOWN + 1)).await?;
    if found.iter().any(|id| id == given) {
        return Ok(given.to_owned());
    }
    if found.len() > SHOWN {
        // The exact id may be past the first few candidates.
        let exact = format!(
            "{} id = {}",
            also.map_or(String::new(), |a| format!("{a} AND")),
            sql_str(given)
        );
        if !ids(ds, &exact, Some(1)).await?.is_empty() {
            return Ok(given.to_owned());
        }
    }
    if found.is_empty() {
        return Ok(given.to_owned());
    }
    let chars = given.chars().count();
    if chars < MIN_ID_PREFIX {
        return Err(StoreError::InvalidQuery(format!(
            "{given:?} is {chars} characters, too short for a {what} id prefix: give at least {MIN_ID_PREFIX}, or the whole id"
        )));
    }
    if found.len() == 1 {
        return Ok(found.remove(0));
    }
    let total = ds.count_rows(Some(filter)).await?;
    found.truncate(SHOWN);
    let more = if total > found.len() { ", …" } else { "" };
    Err(StoreError::InvalidQuery(format!(
        "{given:?} starts {total} {what} ids ({}{more}): give more of the id",
        found.join(", ")
    )))
}

/// The distinct ids the filter selects (up to `limit` rows), sorted.
async fn ids(ds: &Dataset, filter: &str, limit: Option<usize>) -> Result<Vec<String>> {
    let mut scan = ds.scan();
    scan.project(&["id"])?
        .filter(filter)?
        .limit(limit.map(|n| n as i64), None)?;
    let batches: Vec<_> = futures::TryStreamExt::try_collect(scan.try_into_stream().await?).await?;
    let mut out = Vec::new();
    for b in &batches {
        let id = string_col(b, "id")?;
        out.extend((0..b.num_rows()).map(|i| id.value(i).to_owned()));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The least string greater than every string that starts with `prefix` (its last
/// character that can be raised, raised), or `None` if there is none.
fn next_prefix(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let raised = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(c) = raised {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::next_prefix;

    #[test]
    fn the_next_prefix_bounds_every_extension() {
        assert_eq!(next_prefix("512f6c").as_deref(), Some("512f6d"));
        assert_eq!(next_prefix("ab\u{10FFFF}").as_deref(), Some("ac"));
        assert_eq!(next_prefix("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(next_prefix("\u{10FFFF}"), None);
        for s in ["512f6c", "512f6c0", "512f6cff-zz", "512f6c\u{10FFFF}"] {
            assert!(s < next_prefix("512f6c").unwrap().as_str());
        }
    }
}
