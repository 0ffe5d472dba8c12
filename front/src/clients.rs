//! The MCP clients a serving front answers: one entry per session (its transport, since
//! when, how many calls), listed by the status. An entry leaves when its session ends.
//!
//! Each client also has its turns, so that many clients are served fairly: a few of its
//! tool calls answered at once, and one SQL query at a time per *peer*, the process or
//! transport its sessions come from (with the front's two SQL workers, a peer's long query
//! leaves the other to every other peer, however many sessions it opens). Calls past a
//! limit wait, in the order they came.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde::Serialize;
use tokio::sync::{Semaphore, SemaphorePermit};

/// A client's tool calls answered at once; with two cores, more would only take turns from
/// the other clients.
const CALLS_AT_ONCE: usize = 4;

/// One connected client.
#[derive(Debug)]
pub struct Client {
    pub transport: &'static str,
    /// Unix ms.
    pub since_ms: i64,
    calls: AtomicU64,
    turns: Semaphore,
    /// Shared by every client of the same peer.
    sql_turn: Arc<Semaphore>,
}

impl Client {
    /// A tool call or resource read.
    pub fn called(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Wait for this client's turn to run a tool call.
    pub async fn turn(&self) -> Option<SemaphorePermit<'_>> {
        self.turns.acquire().await.ok()
    }

    /// Wait for this client's turn to run a SQL query.
    pub async fn sql_turn(&self) -> Option<SemaphorePermit<'_>> {
        self.sql_turn.acquire().await.ok()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientStatus {
    pub transport: &'static str,
    pub since_ms: i64,
    pub calls: u64,
}

/// Every client of a front, and the SQL turn of each peer with a client.
#[derive(Debug, Clone, Default)]
pub struct Clients(
    Arc<Mutex<Vec<Arc<Client>>>>,
    Arc<Mutex<HashMap<String, Weak<Semaphore>>>>,
);

/// A client's place in [`Clients`], given up when dropped.
pub struct Attached {
    clients: Clients,
    pub client: Arc<Client>,
}

impl Clients {
    /// A new client of `peer`: the process at the other end of a Unix socket, or the
    /// transport (`stdio`, `http`: streamable HTTP sessions are not told their connection,
    /// and on loopback they all come from one address behind one token).
    pub fn attach(&self, transport: &'static str, peer: &str) -> Attached {
        let sql_turn = {
            let mut peers = self.1.lock().expect("peers");
            peers.retain(|_, turn| turn.strong_count() > 0);
            match peers.get(peer).and_then(Weak::upgrade) {
                Some(turn) => turn,
                None => {
                    let turn = Arc::new(Semaphore::new(1));
                    peers.insert(peer.to_owned(), Arc::downgrade(&turn));
                    turn
                }
            }
        };
        let client = Arc::new(Client {
            transport,
            since_ms: chrono::Utc::now().timestamp_millis(),
            calls: AtomicU64::new(0),
            turns: Semaphore::new(CALLS_AT_ONCE),
            sql_turn,
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

impl std::ops::Deref for Attached {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
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
