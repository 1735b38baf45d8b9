#!/usr/bin/env python3
"""Golden beam searches from Hugging Face `transformers`: `generate(num_beams=B)`
on the golden models (tools/golden/make_golden.py), the oracle that
crates/engine/tests/beam_golden.rs holds our beam search to.

For each model: B = 2, 3, 5; length penalty 0, 1, 2; one end token,
several, and many (what `ends_at=line` makes: Hugging Face then keeps
(1 + n_eos)·B candidates a step, not 2·B; "many" are the first step's 2nd
to 9th likeliest tokens, so that most of its 2·B best end). `early_stopping=False` (the default: its
heuristic stop). A random model rarely picks a given token, so the end
tokens are ones this model finds likely after the prompt (runners-up of its
greedy path): hypotheses then end at different lengths and the penalty has
something to weigh. They are written into the file with the results.

    pip install torch transformers safetensors
    python3 tools/golden/make_beam_golden.py [GOLDEN_DIR]   # default tests/fixtures/golden
"""
import json
import os
import sys

import torch
from transformers import GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ["tiny_odd", "hub_names", "wide_head"]
WIDTHS = [2, 3, 5]
PENALTIES = [0.0, 1.0, 2.0]
PROMPT_LEN = 5
MAX_NEW_TOKENS = 10


def runners_up(model, prompt, steps):
    """The second most likely token at each of the first `steps` greedy steps."""
    ids, out = list(prompt), []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([ids])).logits[0, -1]
            top = torch.topk(logits, 2).indices.tolist()
            out.append(top[1])
            ids.append(top[0])
    return out


def beam(model, prompt, width, penalty, ends):
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            do_sample=False,
            num_beams=width,
            num_return_sequences=width,
            length_penalty=penalty,
            early_stopping=False,
            max_new_tokens=MAX_NEW_TOKENS,
            eos_token_id=ends,
            pad_token_id=ends[0],
            output_scores=True,
            return_dict_in_generate=True,
        )
    beams = []
    for seq, score in zip(out.sequences.tolist(), out.sequences_scores.tolist()):
        tokens = seq[len(prompt):]
        # A hypothesis ends at its first end token; the rest is padding.
        cut = next((i + 1 for i, t in enumerate(tokens) if t in ends), len(tokens))
        beams.append({"tokens": tokens[:cut], "score": score})
    return beams


def pool_of_2b(model, prompt, width, penalty, ends):
    """Our beam rule before it took Hugging Face's pool: 2·B candidates a
    step however many end tokens there are (so fewer than B may go on).
    Only used to choose prompts on which the two rules disagree."""
    live, found, steps = [([], 0.0)], [], 0
    with torch.no_grad():
        while live and steps < MAX_NEW_TOKENS:
            cands = []
            for b, (toks, cum) in enumerate(live):
                lp = torch.log_softmax(model(torch.tensor([prompt + toks])).logits[0, -1].double(), -1)
                top = torch.topk(lp, 2 * width)
                cands += [(cum + v, b, t) for v, t in zip(top.values.tolist(), top.indices.tolist())]
            cands.sort(key=lambda c: (-c[0], c[1], c[2]))
            nxt = []
            for rank, (cum, b, t) in enumerate(cands[:2 * width]):
                toks = live[b][0] + [t]
                if t in ends:
                    if rank < width:
                        found.append((toks, cum))
                elif len(nxt) < width:
                    nxt.append((toks, cum))
            steps += 1
            live = nxt
            scored = sorted((c / max(len(t), 1) ** penalty for t, c in found), reverse=True)
            if len(scored) >= width and live and scored[width - 1] >= max(c for _, c in live) / steps ** penalty:
                break
    found += live
    found.sort(key=lambda h: -h[1] / max(len(h[0]), 1) ** penalty)
    return [h[0] for h in found[:width]]


def disagrees(model, prompt, ends):
    """Whether a 2·B pool returns other hypotheses than Hugging Face's for some B and penalty."""
    return any(
        pool_of_2b(model, prompt, w, p, ends) != [b["tokens"] for b in beam(model, prompt, w, p, ends)]
        for w in WIDTHS for p in PENALTIES)


def many_ends(model, prompt):
    """The first step's 2nd to 9th likeliest tokens."""
    with torch.no_grad():
        first = model(torch.tensor([prompt])).logits[0, -1]
    return sorted(torch.topk(first, 9).indices.tolist()[1:])


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "golden")
    cases = []
    for i, name in enumerate(MODELS):
        model = GPT2LMHeadModel.from_pretrained(os.path.join(golden, name), torch_dtype=torch.float32,
                                                attn_implementation="eager").eval()
        g = torch.Generator().manual_seed(77 + i)
        prompt = torch.randint(0, model.config.vocab_size, (PROMPT_LEN,), generator=g).tolist()
        second = runners_up(model, prompt, 4)
        one = [second[1]]
        several = sorted(set(second))
        # As with ends_at=line on a real vocabulary: so many end tokens (the
        # first step's 2nd to 9th likeliest) that most of its 2·B best end,
        # and only a pool of (1 + n_eos)·B holds B beams to go on with. The
        # first prompt (by seed) on which that pool changes the answer.
        for seed in range(1000):
            g = torch.Generator().manual_seed(1000 * (i + 1) + seed)
            crowded = torch.randint(0, model.config.vocab_size, (PROMPT_LEN,), generator=g).tolist()
            if disagrees(model, crowded, many_ends(model, crowded)):
                break
        print(f"{name}: prompt {crowded} (seed {seed}) tells the pools apart")
        many = many_ends(model, crowded)
        for ends in (one, several, many):
            prompt = crowded if ends is many else prompt
            for width in WIDTHS:
                for penalty in PENALTIES:
                    beams = beam(model, prompt, width, penalty, ends)
                    ended = sum(b["tokens"][-1] in ends for b in beams)
                    lengths = sorted({len(b["tokens"]) for b in beams})
                    print(f"{name}: B={width} penalty={penalty} ends={ends}: {ended} of {width} end on an "
                          f"end token, lengths {lengths}")
                    cases.append({"model": name, "prompt": prompt, "width": width, "length_penalty": penalty,
                                  "ends": ends, "max_new_tokens": MAX_NEW_TOKENS, "beams": beams})
    path = os.path.join(golden, "beam.json")
    with open(path, "w") as f:
        json.dump({"transformers": __import__("transformers").__version__, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases in {path}")


if __name__ == "__main__":
    main()
