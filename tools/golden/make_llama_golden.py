#!/usr/bin/env python3
"""Golden logits of Llama-family models from Hugging Face `transformers`
(LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM): the oracle the
engine's RMSNorm, RoPE, SwiGLU and grouped K/V heads are tested against.

Each case is a seeded random model (weights re-drawn at a scale where every
layer matters), saved with `save_pretrained` (as f32, f16 or bf16), plus
`golden.safetensors`: token ids, logits of a full-prompt forward (`prefill`),
logits of feeding the tokens one by one through the cache (`decode`), and the
tokens of a greedy `generate` from the prompt's first tokens (`greedy`).

    python3 tools/golden/make_llama_golden.py [OUT_DIR]   # default tests/fixtures/golden
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from make_golden import logits_both_ways, make_tokenizer
from tokenizers import pre_tokenizers
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COMMON = dict(num_hidden_layers=2, vocab_size=300, max_position_embeddings=64,
              bos_token_id=None, eos_token_id=None, pad_token_id=None)

# name: (config class, model class, overrides, stored dtype)
CASES = {
    # 6 heads of 8 sharing 2 K/V heads, untied head, rope_theta 10000, f32
    "llama_gqa": (LlamaConfig, LlamaForCausalLM,
                  dict(hidden_size=48, intermediate_size=80, num_attention_heads=6,
                       num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5,
                       rope_theta=10000.0), torch.float32),
    # one K/V head (multi-query), tied head, Llama 3's frequency scaling over a
    # short original context so that low, medium and high frequencies all occur
    "llama3_mqa": (LlamaConfig, LlamaForCausalLM,
                   dict(hidden_size=48, intermediate_size=64, num_attention_heads=6,
                        num_key_value_heads=1, tie_word_embeddings=True, rope_theta=500000.0,
                        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                          high_freq_factor=4.0, original_max_position_embeddings=16)),
                   torch.float32),
    # 9 heads of 8 sharing 3 K/V heads, no sliding window, stored as f16
    "mistral_f16": (MistralConfig, MistralForCausalLM,
                    dict(hidden_size=72, intermediate_size=100, num_attention_heads=9,
                         num_key_value_heads=3, head_dim=8, tie_word_embeddings=False,
                         sliding_window=None, rope_theta=1000000.0), torch.float16),
    # Qwen2: biases on q, k and v; 6 heads sharing 3 K/V heads, tied, stored as bf16
    "qwen2_bf16": (Qwen2Config, Qwen2ForCausalLM,
                   dict(hidden_size=48, intermediate_size=96, num_attention_heads=6,
                        num_key_value_heads=3, tie_word_embeddings=True, rope_theta=1000000.0),
                   torch.bfloat16),
}
PROMPT = 33  # tokens of the prefill/decode golden
# The case that also gets a tokenizer.json (SmolLM2's pre-tokenizer layout:
# Digits, then ByteLevel), so a page or the CLI can open it with text.
WITH_TOKENIZER = "llama_gqa"
TOKENIZER_TEXT = (
    "To be, or not to be, that is the question: whether 'tis nobler in the mind "
    "to suffer the slings and arrows of outrageous fortune. In 1603, 2026 and 42. "
    "Café naïve façade. 東京 🙂 ✨ \r\n tabs\tand   spaces.\n"
) * 50
GREEDY_PROMPT, GREEDY_NEW = 5, 12


def randomize(model, seed):
    """Re-draws every parameter at a scale where each layer matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:  # q/k/v biases
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("embed_tokens.weight") or name.endswith("lm_head.weight"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            else:  # Linear [out, in]: unit-variance outputs for unit-variance inputs
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)


def make_case(out_dir, name, config_class, model_class, overrides, dtype, seed):
    torch.manual_seed(seed)
    config = config_class(**COMMON, **overrides, attn_implementation="eager")
    model = model_class(config).eval()
    randomize(model, seed)
    with torch.no_grad():  # the oracle sees exactly the stored weights ...
        for p in model.parameters():
            p.copy_(p.to(dtype).float())
    # ... and computes in f32, rotary frequencies included: `Module.to(dtype)`
    # would round those buffers too, so only a copy is converted, to save it.
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    saved = model_class(config).eval()
    saved.load_state_dict(model.state_dict())
    saved.to(dtype).save_pretrained(case_dir, safe_serialization=True)
    os.remove(os.path.join(case_dir, "generation_config.json"))  # the engine reads no such file
    g = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, config.vocab_size, (PROMPT,), generator=g).tolist()
    prefill, decode = logits_both_ways(model, tokens)
    with torch.no_grad():
        prompt = torch.tensor([tokens[:GREEDY_PROMPT]])
        greedy = model.generate(prompt, max_new_tokens=GREEDY_NEW, do_sample=False,
                                pad_token_id=0)[0, GREEDY_PROMPT:]
    golden = {
        "tokens": torch.tensor(tokens, dtype=torch.int64),
        "prefill": prefill.float().contiguous(),
        "decode": decode.float().contiguous(),
        "greedy": greedy.to(torch.int64).contiguous(),
    }
    save_file(golden, os.path.join(case_dir, "golden.safetensors"),
              metadata={"greedy_prompt": str(GREEDY_PROMPT)})
    gap = (prefill - decode).abs().max().item()
    print(f"{name}: max |logit| {prefill.abs().max().item():.3f}, prefill-vs-decode {gap:.2e}, "
          f"greedy {greedy.tolist()}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "golden")
    for i, (name, (config_class, model_class, overrides, dtype)) in enumerate(CASES.items()):
        make_case(out_dir, name, config_class, model_class, overrides, dtype, seed=4900 + i)
    digits_first = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    make_tokenizer(os.path.join(out_dir, WITH_TOKENIZER), COMMON["vocab_size"], TOKENIZER_TEXT, digits_first)


if __name__ == "__main__":
    main()
