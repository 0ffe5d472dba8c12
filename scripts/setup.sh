#!/usr/bin/env bash
# Install what building pond needs, if it is missing: a Rust toolchain on PATH and protoc
# (Lance compiles protobuf definitions). Sourced by run.sh and test.sh.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "pond needs a Rust toolchain (cargo): see https://rustup.rs" >&2
  exit 1
fi

# The style gates of scripts/test.sh need rustfmt and clippy.
if command -v rustup >/dev/null 2>&1 &&
  ! { cargo fmt --version && cargo clippy --version; } >/dev/null 2>&1; then
  rustup component add rustfmt clippy >&2
fi

if ! command -v protoc >/dev/null 2>&1; then
  echo "installing protoc (Debian package protobuf-compiler)..." >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  if command -v apt-get >/dev/null 2>&1; then
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq protobuf-compiler >&2
  elif command -v brew >/dev/null 2>&1; then
    brew install protobuf >&2
  else
    echo "cannot install protoc here: install the protobuf compiler and retry" >&2
    exit 1
  fi
fi

# One target dir outside the clone, shared by every checkout and kept between runs.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POND_TARGET_DIR:-$HOME/.cache/pond/target}}"
mkdir -p "$CARGO_TARGET_DIR"
