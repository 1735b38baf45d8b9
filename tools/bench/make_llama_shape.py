#!/usr/bin/env python3
"""A random-weight model of SmolLM2-135M's shape (Llama: 30 blocks, 576 wide,
9 heads sharing 3 K/V heads, SwiGLU of 1536, vocabulary 49,152, tied head),
for timing the Llama family against GPT-2-124M without a download.

    python3 tools/bench/make_llama_shape.py OUT_DIR
    target/release/decode-lab bench --model OUT_DIR --backend cpu --weights f16
"""
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    out = sys.argv[1]
    torch.manual_seed(135)
    config = LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                         max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
    LlamaForCausalLM(config).eval().save_pretrained(out, safe_serialization=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
