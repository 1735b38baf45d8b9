#!/usr/bin/env python3
"""Checks `decode-lab logits` against `transformers` on random GPT-2 configs
the test suite has never seen: for each config, every backend (gpu, cpu) and
mode (prefill, decode), prints max |ours - theirs| / max |theirs| over all
positions and fails if any exceeds 1e-4.

    cargo build --release -p decode-lab-cli
    python3 tools/golden/check_cli.py [--configs N] [--seed S] [--bin target/release/decode-lab]
"""
import argparse
import json
import random
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file

sys.path.insert(0, __import__("os").path.dirname(__file__))
from make_golden import make_case  # noqa: E402

LIMIT = 1e-4


def random_config(rng):
    n_head = rng.choice([1, 2, 3, 4, 5, 6])
    head_size = rng.choice([4, 8, 12, 16, 24, 32, 40, 64, 80])
    n_positions = rng.choice([16, 40, 64, 100, 128])
    overrides = dict(
        n_layer=rng.randint(1, 4), n_head=n_head, n_embd=n_head * head_size,
        vocab_size=rng.randint(50, 3000), n_positions=n_positions,
        tie_word_embeddings=rng.random() < 0.7,
    )
    if rng.random() < 0.3:
        overrides["n_inner"] = rng.randint(8, 300)
    flags = {"f16": rng.random() < 0.3, "strip_prefix": rng.random() < 0.3}
    return overrides, [rng.randint(1, n_positions)], flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--bin", default="target/release/decode-lab")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    worst = 0.0
    for i in range(args.configs):
        overrides, lengths, flags = random_config(rng)
        with tempfile.TemporaryDirectory() as d:
            make_case(d, "m", overrides, lengths, flags, seed=args.seed + i)
            golden = load_file(f"{d}/m/golden.safetensors")
            n = lengths[0]
            tokens = golden[f"tokens_{n}"].tolist()
            for backend in ["gpu", "cpu"]:
                for mode in ["prefill", "decode"]:
                    out = subprocess.run(
                        [args.bin, "logits", "--model", f"{d}/m", "--tokens", ",".join(map(str, tokens)),
                         "--backend", backend, "--mode", mode],
                        check=True, capture_output=True, text=True).stdout
                    ours = torch.tensor(json.loads(out)["logits"])
                    theirs = golden[f"{mode}_{n}"]
                    rel = ((ours - theirs).abs().max() / theirs.abs().max()).item()
                    worst = max(worst, rel)
                    print(f"config {i} {overrides} {flags} len {n} {backend:3} {mode:7} rel {rel:.2e}")
    print(f"worst relative error {worst:.2e} (limit {LIMIT:.0e})")
    sys.exit(0 if worst <= LIMIT else 1)


if __name__ == "__main__":
    main()
