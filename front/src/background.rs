//! The serving front's background sync: keep the archive current while an agent works,
//! noting each outcome for the status ([`crate::status::BackgroundSync`]).

use std::time::Duration;

use pond_protocol::sync::SyncRequest;
use pond_protocol::ErrorKind;

use crate::ops::Front;
use crate::params::EmbedAfter;
use crate::status::{BackgroundOutcome, BackgroundSync, EmbedOutcome};

/// Sync `request` in a one-shot worker at start and then every `every`.
#[derive(Debug, Clone)]
pub struct AutoSync {
    pub every: Duration,
    pub request: SyncRequest,
}

impl Front {
    /// Sync now and then every `auto.every`, embedding what each sync added. A sync that
    /// finds the store locked (another front or a CLI sync is at it) is skipped.
    pub async fn auto_sync(self, auto: AutoSync) {
        loop {
            let started_ms = chrono::Utc::now().timestamp_millis();
            let outcome = match self
                .sync(auto.request.clone(), EmbedAfter::Added, None)
                .await
            {
                Ok(s) => BackgroundOutcome::Done {
                    files_seen: s.report.files_seen,
                    messages_added: s.report.messages_added,
                    skipped: s.report.skipped,
                    embedding: s.embedded.map(|e| match e {
                        Ok(r) => EmbedOutcome::Embedded {
                            messages: r.embedded,
                        },
                        Err(e) if e.kind == ErrorKind::Locked => EmbedOutcome::Locked,
                        Err(e) => {
                            tracing::warn!("background embedding failed: {e}");
                            EmbedOutcome::Failed { error: e.message }
                        }
                    }),
                },
                Err(e) if e.kind == ErrorKind::Locked => BackgroundOutcome::Locked,
                Err(e) => {
                    tracing::warn!("background sync failed: {e}");
                    BackgroundOutcome::Failed { error: e.message }
                }
            };
            *self.background.lock().expect("background note") = Some(BackgroundSync {
                started_ms,
                outcome,
            });
            tokio::time::sleep(auto.every).await;
        }
    }
}
