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
    /// A step the store relies on failed (an embedding, a task): pond's fault, not the
    /// caller's.
    #[error("{0}")]
    Failed(String),
    /// The store was written by an older pond; `pond rebuild` (or a sync) upgrades it.
    #[error("the store at {0} was written by an older pond (one row per message id); run `pond rebuild` or `pond sync` to upgrade it")]
    Outdated(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A store failure as the front and the workers report it, classified by who must act:
/// the caller (a bad query, an unknown id), the user (a store to upgrade), a limit, or pond.
impl From<StoreError> for pond_protocol::JobError {
    fn from(e: StoreError) -> Self {
        use pond_protocol::ErrorKind;
        let kind = match &e {
            StoreError::NotFound(_) => ErrorKind::NotFound,
            StoreError::InvalidQuery(_) => ErrorKind::Invalid,
            StoreError::Timeout(_) => ErrorKind::Timeout,
            StoreError::Locked(_) => ErrorKind::Locked,
            StoreError::Outdated(_) => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        };
        pond_protocol::JobError::new(kind, e.to_string())
    }
}
