//! Who owns each message id, as a sync sees it: the rule that makes a store's answers
//! independent of the order its files were read in.
//!
//! `messages` holds one row per (session, message id): every session lists every message
//! line of its own file. When an id occurs in several sessions (a subagent file replaying
//! its parent's lines, a resumed session's file copying its predecessor's), exactly one of
//! its rows is the *owner*: the one with the lowest [`Claim`], `(origin, session)` (see
//! `pond_rows::Origin`; sessions compare by the xxh3 of their id, an arbitrary but fixed
//! order). Only the owner is searchable and `get-message` resolves to it; every other row
//! is stored with `replayed = true` and no search text. Since the owner is the minimum over
//! all occurrences, it does not depend on which file was read first: a better claim that
//! arrives later *demotes* the stored owner (the writer rewrites that row as a replayed
//! copy).
//!
//! [`Occurrences`] answers the two questions the writer asks of every message line: is this
//! (session, id) stored already (then the line is a duplicate), and who owns the id now. The
//! row map answers for the rows it covers; the rows newer than it (or every row, without a
//! usable map) and this sync's own are kept here as hashes.
//!
//! The claim's order: a session's own line (`own`) beats a main file's copy of another
//! session's line (`copied`), which beats a subagent's replay (`sidechain`). A sync reads
//! session files before subagent files, so demotions are rare; when one happens (files
//! synced one by one in another order) the sync rebuilds the full-text index (the old
//! text must leave its statistics) and, through its changed fragments, the row map.
//! Tested by syncing fixtures in several orders (`tests/e2e/replays.rs`).

use std::collections::{HashMap, HashSet};

use futures::TryStreamExt;
use pond_rows::Origin;
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

use crate::error::Result;
use crate::read::{bool_at, string_col};
use crate::rowmap::{self, Mapped};
use crate::schema::MESSAGES;
use crate::store::Store;

/// The row map checked against `messages` at `ds`'s version, as a sync opens it: its body
/// hashed only if no sync checked this file before (`rowmap::Checked`), not at every sync
/// as a front does (that read every page of it, 1.2 s of a 1,000-message sync at 1M).
/// `None` when there is no map, it is damaged or it does not match.
fn sync_map(store: &Store, ds: &lance::Dataset) -> Option<Mapped> {
    let checked = rowmap::Checked::open(&store.rowmap_path());
    let map = match checked.and_then(|c| c.map(rowmap::Checked::map).transpose()) {
        Ok(map) => map?,
        Err(e) => {
            tracing::warn!("row map not used: {e}");
            return None;
        }
    };
    let mapped = Mapped::check(std::sync::Arc::new(map), ds);
    if mapped.is_none() {
        tracing::warn!("row map not used: it does not match the messages dataset");
    }
    mapped
}

/// An occurrence's claim to own its message id: lower wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Claim {
    pub origin: Origin,
    /// xxh3-64 of the session id.
    pub session: u64,
}

impl Claim {
    pub fn new(origin: Origin, session_id: &str) -> Claim {
        Claim {
            origin,
            session: session_hash(session_id),
        }
    }
}

pub fn session_hash(session_id: &str) -> u64 {
    xxh3_64(session_id.as_bytes())
}

fn id_hash(id: &str) -> u128 {
    xxh3_128(id.as_bytes())
}

/// What a new occurrence of a message id is, given what is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// This session already holds the id: the line is a duplicate, not stored again.
    Duplicate,
    /// The first occurrence of the id: it owns it.
    Owner,
    /// It owns the id from now on; the previous owner (with this claim) becomes a copy.
    Supersedes(Claim),
    /// Another occurrence owns the id: stored as a replayed copy.
    Replayed,
}

/// The stored occurrences of message ids, and their owners (see the module docs).
pub struct Occurrences {
    mapped: Option<Mapped>,
    /// The owner of each id the map does not cover, or whose owner changed in this sync
    /// (this overrides the map).
    owners: HashMap<u128, Claim>,
    /// (session, id) of the replayed copies the map does not cover.
    copies: HashSet<(u64, u128)>,
}

impl Occurrences {
    /// What `messages` holds now: the row map for the rows it covers, and a scan of the
    /// rows newer than it (every row without a usable map).
    pub async fn load(store: &Store) -> Result<Occurrences> {
        let mut known = Occurrences {
            mapped: None,
            owners: HashMap::new(),
            copies: HashSet::new(),
        };
        let Some(ds) = store.latest(MESSAGES).await? else {
            return Ok(known);
        };
        // Emptied to be re-derived (an upgrade, a forget): nothing to look up.
        if ds.fragments().is_empty() {
            return Ok(known);
        }
        known.mapped = sync_map(store, &ds);
        let delta = known.mapped.as_ref().map(|m| m.delta.clone());
        if delta.as_ref().is_some_and(Vec::is_empty) {
            return Ok(known);
        }
        let mut scan = ds.scan();
        scan.project(&["session_id", "id", "origin", "replayed"])?;
        if let Some(fragments) = delta {
            scan.with_fragments(fragments);
        }
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            let (session, id, origin) = (
                string_col(&b, "session_id")?,
                string_col(&b, "id")?,
                string_col(&b, "origin")?,
            );
            for i in 0..b.num_rows() {
                let claim = Claim::new(
                    Origin::parse(origin.value(i)).unwrap_or(Origin::Own),
                    session.value(i),
                );
                let h = id_hash(id.value(i));
                if bool_at(&b, "replayed", i)? == Some(true) {
                    known.copies.insert((claim.session, h));
                } else {
                    known.owners.insert(h, claim);
                }
            }
        }
        Ok(known)
    }

    /// The current owner of `id`, if any occurrence is stored.
    fn owner(&self, id: &str, h: u128) -> Result<Option<Claim>> {
        if let Some(c) = self.owners.get(&h) {
            return Ok(Some(*c));
        }
        if let Some(m) = &self.mapped {
            if let Some(pos) = m.map.position_of_message(id)? {
                let r = m.map.row(pos)?;
                return Ok(Some(Claim::new(r.origin, r.session_id)));
            }
        }
        Ok(None)
    }

    /// Whether `session` holds a row of `id`.
    fn holds(&self, session: u64, id: &str, h: u128) -> Result<bool> {
        if self.owners.get(&h).is_some_and(|c| c.session == session)
            || self.copies.contains(&(session, h))
        {
            return Ok(true);
        }
        if let Some(m) = &self.mapped {
            for pos in m.map.positions_of_message(id)? {
                if session_hash(m.map.row(pos)?.session_id) == session {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Decide what a new occurrence of `id` with `claim` is, and note it as stored.
    pub fn add(&mut self, id: &str, claim: Claim) -> Result<Verdict> {
        let h = id_hash(id);
        if self.holds(claim.session, id, h)? {
            return Ok(Verdict::Duplicate);
        }
        let verdict = match self.owner(id, h)? {
            None => Verdict::Owner,
            Some(owner) if owner <= claim => Verdict::Replayed,
            Some(owner) => Verdict::Supersedes(owner),
        };
        match verdict {
            Verdict::Replayed => {
                self.copies.insert((claim.session, h));
            }
            Verdict::Supersedes(old) => {
                self.copies.insert((old.session, h));
                self.owners.insert(h, claim);
            }
            _ => {
                self.owners.insert(h, claim);
            }
        }
        Ok(verdict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Occurrences {
        Occurrences {
            mapped: None,
            owners: HashMap::new(),
            copies: HashSet::new(),
        }
    }

    #[test]
    fn the_lowest_claim_owns_whatever_the_order() {
        let parent = Claim::new(Origin::Own, "P");
        let sub = Claim::new(Origin::Sidechain, "agent-x");
        let copy = Claim::new(Origin::Copied, "B");
        let mut a = fresh();
        assert_eq!(a.add("u1", parent).unwrap(), Verdict::Owner);
        assert_eq!(a.add("u1", sub).unwrap(), Verdict::Replayed);
        assert_eq!(a.add("u1", copy).unwrap(), Verdict::Replayed);
        assert_eq!(a.add("u1", parent).unwrap(), Verdict::Duplicate);
        assert_eq!(a.add("u1", sub).unwrap(), Verdict::Duplicate);

        let mut b = fresh();
        assert_eq!(b.add("u1", sub).unwrap(), Verdict::Owner);
        assert_eq!(b.add("u1", copy).unwrap(), Verdict::Supersedes(sub));
        assert_eq!(b.add("u1", parent).unwrap(), Verdict::Supersedes(copy));
        assert_eq!(b.add("u1", sub).unwrap(), Verdict::Duplicate);
        assert_eq!(b.add("u1", copy).unwrap(), Verdict::Duplicate);
        assert_eq!(b.owners[&id_hash("u1")], parent);
    }

    #[test]
    fn equal_origins_are_ordered_by_session() {
        let (x, y) = (
            Claim::new(Origin::Copied, "x"),
            Claim::new(Origin::Copied, "y"),
        );
        let (lo, hi) = if x < y { (x, y) } else { (y, x) };
        let mut a = fresh();
        a.add("m", hi).unwrap();
        assert_eq!(a.add("m", lo).unwrap(), Verdict::Supersedes(hi));
        let mut b = fresh();
        b.add("m", lo).unwrap();
        assert_eq!(b.add("m", hi).unwrap(), Verdict::Replayed);
    }
}
