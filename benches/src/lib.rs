//! pond's benchmarks and the corpus generator they run on.
//!
//! [`corpus`] writes deterministic, realistic Claude Code and Codex trees of a requested
//! number of messages (the `gen-corpus` binary); [`report`] prints a bench's figures as one
//! JSON line plus a human table; [`standin`] draws stand-in sentence vectors; [`procs`] finds processes by their command
//! lines. The benches themselves are in `benches/`.

pub mod corpus;
pub mod procs;
pub mod report;
pub mod standin;
pub mod stdio;
pub mod work;
