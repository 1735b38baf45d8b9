#!/usr/bin/env python3
"""Golden logits of a cache under a budget (issue 34), from Hugging Face
`transformers`: GPT-2 fed one token at a time through `past_key_values`
with an attention mask that hides the tokens the policy evicted by then
(GPT-2's positions are absolute, so eviction is exactly that mask). The
policies' rule is written out here as the engine's `kv_policy` states it.

    python3 tools/golden/make_kv_golden.py [GOLDEN_DIR]   # default tests/fixtures/golden
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# name: (kind, first count, recent count)
POLICIES = {"window:8": ("sinks", 0, 8), "sinks:2,window:6": ("sinks", 2, 6), "window:1": ("sinks", 0, 1),
            "heavy:3,recent:4": ("heavy", 3, 4)}


def keep(held, mass, kind, first, recent):
    """The engine's `KvPolicy::keep`: the first `first` positions (sinks) or
    the `first` older ones with the most attention received (heavy, ties to
    the earlier), then the `recent` newest."""
    if len(held) <= first + recent:
        return held
    older, newest = held[:-recent], held[-recent:]
    if kind == "sinks":
        return [p for p in older if p < first] + newest
    order = sorted(range(len(older)), key=lambda i: (-mass.get(older[i], 0.0), i))
    return sorted(older[i] for i in order[:first]) + newest


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "golden")
    model = GPT2LMHeadModel.from_pretrained(os.path.join(golden, "tiny_odd"), torch_dtype=torch.float32,
                                            attn_implementation="eager").eval()
    g = torch.Generator().manual_seed(34)
    tokens = torch.randint(0, model.config.vocab_size, (40,), generator=g).tolist()
    cases = []
    for name, (kind, first, recent) in POLICIES.items():
        past, held, rows, mass = None, [], [], {}
        with torch.no_grad():
            for t, token in enumerate(tokens):
                held = keep(held + [t], mass, kind, first, recent)
                mask = torch.zeros(1, t + 1, dtype=torch.long)
                mask[0, held] = 1
                out = model(torch.tensor([[token]]), past_key_values=past, attention_mask=mask,
                            position_ids=torch.tensor([[t]]), use_cache=True, output_attentions=True)
                past = out.past_key_values
                rows.append(out.logits[0, -1].tolist())
                # The attention each kept token received, over layers and heads.
                for layer in out.attentions:  # (1, n_head, 1, t + 1)
                    w = layer[0, :, 0, :].double().sum(0)
                    for p in held:
                        mass[p] = mass.get(p, 0.0) + w[p].item()
        cases.append((name, torch.tensor(rows, dtype=torch.float32)))
        print(f"{name}: {len(rows)} steps, last held {held}")
    tensors = {f"logits_{i}": rows for i, (_, rows) in enumerate(cases)}
    tensors["tokens"] = torch.tensor(tokens, dtype=torch.int64)
    save_file(tensors, os.path.join(golden, "tiny_odd", "kv_policy.safetensors"),
              metadata={"policies": json.dumps([name for name, _ in cases])})


if __name__ == "__main__":
    main()
