//! The bridge of `pond mcp` ([`bridge`]) and the rendezvous of a store's resident server
//! ([`rendezvous`]: its socket, lock and state file).
//!
//! What it is for: the code both binaries run to reach the server. `pond` uses it to start
//! the server and, failing the small binary, to bridge in process; `pond-bridge` is this
//! crate and a `main`; `pond-front`'s server listens where the rendezvous says.
//!
//! What it is not: a client of the store. It depends on std, nix (fork, peer credentials)
//! and serde_json (to peek at the lines it copies) alone, so the bridge that runs once per
//! agent session stays small: it must never depend on `pond-front` or anything that
//! links Lance.

pub mod bridge;
pub mod rendezvous;
