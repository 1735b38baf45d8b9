#!/usr/bin/env python3
"""Golden logits of a GPT-2 converted to grouped K/V heads (issue 34), from
Hugging Face `transformers`: each group's K and V projections (weights and
biases) replaced by the mean of its heads' (Ainslie et al. 2023), written
back for every head of the group, then GPT-2 run as it is. The engine's
`Model::with_kv_groups` keeps one K/V head per group in its cache; its
logits must equal these.

    python3 tools/golden/make_gqa_golden.py [GOLDEN_DIR]   # default tests/fixtures/golden
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = "untied_f16"  # 4 heads of 16: groups of 1, 2 and 4 heads
GROUPS = [2, 1]


def pooled(model, groups):
    """A copy of `model` whose K/V heads are pooled into `groups` groups."""
    model = GPT2LMHeadModel.from_pretrained(model, dtype=torch.float32, attn_implementation="eager").eval()
    c = model.config
    e, hs = c.n_embd, c.n_embd // c.n_head
    per = c.n_head // groups
    with torch.no_grad():
        for block in model.transformer.h:
            w, b = block.attn.c_attn.weight, block.attn.c_attn.bias  # (e, 3e), (3e)
            for part in (e, 2 * e):
                for g in range(groups):
                    cols = [part + (g * per + h) * hs + d for h in range(per) for d in range(hs)]
                    wg = w[:, cols].reshape(e, per, hs).mean(1)
                    bg = b[cols].reshape(per, hs).mean(0)
                    w[:, cols] = wg.repeat(1, per)
                    b[cols] = bg.repeat(per)
    return model


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "golden")
    path = os.path.join(golden, MODEL)
    g = torch.Generator().manual_seed(35)
    vocab = json.load(open(os.path.join(path, "config.json")))["vocab_size"]
    tokens = torch.randint(0, vocab, (1, 30), generator=g)
    tensors = {"tokens": tokens[0].to(torch.int64)}
    for i, groups in enumerate(GROUPS):
        with torch.no_grad():
            logits = pooled(path, groups)(tokens).logits[0]
        tensors[f"logits_{i}"] = logits.contiguous()
        print(f"groups {groups}: logits {tuple(logits.shape)}")
    save_file(tensors, os.path.join(path, "kv_groups.safetensors"), metadata={"groups": json.dumps(GROUPS)})


if __name__ == "__main__":
    main()
