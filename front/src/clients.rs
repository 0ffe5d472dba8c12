//! The MCP clients a serving front answers: one entry per session (its transport, since
//! when, how many calls), listed by the status. An entry leaves when its session ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// One connected client.
#[derive(Debug)]
pub struct Client {
    pub transport: &'static str,
    /// Unix ms.
    pub since_ms: i64,
    calls: AtomicU64,
}

impl Client {
    /// A tool call or resource read.
    pub fn called(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientStatus {
    pub transport: &'static str,
    pub since_ms: i64,
    pub calls: u64,
}

/// Every client of a front.
#[derive(Debug, Clone, Default)]
pub struct Clients(Arc<Mutex<Vec<Arc<Client>>>>);

/// A client's place in [`Clients`], given up when dropped.
pub struct Attached {
    clients: Clients,
    pub client: Arc<Client>,
}

impl Clients {
    pub fn attach(&self, transport: &'static str) -> Attached {
        let client = Arc::new(Client {
            transport,
            since_ms: chrono::Utc::now().timestamp_millis(),
            calls: AtomicU64::new(0),
        });
        self.0.lock().expect("clients").push(client.clone());
        Attached {
            clients: self.clone(),
            client,
        }
    }

    pub fn list(&self) -> Vec<ClientStatus> {
        self.0
            .lock()
            .expect("clients")
            .iter()
            .map(|c| ClientStatus {
                transport: c.transport,
                since_ms: c.since_ms,
                calls: c.calls.load(Ordering::Relaxed),
            })
            .collect()
    }

    pub fn count(&self) -> usize {
        self.0.lock().expect("clients").len()
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.clients
            .0
            .lock()
            .expect("clients")
            .retain(|c| !Arc::ptr_eq(c, &self.client));
    }
}
