//! The store's error type: what went wrong, and what the caller can do about it.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("lance: {0}")]
    Lance(#[from] lance::Error),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("sql: {0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Locked(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidQuery(String),
    #[error("query timed out after {0} s; narrow it (WHERE, LIMIT) or raise the timeout")]
    Timeout(u64),
    /// A derived file (the row map) is damaged; rebuilding it fixes this.
    #[error("{0}")]
    Corrupt(String),
    /// The store was written by an older pond; `pond rebuild` (or a sync) upgrades it.
    #[error("the store at {0} was written by an older pond (one row per message id); run `pond rebuild` or `pond sync` to upgrade it")]
    Outdated(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;
