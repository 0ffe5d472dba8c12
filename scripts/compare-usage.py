#!/usr/bin/env python3
"""Compare `pond usage daily --json` with ccusage 18.0.11 on one Claude Code folder.

    scripts/compare-usage.py CLAUDE_DIR [--pond PATH] [--store DIR] [--tz ZONE]

CLAUDE_DIR is a Claude Code config folder (it holds `projects/`). The folder is synced into
a fresh store (a temporary one unless --store names one), then both tools sum it per day in
the same zone (TZ, UTC unless --tz): input, output, cache-write and cache-read tokens must
be equal; cost must be within 1 % where both price every model of the day (ccusage counts
a model it cannot price as $0; pond says "no price" and leaves it out of its cost).
Needs npm (npx) and network access to fetch ccusage the first time. Exit status 1 when a
day differs. Not part of the test suite.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FIELDS = [
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cacheCreationTokens", "cache_write_tokens"),
    ("cacheReadTokens", "cache_read_tokens"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("claude_dir")
    ap.add_argument("--pond", default="pond")
    ap.add_argument("--store")
    ap.add_argument("--tz", default="UTC")
    a = ap.parse_args()
    env = dict(os.environ, TZ=a.tz, CLAUDE_CONFIG_DIR=a.claude_dir)
    store = a.store or tempfile.mkdtemp(prefix="pond-usage-")
    projects = os.path.join(a.claude_dir, "projects")
    subprocess.run(
        [a.pond, "--store", store, "-q", "sync", "--source", "claude-code", "--path", projects, "--no-embed"],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )
    pond = json.loads(subprocess.run(
        [a.pond, "--store", store, "usage", "daily", "--json"],
        env=env, check=True, capture_output=True, text=True).stdout)
    ccu = json.loads(subprocess.run(
        ["npx", "--yes", "ccusage@18.0.11", "daily", "--offline", "--json"],
        env=env, check=True, capture_output=True, text=True).stdout)
    theirs = {d["date"]: d for d in ccu["daily"]}
    ours = {r["group"]: r for r in pond["rows"]}
    bad = 0
    for day in sorted(set(theirs) | set(ours)):
        t, o = theirs.get(day), ours.get(day)
        if t is None or o is None:
            print(f"{day}: only in {'pond' if t is None else 'ccusage'}")
            bad += 1
            continue
        diffs = [f"{c}: ccusage {t[c]} pond {o[p]}" for c, p in FIELDS if t[c] != o[p]]
        unpriced = [m["model"] for m in o.get("models", []) if m["unpriced_calls"] > 0]
        cost = o["cost_usd"] or 0.0
        if unpriced:
            note = f"cost not compared: no price in pond for {', '.join(unpriced)}"
        elif abs(cost - t["totalCost"]) > 0.01 * max(abs(t["totalCost"]), 1e-9):
            diffs.append(f"cost: ccusage {t['totalCost']:.4f} pond {cost:.4f}")
            note = ""
        else:
            note = f"cost {cost:.4f} vs {t['totalCost']:.4f}"
        status = "DIFFERS " + "; ".join(diffs) if diffs else "same"
        print(f"{day}: tokens {status}{'; ' + note if note else ''}")
        bad += bool(diffs)
    print(f"{len(set(theirs) | set(ours))} days, {bad} differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
