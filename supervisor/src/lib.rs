//! The front: what the long-lived `pond mcp` process runs, and how it speaks.
//!
//! What it is for: answering queries (full-text search, get) on the store's capped Lance
//! caches, and presenting every answer as bounded text an agent or a person can read
//! ([`render`]). It measures its own memory the way pond's targets are stated
//! ([`footprint`]). The MCP server, the router and one actor per worker kind land here
//! with the supervisor work; heavy jobs are never run here outside `--in-process` mode.
//!
//! What it is not: a place for heavy work. It depends on `pond-store` for queries and
//! never on `pond-workers`.

pub mod footprint;
pub mod render;
