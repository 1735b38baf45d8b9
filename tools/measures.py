#!/usr/bin/env python3
"""The structure measures of issue 47, printed for a checkout (default: this one).

    python3 tools/measures.py [DIR]

`match self` blocks in the engine's Session, matches on the engine kind
outside the engine, the CLI's main.rs length, `Params { … }` written outside
kernels/, kernel modules with a free `workgroups()`, Rust functions over 60
lines and files over 450 lines (tests included, fuzz targets and build output
left out). Import circles are a test (crates/contract/tests/layout.rs); the
pairs of repeated lines come from a duplicate finder, not from here.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)


def rust_files(*dirs):
    for d in dirs:
        for p in sorted((root / d).rglob("*.rs")):
            if "target" not in p.parts:
                yield p


def text(p):
    return p.read_text()


def long_functions(lines, limit=60):
    """(length, first line) of each `fn` body longer than `limit` lines."""
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(pub(\([^)]*\))? )?(async )?(const )?(unsafe )?fn \w+", line)
        if not m:
            continue
        k = i  # the line that opens the body (or ends a bodiless declaration)
        while k < len(lines) and "{" not in lines[k] and ";" not in lines[k]:
            k += 1
        if k == len(lines):
            continue
        head = lines[k]
        if ";" in head and ("{" not in head or head.index(";") < head.index("{")):
            continue
        if head.count("{") == head.count("}"):
            continue  # a one-line body
        for j in range(k + 1, len(lines)):
            if lines[j] == m.group(1) + "}":
                if j - i + 1 > limit:
                    out.append((j - i + 1, i + 1))
                break
    return out


session = root / "crates/engine/src/session.rs"
print("match self blocks in session.rs:", text(session).count("match self"))
outside = [
    p for p in rust_files("src", "crates/cli/src")
    if re.search(r"Session::(Gpu|Cpu|Remote)\b", text(p))
]
print("files matching on the engine kind outside the engine:", len(outside))
print("crates/cli/src/main.rs lines:", len(text(root / "crates/cli/src/main.rs").splitlines()))
params = 0
for p in rust_files("crates/engine/src", "crates/cli/src", "src"):
    if "crates/engine/src/kernels" in str(p):
        continue
    params += sum(1 for l in text(p).splitlines() if "Params {" in l and "struct Params" not in l)
print("Params { … } written outside kernels/:", params)
free = [p.name for p in rust_files("crates/engine/src/kernels") if "\npub fn workgroups(" in text(p)]
print("kernel modules with a free workgroups():", len(free))
long, big = [], []
for p in rust_files("crates", "src"):
    if "fuzz" in p.parts:
        continue
    lines = text(p).splitlines()
    if len(lines) > 450:
        big.append((len(lines), str(p.relative_to(root))))
    long += [(n, f"{p.relative_to(root)}:{at}") for n, at in long_functions(lines)]
print("functions over 60 lines:", len(long))
for n, where in sorted(long, reverse=True):
    print(f"  {n:4} {where}")
print("files over 450 lines:", len(big), "".join(f"\n  {n:4} {p}" for n, p in sorted(big, reverse=True)))
