//! The jobs that pond runs outside its long-lived front process: one module per job kind.
//!
//! What it is for: work whose memory grows with the corpus or the input. Today that is the
//! sync job ([`sync`]), run by `pond sync`; the supervisor runs the same functions in
//! short-lived worker processes, so the front never holds their peaks.
//!
//! What it is not: a process manager. A job here is an async function from a
//! `pond-protocol` request to a report; which process calls it is the caller's business.

pub mod sync;
