"""Our CPU engine against llama.cpp's (npm node-llama-cpp) on the same
GPT-2-shaped weights, format by format: ours f32 / f16 / int8 / int4 against
GGUF F32 / F16 / Q8_0 / Q4_0 (tools/bench/to_gguf.py), and int8 with
`--activations int8` against Q8_0 and int4 with it against Q4_0 again (both
sides then quantise the activations to 8 bits in blocks of 32: the
like-for-like rows), one thread each and
then every thread, round by round (A B A B …: the machine's drift falls on
both), medians. Before anything is timed, the greedy ids of ours in f32 and
llama.cpp's F32 must agree.

usage: vs_llama_cpp.py --bin decode-lab --model DIR --gguf-dir DIR [--rounds 3]
  (NODE_LLAMA_CPP: node-llama-cpp's dist/index.js)
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (our row's name, our flags, llama.cpp's format)
ROWS = [
    ("f32", ["--weights", "f32"], "F32"),
    ("f16", ["--weights", "f16"], "F16"),
    ("int8", ["--weights", "int8"], "Q8_0"),
    ("int8, int8 activations", ["--weights", "int8", "--activations", "int8"], "Q8_0"),
    ("int4", ["--weights", "int4"], "Q4_0"),
    ("int4, int8 activations", ["--weights", "int4", "--activations", "int8"], "Q4_0"),
]


def ours(a, flags, threads):
    """decode-lab bench on the CPU engine: (prefill ms, decode ms/token, greedy ids)."""
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    cmd = [a.bin, "bench", "--model", a.model, "--backend", "cpu", *flags,
           "--prompt-len", str(a.prompt_len), "--tokens", str(a.tokens)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    prefill = float(re.search(r"^prefill +([\d.]+) ms", out, re.M).group(1))
    decode = float(re.search(r"^decode +([\d.]+) ms/token", out, re.M).group(1))
    ids = [int(i) for i in re.search(r"^greedy ids +(.*)$", out, re.M).group(1).split()]
    return prefill, decode, ids


def theirs(a, kind, threads):
    """llama.cpp through tools/bench/llama_cpp.mjs: (prefill ms, decode ms/token, greedy ids)."""
    cmd = ["node", str(HERE / "llama_cpp.mjs"), gguf(a, kind), str(a.vocab), str(a.prompt_len),
           str(a.tokens), str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["prefill_ms"], r["decode_ms"], r["ids"]


def gguf(a, kind):
    """The model in `kind`, converted once."""
    path = Path(a.gguf_dir) / f"model-{kind}.gguf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(HERE / "to_gguf.py"), a.model, str(path), kind], check=True)
    return str(path)


def check(a):
    """Greedy ids of ours in f32 against llama.cpp's F32 (and, told, F16): the same model?"""
    _, _, mine = ours(a, ["--weights", "f32"], 1)
    _, _, peer = theirs(a, "F32", 1)
    print(f"greedy ids, ours f32:       {' '.join(map(str, mine))}")
    print(f"greedy ids, llama.cpp F32:  {' '.join(map(str, peer))}")
    if mine != peer:
        sys.exit("the greedy ids differ in f32: not the same model, so nothing is timed")
    _, _, mine16 = ours(a, ["--weights", "f16"], 1)
    _, _, peer16 = theirs(a, "F16", 1)
    print(f"f16 / F16 greedy ids {'agree' if mine16 == peer16 else 'differ'} too")


def table(a, threads):
    """Every row, `a.rounds` rounds, ours then theirs within each (llama.cpp
    once a format a round): the medians."""
    runs = {}
    for r in range(a.rounds):
        for name, flags, kind in ROWS:
            runs.setdefault(name, []).append(ours(a, flags, threads)[:2])
            if len(runs.setdefault(kind, [])) <= r:
                runs[kind].append(theirs(a, kind, threads)[:2])
        print(f"  round {r + 1} of {a.rounds} done", file=sys.stderr)
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    print(f"\n{threads} thread(s), {a.rounds} rounds, medians (ms; each run's prefill the median of its three passes;"
          f" load average before: {os.getloadavg()[0]:.2f})")
    print("| format | ours decode | llama.cpp decode | llama.cpp ÷ ours | ours prefill | llama.cpp prefill | llama.cpp ÷ ours |")
    print("|---|---|---|---|---|---|---|")
    for name, _, kind in ROWS:
        o, t = runs[name], runs[kind]
        od, td, op, tp = med(o, 1), med(t, 1), med(o, 0), med(t, 0)
        print(f"| {name} / {kind} | {od:.2f} | {td:.2f} | {td / od:.2f} | {op:.1f} | {tp:.1f} | {tp / op:.2f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--gguf-dir", required=True)
    p.add_argument("--prompt-len", type=int, default=64)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    a.vocab = json.loads((Path(a.model) / "config.json").read_text())["vocab_size"]
    check(a)
    table(a, 1)
    table(a, os.cpu_count())
    print("\nllama.cpp's threads spin-wait for work: with as many threads as cores, anything else "
          "running on the machine (the load average above) takes cores they wait on, and its "
          "all-thread figures collapse far more than ours. Read them against the load average.")


if __name__ == "__main__":
    main()
