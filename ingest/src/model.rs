//! The canonical model, defined in `pond-rows` (so that the store reads it without linking
//! the parsers) and re-exported here, where the parsers write it; with the one helper they
//! share to read the token counts its usage rows hold.

pub use pond_rows::model::*;

/// A token count at `key` of `v`: a whole number (a float a client wrote is cut, one too
/// big for a `u64` becomes `u64::MAX`), 0 when absent or negative.
pub(crate) fn tokens(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key)
        .and_then(|n| n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)))
        .unwrap_or(0)
}
