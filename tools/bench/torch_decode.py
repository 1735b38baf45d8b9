#!/usr/bin/env python3
"""PyTorch decoding the same model folder as `decode-lab bench`: the same
pseudo-random prompt ((i * 7919 + 13) % vocab_size), a warm-up run, then one
prefill and TOKENS greedy decode steps through the KV cache, timed per step.
Figures only. DTYPE is what PyTorch computes in: float32 (like for like
with our `--weights f32`), float16 or bfloat16 (with our f16 / bf16 weights).

On the CPU (the default) with THREADS threads, transformers' dynamic cache.
With `--device cuda` on a lent GPU, the peer of our native GPU engine, two
ways: `--mode eager` (a Python loop of kernel launches, transformers' dynamic
cache) and `--mode graphs` (a static cache and the decode step compiled with
`torch.compile(mode="reduce-overhead")`: CUDA graphs, one launch a step).
On CUDA each step is timed by the wall clock after a synchronize, and by
CUDA events (the GPU's own time).

    pip install torch transformers safetensors
    python3 tools/bench/torch_decode.py MODEL_DIR [PROMPT_LEN] [TOKENS] [THREADS] [DTYPE] [--device cpu|cuda] [--mode eager|graphs]
"""
import argparse
import statistics
import time

import torch
from transformers import GPT2LMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("model_dir")
ap.add_argument("prompt_len", nargs="?", type=int, default=64)
ap.add_argument("tokens", nargs="?", type=int, default=64)
ap.add_argument("threads", nargs="?", type=int, default=2)
ap.add_argument("dtype", nargs="?", default="float32", choices=["float32", "float16", "bfloat16"])
ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
ap.add_argument("--mode", default="eager", choices=["eager", "graphs"])
args = ap.parse_args()
dtype = getattr(torch, args.dtype)
device = torch.device(args.device)
if args.device == "cuda" and not torch.cuda.is_available():
    raise SystemExit("--device cuda: torch sees no CUDA device here")
torch.set_num_threads(args.threads)

model = GPT2LMHeadModel.from_pretrained(args.model_dir, dtype=dtype).to(device).eval()
vocab = model.config.vocab_size
prompt = torch.tensor([[(i * 7919 + 13) % vocab for i in range(args.prompt_len)]], device=device)
cuda = args.device == "cuda"


def sync():
    if cuda:
        torch.cuda.synchronize()


class Clock:
    """A step's wall time (after a synchronize) and, on CUDA, its GPU time (events)."""

    def __enter__(self):
        sync()
        if cuda:
            self.events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            self.events[0].record()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *_):
        if cuda:
            self.events[1].record()
        sync()
        self.wall = time.perf_counter() - self.t0
        self.gpu = self.events[0].elapsed_time(self.events[1]) / 1e3 if cuda else None


def eager():
    """Prefill, then greedy steps through the dynamic cache."""
    walls, gpus = [], []
    with torch.inference_mode():
        with Clock() as c:
            out = model(prompt, use_cache=True)
        prefill = c.wall
        past, nxt = out.past_key_values, out.logits[0, -1].argmax().view(1, 1)
        for _ in range(args.tokens):
            with Clock() as c:
                out = model(nxt, past_key_values=past, use_cache=True)
                past, nxt = out.past_key_values, out.logits[0, -1].argmax().view(1, 1)
            walls.append(c.wall)
            gpus.append(c.gpu)
    return prefill, walls, gpus


def graphs():
    """A static cache, and the one-token step compiled into a CUDA graph."""
    from transformers import StaticCache

    length = args.prompt_len + args.tokens + 1
    cache = StaticCache(config=model.config, max_cache_len=length)

    def step(ids, position):
        out = model(ids, past_key_values=cache, cache_position=position, use_cache=True)
        return out.logits[:, -1].argmax(-1, keepdim=True)

    compiled = torch.compile(step, mode="reduce-overhead", fullgraph=True)
    walls, gpus = [], []
    with torch.inference_mode():
        cache.reset()
        with Clock() as c:
            nxt = step(prompt, torch.arange(args.prompt_len, device=device))
        prefill = c.wall
        for i in range(args.tokens):
            position = torch.tensor([args.prompt_len + i], device=device)
            with Clock() as c:
                nxt = compiled(nxt.clone(), position)
            walls.append(c.wall)
            gpus.append(c.gpu)
    return prefill, walls, gpus


run = graphs if args.mode == "graphs" else eager
run()  # warm-up (and, for graphs, compilation and capture)
prefill, walls, gpus = run()
c = model.config
where = f"CUDA ({torch.cuda.get_device_name()})" if cuda else f"CPU, {args.threads} threads"
graphs = "CUDA graphs" if cuda else "compiled; CUDA graphs only on CUDA"
mode = f"torch.compile reduce-overhead ({graphs}), static cache" if args.mode == "graphs" else "eager"
print(f"backend            PyTorch {torch.__version__} {where}, {args.dtype}, {mode}")
print(f"model              {c.n_layer} layers, {c.n_embd} dims, {c.n_head} heads, vocab {vocab}, "
      f"{sum(p.numel() for p in model.parameters())} params")
print(f"prefill            {args.prompt_len} tokens in {prefill * 1e3:.1f} ms ({args.prompt_len / prefill:.0f} tokens/s)")
gpu = f", GPU {statistics.median(gpus) * 1e3:.3f} ms/token median (CUDA events)" if cuda else ""
print(f"decode             {args.tokens} tokens, {statistics.mean(walls) * 1e3:.3f} ms/token mean, "
      f"{statistics.median(walls) * 1e3:.3f} median ({1 / statistics.mean(walls):.1f} tokens/s){gpu}")
