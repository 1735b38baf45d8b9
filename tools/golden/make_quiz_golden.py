#!/usr/bin/env python3
"""Golden answers to the quiz's questions on the live model, from Hugging
Face `transformers`: the oracle tests/e2e/quiz.test.mjs holds the page's
answers to (the CLI is our own engine, so it only checks wasm = native).

For the course's `nucleus` preset — the bundled model after "[Exit", top-p
0.9 — the model's next-token logits come from `GPT2LMHeadModel` on
www/models/shakespeare (weights widened to float32), the prompt's ids from
the `tokenizers` library reading its tokenizer.json, and the nucleus from
`transformers`' own `TopPLogitsWarper`. Also written: the probability of the
most likely token, and the nucleus's mass without and with its last token,
which say how far from the edge of p = 0.9 the answer is (a count that sat on
the edge could flip with rounding).

    pip install torch transformers tokenizers safetensors
    python3 tools/golden/make_quiz_golden.py   # writes tests/fixtures/golden/quiz.json
"""
import json
import os

import torch
from tokenizers import Tokenizer
from transformers import GPT2LMHeadModel
from transformers.generation.logits_process import TopPLogitsWarper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "www", "models", "shakespeare")
OUT = os.path.join(ROOT, "tests", "fixtures", "golden", "quiz.json")
# contract::CONFIDENT_PROMPT and the `nucleus` preset's top-p.
PROMPT = "[Exit"
TOP_P = 0.9


def main():
    model = GPT2LMHeadModel.from_pretrained(MODEL, dtype=torch.float32).eval()
    ids = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json")).encode(PROMPT).ids
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].double()
    kept = TopPLogitsWarper(TOP_P)(torch.tensor([ids]), logits[None].clone())[0]
    count = int(torch.isfinite(kept).sum())
    probs = torch.softmax(logits, -1)
    ranked = torch.sort(probs, descending=True).values
    golden = {
        "prompt": PROMPT,
        "ids": ids,
        "top_p": TOP_P,
        "nucleus": count,
        "p_top": float(ranked[0]),
        "top_id": int(torch.argmax(logits)),
        "mass_before_last": float(ranked[: count - 1].sum()),
        "mass_with_last": float(ranked[:count].sum()),
    }
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(json.dumps(golden))


if __name__ == "__main__":
    main()
