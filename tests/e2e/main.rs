//! End-to-end tests: the real `pond` binary on temp stores.
//!
//! One test binary with modules keeps link time down.

mod ask;
mod clients;
mod common;
mod config;
mod corpus;
mod docs;
mod embed;
mod exact;
mod faults;
mod forget;
mod hardening;
mod http;
mod identity;
mod inspector;
mod install;
mod masking;
mod mcp;
mod privacy;
mod query;
mod replays;
mod restore;
mod rowmap;
mod serve;
mod sessions;
mod sync;
mod times;
mod trust;
mod usage;
