#!/usr/bin/env python3
"""Record what pond answers on a corpus, over the CLI and over MCP (stdio), one file per
answer, so two builds can be compared byte for byte (`diff -r`): the check that a refactor
changed no answer.

    scripts/compare-answers.py --pond OLD_BIN --corpus ../shared/corpus --out /tmp/a
    scripts/compare-answers.py --pond NEW_BIN --corpus ../shared/corpus --out /tmp/b
    diff -r /tmp/a/answers /tmp/b/answers

Each run syncs the corpus into a fresh store under --out. Figures that change from run to
run by nature (timings, pids, footprints, dates of the sync) are not recorded: status is
compared through its counts (SQL), not its prose.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

QUERIES = [
    "error", "test", "install package", "git commit", "docker", "config file",
    "why does", "memory leak", "TODO", "refactor the parser", "README", "permission denied",
]
SQL = [
    "SELECT count(*) AS n FROM messages",
    "SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY role",
    "SELECT source_agent, count(*) AS n FROM sessions GROUP BY source_agent ORDER BY source_agent",
    "SELECT part_type, count(*) AS n FROM parts GROUP BY part_type ORDER BY part_type",
    "SELECT count(*) AS n, sum(length(raw)) AS bytes FROM records",
    "SELECT id, project, message_count FROM sessions ORDER BY id LIMIT 40",
]


def run(pond, store, args):
    env = dict(os.environ, POND_AUTO_SYNC_MINS="0")
    env.pop("RUST_LOG", None)
    env.pop("POND_LOG", None)
    p = subprocess.run([pond, "--store", store, *args], capture_output=True, env=env)
    return p.returncode, p.stdout, p.stderr


class Mcp:
    """A minimal MCP client over stdio (JSON-RPC, one message per line)."""

    def __init__(self, pond, store):
        env = dict(os.environ, POND_AUTO_SYNC_MINS="0")
        self.p = subprocess.Popen(
            [pond, "--store", store, "mcp"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.id = 0
        self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "compare-answers", "version": "1"}})
        self.notify("notifications/initialized")

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def notify(self, method):
        self.send({"jsonrpc": "2.0", "method": method})

    def request(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("pond mcp closed its stdout")
            msg = json.loads(line)
            if msg.get("id") == self.id:
                return msg

    def call(self, name, args):
        return self.request("tools/call", {"name": name, "arguments": args})

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pond", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    store = os.path.join(a.out, "store")
    answers = os.path.join(a.out, "answers")
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(answers)

    def keep(name, data):
        data = data if isinstance(data, bytes) else data.encode()
        # A query's duration ("3 rows in 58 ms") differs from run to run.
        data = re.sub(rb"rows? in [0-9]+ ms", b"rows in _ ms", data)
        with open(os.path.join(answers, name), "wb") as f:
            f.write(data)

    code, out, err = run(a.pond, store, ["sync", "--path", a.corpus, "--json"])
    if code != 0:
        sys.exit(f"sync failed: {err.decode(errors='replace')}")
    report = json.loads(out)
    for k in ["files_seen", "messages_added", "parts_added", "records_added", "skipped",
              "skipped_by_reason", "sessions_touched"]:
        keep(f"sync.{k}", json.dumps(report.get(k)))

    n = 0
    for q in QUERIES:
        for fmt in [[], ["--json"]]:
            code, out, err = run(a.pond, store, ["search", q, "--limit", "20", *fmt])
            keep(f"cli.search.{n:03}", out + b"\n--stderr--\n" + err + f"\n{code}".encode())
            n += 1
    for i, q in enumerate(SQL):
        for fmt in ["table", "json", "csv"]:
            code, out, err = run(a.pond, store, ["sql", q, "--format", fmt])
            keep(f"cli.sql.{i:02}.{fmt}", out + f"\n{code}".encode())
    _, ids, _ = run(a.pond, store, ["sql", "SELECT id FROM sessions ORDER BY id", "--format", "json"])
    sessions = [r["id"] for r in json.loads(ids)]
    _, mids, _ = run(a.pond, store, [
        "sql", "SELECT id FROM messages WHERE searchable ORDER BY session_id, id LIMIT 4000",
        "--format", "json"])
    messages = [r["id"] for r in json.loads(mids)][::97]
    for i, s in enumerate(sessions):
        code, out, err = run(a.pond, store, ["get-session", s])
        keep(f"cli.session.{i:03}", out + f"\n{code}".encode())
        code, out, err = run(a.pond, store, ["get-session", s, "--json", "--limit", "5"])
        keep(f"cli.session.{i:03}.json", out + f"\n{code}".encode())
    for i, m in enumerate(messages):
        code, out, err = run(a.pond, store, ["get-message", m, "--json"])
        keep(f"cli.message.{i:03}", out + f"\n{code}".encode())
    # Mistakes answer the same too.
    for i, args in enumerate([["get-session", "no-such-session"], ["sql", "DELETE FROM messages"],
                              ["search", ""], ["get-message", "nope"]]):
        code, out, err = run(a.pond, store, args)
        keep(f"cli.mistake.{i}", out + b"\n--stderr--\n" + err + f"\n{code}".encode())

    mcp = Mcp(a.pond, store)
    tools = mcp.request("tools/list", {})
    keep("mcp.tools", json.dumps(tools.get("result"), sort_keys=True, indent=1))
    schema = mcp.request("resources/read", {"uri": "pond://schema"})
    keep("mcp.schema", json.dumps(schema.get("result"), sort_keys=True, indent=1))
    for i, q in enumerate(QUERIES):
        keep(f"mcp.search.{i:03}", json.dumps(mcp.call("pond_search", {"query": q, "limit": 20}), sort_keys=True, indent=1))
    for i, s in enumerate(sessions[::3]):
        keep(f"mcp.session.{i:03}", json.dumps(mcp.call("pond_get_session", {"id": s}), sort_keys=True, indent=1))
    for i, m in enumerate(messages):
        keep(f"mcp.message.{i:03}", json.dumps(mcp.call("pond_get_message", {"id": m, "context_before": 2, "context_after": 2}), sort_keys=True, indent=1))
    for i, q in enumerate(SQL):
        keep(f"mcp.sql.{i:02}", json.dumps(mcp.call("pond_sql", {"query": q}), sort_keys=True, indent=1))
    for i, (name, args) in enumerate([("pond_search", {}), ("pond_get_session", {"id": "x"}),
                                      ("pond_sql", {"query": "DROP TABLE messages"}),
                                      ("pond_nope", {})]):
        keep(f"mcp.mistake.{i}", json.dumps(mcp.call(name, args), sort_keys=True, indent=1))
    mcp.close()
    print(f"{len(os.listdir(answers))} answers in {answers}")


if __name__ == "__main__":
    main()
