#!/usr/bin/env python3
"""Golden logits of a cache under a budget (issue 34), from Hugging Face
`transformers`: GPT-2 fed one token at a time through `past_key_values`
with an attention mask that hides the tokens the policy evicted by then
(GPT-2's positions are absolute, so eviction is exactly that mask). The
policies' rule is written out here as the engine's `kv_policy` states it.

Then a Llama-shaped model with grouped K/V heads (rotary positions), in
float64: its original positions by the same mask, and StreamingLLM's
positions within the cache (`,positions:cache`) by a cache of its own —
evicted rows cut out of every layer, the keys after them turned back one
position (each key stays turned by its place among the kept tokens), the
newcomer run at its place.

    python3 tools/golden/make_kv_golden.py [GOLDEN_DIR]   # default tests/fixtures/golden
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import DynamicCache, GPT2LMHeadModel, LlamaForCausalLM
from transformers.models.llama.modeling_llama import rotate_half

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


# The Llama-shaped model's: name: (kind, first count, recent count, positions within the cache)
ROPE_POLICIES = {"sinks:2,window:6": ("sinks", 2, 6, False), "sinks:2,window:6,positions:cache": ("sinks", 2, 6, True),
                 "sinks:0,window:8,positions:cache": ("sinks", 0, 8, True), "heavy:3,recent:4": ("heavy", 3, 4, False)}


def masked(model, tokens, kind, first, recent):
    """Each step's logits with the evicted tokens masked out (original positions)."""
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
    return rows, held


def renumbered(model, tokens, first, recent):
    """Each step's logits with the kept tokens numbered by their place in the cache."""
    cache, held, rows = DynamicCache(), [], []
    probe = torch.zeros(1, 1, model.config.head_dim, dtype=model.dtype)
    cos, sin = model.model.rotary_emb(probe, torch.tensor([[1]]))  # position 1's turn
    with torch.no_grad():
        for t, token in enumerate(tokens):
            kept = keep(held + [t], {}, "sinks", first, recent)
            if len(kept) <= len(held):  # one held token leaves (the newest is always kept)
                gone = next(i for i, p in enumerate(held) if p not in kept)
                for layer in cache.layers:  # keys, values: (1, kv_heads, held, head_dim)
                    k, v = layer.keys, layer.values
                    after = k[:, :, gone + 1:]
                    back = after * cos + rotate_half(after) * -sin
                    layer.keys = torch.cat([k[:, :, :gone], back], dim=2)
                    layer.values = torch.cat([v[:, :, :gone], v[:, :, gone + 1:]], dim=2)
            place = len(kept) - 1  # the newcomer's place: after every other kept token
            out = model(torch.tensor([[token]]), past_key_values=cache,
                        attention_mask=torch.ones(1, place + 1, dtype=torch.long),
                        position_ids=torch.tensor([[place]]), cache_position=torch.tensor([place]),
                        use_cache=True)
            cache, held = out.past_key_values, kept
            rows.append(out.logits[0, -1].tolist())
    return rows, held


def save(path, tokens, cases):
    tensors = {f"logits_{i}": torch.tensor(rows, dtype=torch.float32) for i, (_, rows) in enumerate(cases)}
    tensors["tokens"] = torch.tensor(tokens, dtype=torch.int64)
    save_file(tensors, path, metadata={"policies": json.dumps([name for name, _ in cases])})


def rope_main(golden):
    folder = os.path.join(golden, "llama_gqa")
    model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager").eval()
    g = torch.Generator().manual_seed(49)
    tokens = torch.randint(0, model.config.vocab_size, (40,), generator=g).tolist()
    cases = []
    for name, (kind, first, recent, cache) in ROPE_POLICIES.items():
        rows, held = renumbered(model, tokens, first, recent) if cache else masked(model, tokens, kind, first, recent)
        cases.append((name, rows))
        print(f"llama_gqa {name}: {len(rows)} steps, last held {held}")
    save(os.path.join(folder, "kv_policy.safetensors"), tokens, cases)


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "golden")
    rope_main(golden)
    model = GPT2LMHeadModel.from_pretrained(os.path.join(golden, "tiny_odd"), torch_dtype=torch.float32,
                                            attn_implementation="eager").eval()
    g = torch.Generator().manual_seed(34)
    tokens = torch.randint(0, model.config.vocab_size, (40,), generator=g).tolist()
    cases = []
    for name, (kind, first, recent) in POLICIES.items():
        rows, held = masked(model, tokens, kind, first, recent)
        cases.append((name, rows))
        print(f"{name}: {len(rows)} steps, last held {held}")
    save(os.path.join(golden, "tiny_odd", "kv_policy.safetensors"), tokens, cases)


if __name__ == "__main__":
    main()
