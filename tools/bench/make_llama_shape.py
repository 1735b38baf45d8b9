#!/usr/bin/env python3
"""A random-weight model of SmolLM2-135M's shape (Llama: 30 blocks, 576 wide,
9 heads sharing 3 K/V heads, SwiGLU of 1536, vocabulary 49,152, tied head),
for timing the Llama family against GPT-2-124M without a download.

    python3 tools/bench/make_llama_shape.py OUT_DIR [TOKENIZER_JSON [f16]]
    target/release/decode-lab bench --model OUT_DIR --backend cpu --weights f16

With TOKENIZER_JSON (a byte-level BPE whose ids are below 49,152, such as
tests/fixtures/golden/llama_gqa/tokenizer.json) the folder also opens in the
page and in transformers.js, for the page-against-transformers.js figures;
with f16 the same weights are stored in f16 (the page's download halves).
"""
import shutil
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
    model = LlamaForCausalLM(config).eval()
    if sys.argv[3:4] == ["f16"]:
        model = model.to(torch.float16)
    model.save_pretrained(out, safe_serialization=True)
    if len(sys.argv) > 2:
        shutil.copy(sys.argv[2], f"{out}/tokenizer.json")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
