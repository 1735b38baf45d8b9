#!/usr/bin/env python3
"""Checks `decode-lab logits` against `transformers` on a GPT-2-sized model
folder (`./tools/dev bench` makes a GPT-2-124M-shaped one with GPT-2's real
tokenizer): a few prompts tokenized by transformers' GPT2 tokenizer, run
through our CLI on each backend and mode (prefill, decode token by token),
compared with GPT2LMHeadModel in float32 by max |ours - theirs| / max |theirs|
over every position; fails above 1e-4. Too big for the test command (a
124M forward on lavapipe takes seconds), so the bench runs it.

    python3 tools/bench/gpt2_check.py MODEL_DIR [--bin target/release/decode-lab]
"""
import argparse
import json
import subprocess
import sys

import torch
from transformers import GPT2LMHeadModel, GPT2TokenizerFast

LIMIT = 1e-4
PROMPTS = ["The capital of France is", "Hello world", "def main():\n    print(\"hi\")  # 1, 2, 3…"]

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("--bin", default="target/release/decode-lab")
args = parser.parse_args()

tok = GPT2TokenizerFast(vocab=f"{args.model}/vocab.json", merges=f"{args.model}/merges.txt")
model = GPT2LMHeadModel.from_pretrained(args.model, dtype=torch.float32).eval()
worst = 0.0
for prompt in PROMPTS:
    ids = tok(prompt)["input_ids"]
    with torch.inference_mode():
        theirs = model(torch.tensor([ids])).logits[0]
    for backend in ["cpu", "gpu"]:
        for mode in ["prefill", "decode"]:
            out = subprocess.run([args.bin, "logits", "--model", args.model, "--tokens", ",".join(map(str, ids)),
                                  "--backend", backend, "--mode", mode, "--weights", "f32"],
                                 check=True, capture_output=True, text=True).stdout
            ours = torch.tensor(json.loads(out)["logits"])
            err = ((ours - theirs).abs().max() / theirs.abs().max()).item()
            worst = max(worst, err)
            print(f"{len(ids):3} tokens  {backend:3} {mode:7}  relative error {err:.2e}  {prompt!r}")
print(f"worst relative error {worst:.2e} (limit {LIMIT:.0e})")
sys.exit(0 if worst <= LIMIT else 1)
