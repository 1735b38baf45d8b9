#!/usr/bin/env python3
"""PyTorch on the CPU decoding the same model folder as `decode-lab bench`:
the same pseudo-random prompt ((i * 7919 + 13) % vocab_size), a warm-up
pass, then one prefill and TOKENS greedy decode steps through
`past_key_values` (transformers' KV cache), timed per step. Figures only.
DTYPE is what PyTorch computes in: float32 (like for like with our
`--weights f32`), float16 or bfloat16 (with our f16 / bf16 weights; PyTorch
then also computes in that type, where our CPU engine widens to f32).

    pip install torch transformers safetensors
    python3 tools/bench/torch_decode.py MODEL_DIR [PROMPT_LEN] [TOKENS] [THREADS] [DTYPE]
"""
import statistics
import sys
import time

import torch
from transformers import GPT2LMHeadModel

model_dir = sys.argv[1]
prompt_len = int(sys.argv[2]) if len(sys.argv) > 2 else 64
tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 64
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
dtype_name = sys.argv[5] if len(sys.argv) > 5 else "float32"
dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype_name]
torch.set_num_threads(threads)

model = GPT2LMHeadModel.from_pretrained(model_dir, dtype=dtype).eval()
vocab = model.config.vocab_size
prompt = torch.tensor([[(i * 7919 + 13) % vocab for i in range(prompt_len)]])


def run():
    steps = []
    with torch.inference_mode():
        t0 = time.perf_counter()
        out = model(prompt, use_cache=True)
        prefill = time.perf_counter() - t0
        past, nxt = out.past_key_values, out.logits[0, -1].argmax().view(1, 1)
        for _ in range(tokens):
            t0 = time.perf_counter()
            out = model(nxt, past_key_values=past, use_cache=True)
            steps.append(time.perf_counter() - t0)
            past, nxt = out.past_key_values, out.logits[0, -1].argmax().view(1, 1)
    return prefill, steps


run()  # warm-up
prefill, steps = run()
c = model.config
print(f"backend            PyTorch {torch.__version__} CPU, {threads} threads, {dtype_name}")
print(f"model              {c.n_layer} layers, {c.n_embd} dims, {c.n_head} heads, vocab {vocab}, "
      f"{sum(p.numel() for p in model.parameters())} params")
print(f"prefill            {prompt_len} tokens in {prefill * 1e3:.1f} ms ({prompt_len / prefill:.0f} tokens/s)")
print(f"decode             {tokens} tokens, {statistics.mean(steps) * 1e3:.2f} ms/token mean, "
      f"{statistics.median(steps) * 1e3:.2f} median ({1 / statistics.mean(steps):.1f} tokens/s)")
