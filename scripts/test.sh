#!/usr/bin/env bash
# Build and run every test: unit tests, the end-to-end tests over the real binary, and (when
# ../shared/corpus exists) the real-corpus test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo test --workspace "$@"
