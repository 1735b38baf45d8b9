#!/usr/bin/env python3
"""Golden logits from Hugging Face `transformers` GPT2LMHeadModel: the
independent oracle the engine is tested against.

For each small config below: a seeded random model (weights re-drawn larger
than GPT-2's init so attention is peaky and mistakes show), saved the way
`save_pretrained` saves it (optionally as f16, untied, or with Hub-style names
without the `transformer.` prefix), plus `golden.safetensors` holding token
ids and logits from a full-prompt forward (`prefill`) and from feeding the
tokens one by one through `past_key_values` (`decode`).

    pip install torch transformers safetensors tokenizers
    python3 tools/golden/make_golden.py [OUT_DIR]   # default tests/fixtures/golden
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name: (config overrides, prompt lengths, variant flags)
CASES = {
    # odd n_embd (48, 3 heads of 16), vocab not a multiple of 64, prompts of 1 and 17
    "tiny_odd": (dict(n_layer=2, n_head=3, n_embd=48, vocab_size=1000, n_positions=64), [1, 17], {}),
    # untied LM head, weights stored as f16, 4 heads of 16
    "untied_f16": (dict(n_layer=3, n_head=4, n_embd=64, vocab_size=515, n_positions=96,
                        tie_word_embeddings=False), [33], {"f16": True}),
    # Hub-style names (no `transformer.`), odd n_inner, per-layer score scaling, full context
    "hub_names": (dict(n_layer=2, n_head=2, n_embd=20, n_inner=50, vocab_size=77, n_positions=32,
                       scale_attn_by_inverse_layer_idx=True), [32], {"strip_prefix": True}),
    # head_size 72 (> 64 dims per thread) and more keys than one 64-key attention tile
    "wide_head": (dict(n_layer=2, n_head=1, n_embd=72, vocab_size=130, n_positions=80), [70], {}),
}


def randomize(model: GPT2LMHeadModel, seed: int) -> None:
    """Re-draws every parameter at a scale where each layer matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("wte.weight") or name.endswith("lm_head.weight"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif name.endswith("wpe.weight"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            else:  # Conv1D [in, out]: unit-variance outputs for unit-variance inputs
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[0] ** 0.5)


def logits_both_ways(model, tokens):
    ids = torch.tensor([tokens])
    with torch.no_grad():
        prefill = model(ids).logits[0]
        past, rows = None, []
        for t in tokens:
            out = model(torch.tensor([[t]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0, -1])
    return prefill, torch.stack(rows)


def make_case(out_dir, name, overrides, lengths, flags, seed):
    torch.manual_seed(seed)
    config = GPT2Config(**overrides, attn_implementation="eager")
    model = GPT2LMHeadModel(config).eval()
    randomize(model, seed)
    if flags.get("f16"):
        model = model.half().float()  # the oracle sees exactly the f16-rounded weights
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    save_model = GPT2LMHeadModel(config).eval()
    save_model.load_state_dict(model.state_dict())
    if flags.get("f16"):
        save_model = save_model.half()
    save_model.save_pretrained(case_dir, safe_serialization=True)
    weights_path = os.path.join(case_dir, "model.safetensors")
    if flags.get("strip_prefix"):
        tensors = load_file(weights_path)
        save_file({k.removeprefix("transformer."): v.contiguous() for k, v in tensors.items()},
                  weights_path, metadata={"format": "pt"})
    g = torch.Generator().manual_seed(seed + 1)
    golden = {}
    for n in lengths:
        tokens = torch.randint(0, config.vocab_size, (n,), generator=g).tolist()
        prefill, decode = logits_both_ways(model, tokens)
        golden[f"tokens_{n}"] = torch.tensor(tokens, dtype=torch.int64)
        golden[f"prefill_{n}"] = prefill.float().contiguous()
        golden[f"decode_{n}"] = decode.float().contiguous()
        gap = (prefill - decode).abs().max().item()
        print(f"{name}: len {n}, max |logit| {prefill.abs().max().item():.3f}, prefill-vs-decode {gap:.2e}")
    save_file(golden, os.path.join(case_dir, "golden.safetensors"),
              metadata={"lengths": json.dumps(lengths)})


# Text for the fixture tokenizer: enough repetition for merges, plus the
# characters that stress byte-level decoding (accents, CJK, emoji, CRLF).
TOKENIZER_TEXT = (
    "To be, or not to be, that is the question: whether 'tis nobler in the mind "
    "to suffer the slings and arrows of outrageous fortune. Café naïve façade. "
    "東京 🙂 ✨ \r\n tabs\tand   spaces.\n"
) * 50


def make_tokenizer(case_dir, vocab_size, text=TOKENIZER_TEXT, pre_tokenizer=None):
    """A byte-level BPE `tokenizer.json` with an end-of-text token, ids < vocab_size,
    trained on `text`; its pre-tokenizer GPT-2's `ByteLevel` unless one is given."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer or pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text], trainer)
    assert tok.get_vocab_size() <= vocab_size
    tok.save(os.path.join(case_dir, "tokenizer.json"))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "golden")
    for i, (name, (overrides, lengths, flags)) in enumerate(CASES.items()):
        make_case(out_dir, name, overrides, lengths, flags, seed=1234 + i)
    make_tokenizer(os.path.join(out_dir, "tiny_odd"), 1000)


if __name__ == "__main__":
    main()
