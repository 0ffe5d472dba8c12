#!/usr/bin/env bash
# Build pond (release) and run it. With no arguments: `pond sync` into the default local
# store ($XDG_DATA_HOME/pond), then `pond status`.
#   scripts/run.sh                      # sync every client's home, show counts
#   scripts/run.sh search "flaky test"  # any pond command
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --bin pond --bin pond-bridge >&2
pond="$CARGO_TARGET_DIR/release/pond"
if [ "$#" -eq 0 ]; then
  "$pond" sync
  "$pond" status
else
  exec "$pond" "$@"
fi
