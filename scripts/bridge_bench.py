#!/usr/bin/env python3
"""The shared server from the bridge's side: cold start (no server) to the first
`tools/list` answer, attach to a running server and answer `tools/list` (p50 over --runs),
and the footprint (RssAnon + VmSwap) of a bridge and of the server with --clients bridges
attached. Prints one JSON line, then a table.

    scripts/bridge_bench.py --pond ~/.cache/pond/target/release/pond --store STORE

Uses a private XDG_RUNTIME_DIR, so it never attaches to a server of yours; stops the server
it started at the end.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time


def footprint_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    kib = lambda k: int(fields.get(k, "0 kB").split()[0])
    return kib("RssAnon") + kib("VmSwap")


class Bridge:
    def __init__(self, pond, store, env):
        self.p = subprocess.Popen(
            [pond, "--store", store, "mcp", "--auto-sync-mins", "0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.next_id = 0

    def send(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self.next_id += 1
            msg["id"] = self.next_id
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        if notify:
            return None
        while True:
            answer = json.loads(self.p.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def hello(self):
        self.send(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bridge_bench", "version": "1"},
            },
        )
        self.send("notifications/initialized", notify=True)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def server_pid(store):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if store.encode() in args and b"serve" in args and not args[0].endswith(b"pond-bridge"):
            return int(pid)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pond", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--clients", type=int, default=8)
    a = ap.parse_args()
    store = os.path.realpath(a.store)
    run_dir = tempfile.mkdtemp(prefix="pond-bridge-bench-")
    env = dict(os.environ, XDG_RUNTIME_DIR=run_dir, POND_AUTO_SYNC_MINS="0")
    env.pop("POND_STANDALONE", None)

    t = time.perf_counter()
    first = Bridge(a.pond, store, env)
    first.hello()
    first.send("tools/list", {})
    cold_ms = (time.perf_counter() - t) * 1000

    attach = []
    for _ in range(a.runs):
        t = time.perf_counter()
        b = Bridge(a.pond, store, env)
        b.hello()
        b.send("tools/list", {})
        attach.append((time.perf_counter() - t) * 1000)
        b.close()

    clients = [Bridge(a.pond, store, env) for _ in range(a.clients)]
    for c in clients:
        c.hello()
        c.send("tools/call", {"name": "pond_search", "arguments": {"query": "error"}})
    time.sleep(0.5)
    bridge_kib = max(footprint_kib(c.p.pid) for c in clients)
    server = server_pid(store)
    server_kib = footprint_kib(server) if server else 0
    for c in clients + [first]:
        c.close()
    if server:
        os.kill(server, signal.SIGTERM)

    figures = {
        "bench": "bridge_bench",
        "cold_start_to_tools_list_ms": round(cold_ms, 1),
        "attach_tools_list_p50_ms": round(statistics.median(attach), 1),
        "attach_tools_list_max_ms": round(max(attach), 1),
        "bridge_footprint_kib": bridge_kib,
        "server_footprint_kib_with_clients": server_kib,
        "clients": a.clients,
    }
    print(json.dumps(figures))
    print("bridge_bench")
    for k, v in figures.items():
        if k != "bench":
            print(f"  {k:36} {v}")


if __name__ == "__main__":
    main()
