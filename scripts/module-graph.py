#!/usr/bin/env python3
"""The module graph of every crate of the workspace, and its import cycles.

    scripts/module-graph.py            # fail (exit 1) on a cycle, print nothing else
    scripts/module-graph.py --show     # print each crate's edges between sibling modules

An edge A -> B means code in module A (or below it) names `crate::B...` (or `super::B`,
resolved), where A and B are siblings: two modules of one parent. A parent naming its child
or a child its parent (`use super::*`) is how Rust modules nest and is not an edge. Test code
(`tests.rs`, `#[cfg(test)] mod tests`) and comments (doc links) are left out. A cycle is two
or more siblings that reach each other.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = re.compile(r"\b(crate|super|self)((?:::\w+)+)")


def crates():
    for d in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, d, "src")
        if os.path.isfile(os.path.join(ROOT, d, "Cargo.toml")) and os.path.isdir(src):
            yield d, src
    yield ".", os.path.join(ROOT, "src")


def module_path(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def code_of(path):
    text = open(path, encoding="utf-8").read()
    cut = re.search(r"#\[cfg\(test\)\]\s*mod \w+\s*\{", text)
    text = text[: cut.start()] if cut else text
    # Comments (doc links among them) name modules without importing them.
    return re.sub(r"//.*", "", text)


def graph(src):
    files = {}
    for dirpath, _, names in os.walk(src):
        for n in names:
            if not n.endswith(".rs") or n == "tests.rs":
                continue
            if dirpath != src and "bin" in os.path.relpath(dirpath, src).split(os.sep)[:1]:
                continue
            rel = os.path.relpath(os.path.join(dirpath, n), src)
            files[module_path(rel)] = code_of(os.path.join(dirpath, n))
    modules = set(files)
    edges = set()
    for here, code in files.items():
        for kind, rest in REF.findall(code):
            names = rest.split("::")[1:]
            if kind == "crate":
                base = ()
            elif kind == "self":
                base = here
            else:
                base = here[:-1]
                while names and names[0] == "super":
                    base, names = base[:-1], names[1:]
            target = base + tuple(names)
            while target and target not in modules:
                target = target[:-1]
            common = 0
            while common < min(len(here), len(target)) and here[common] == target[common]:
                common += 1
            if common == len(here) or common == len(target):
                continue  # the same module, a parent or a child
            a, b = here[: common + 1], target[: common + 1]
            edges.add((a, b))
    return edges


def cycles(edges):
    adj = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(adj):
        if v not in index:
            visit(v)
    return out


def main():
    show = "--show" in sys.argv
    bad = False
    for name, src in crates():
        edges = graph(src)
        if show:
            print(f"{name}:")
            for a, b in sorted(edges):
                print(f"  {'::'.join(a)} -> {'::'.join(b)}")
        for c in cycles(edges):
            bad = True
            print(f"{name}: import cycle among {', '.join('::'.join(m) for m in c)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
