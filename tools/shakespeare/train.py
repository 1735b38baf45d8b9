#!/usr/bin/env python3
"""Train the bundled Shakespeare GPT-2 (PyTorch on the CPU), resumably and reproducibly.

The model *is* `transformers`' GPT2LMHeadModel (learned positions, pre-LayerNorm,
gelu_new, tied embeddings), so the exported directory loads with
`GPT2LMHeadModel.from_pretrained` and in Decode Lab's engine unchanged.

Reproducibility: everything random is a pure function of (seed, step): the batch
offsets come from a generator seeded with (seed, step) and dropout draws from a
torch generator re-seeded with (seed, step) before every step. A checkpoint
(<out>/checkpoint.pt: weights, AdamW moments, step, loss log) is written every
--checkpoint-minutes, atomically; rerunning the same command resumes from it.
So the final weights do not depend on how often the run was interrupted.
One CPU thread is used throughout (float sums then happen in one fixed order).

Writes <out>/loss.csv (step, tokens, lr, train loss, held-out loss and bits per
byte at each evaluation, wall seconds) and, when done, <out>/model/ with
config.json + model.safetensors (float32).

Usage: python3 tools/shakespeare/train.py --out target/shakespeare [--steps N]
"""
import argparse
import csv
import json
import math
import os
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import GPT2Config, GPT2LMHeadModel

ARCH = dict(n_layer=4, n_head=4, n_embd=256, n_positions=256)
DROPOUT = 0.1


def load_ids(out: Path) -> tuple[torch.Tensor, list[tuple[str, torch.Tensor, int]]]:
    """Training stream (works joined by end-of-text) and held-out works (ids, bytes)."""
    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
    eot = tokenizer.token_to_id("<|endoftext|>")
    corpus = (out / "corpus.txt").read_bytes()
    stream, valid = [], []
    for work in json.loads((out / "corpus.json").read_text()):
        text = corpus[work["offset"] : work["offset"] + work["length"]].decode("ascii")
        ids = tokenizer.encode(text).ids
        if work["split"] == "train":
            stream += ids + [eot]
        else:
            valid.append((work["name"], torch.tensor([eot] + ids), work["length"]))
    return torch.tensor(stream), valid


def make_model(vocab_size: int) -> GPT2LMHeadModel:
    config = GPT2Config(
        vocab_size=vocab_size,
        bos_token_id=vocab_size - 1,
        eos_token_id=vocab_size - 1,
        resid_pdrop=DROPOUT,
        embd_pdrop=DROPOUT,
        attn_pdrop=DROPOUT,
        tie_word_embeddings=True,
        **ARCH,
    )
    torch.manual_seed(1234)
    return GPT2LMHeadModel(config)


def batch(stream: torch.Tensor, seed: int, step: int, size: int, block: int):
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    starts = torch.randint(0, len(stream) - block - 1, (size,), generator=gen)
    x = torch.stack([stream[s : s + block] for s in starts])
    y = torch.stack([stream[s + 1 : s + block + 1] for s in starts])
    return x, y


@torch.no_grad()
def evaluate(model: GPT2LMHeadModel, valid, block: int) -> tuple[float, float]:
    """(mean nats per token, bits per byte) over every held-out work.

    Windows of `block` tokens advance by block/2 and score only their second
    half, so every token after the first window sees at least block/2 of context.
    """
    was_training = model.training
    model.eval()
    nats, tokens, nbytes = 0.0, 0, 0
    stride = block // 2
    for _name, ids, length in valid:
        nbytes += length
        for start in range(0, len(ids) - 1, stride):
            window = ids[start : start + block + 1]
            x, y = window[:-1][None], window[1:][None]
            logits = model(x).logits[0]
            nll = torch.nn.functional.cross_entropy(logits, y[0], reduction="none")
            first = 0 if start == 0 else block - stride
            nats += nll[first:].double().sum().item()
            tokens += len(nll) - first
            if start + block + 1 >= len(ids):
                break
    model.train(was_training)
    return nats / tokens, nats / math.log(2) / nbytes


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def optimizer_for(model: GPT2LMHeadModel, lr: float) -> torch.optim.AdamW:
    # Weight decay on matrices only: biases, LayerNorm gains and the (tied)
    # embeddings are left undecayed.
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "wte" not in n and "wpe" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "wte" not in n and "wpe" not in n)]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8)


def save_checkpoint(path: Path, model, opt, step: int, log: list, wall: float) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "log": log, "wall": wall}, tmp)
    os.replace(tmp, path)  # atomic: an interrupted save never corrupts the last checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("target/shakespeare"))
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--checkpoint-minutes", type=float, default=4.0)
    parser.add_argument("--stop-after", type=int, default=None, help="exit after this step (to test resuming)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    block = ARCH["n_positions"]

    stream, valid = load_ids(args.out)
    vocab_size = Tokenizer.from_file(str(args.out / "tokenizer.json")).get_vocab_size()
    model = make_model(vocab_size)
    opt = optimizer_for(model, args.lr)
    ckpt_path = args.out / "checkpoint.pt"
    step, log, wall = 0, [], 0.0
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, weights_only=False)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        step, log, wall = ckpt["step"], ckpt["log"], ckpt["wall"]
        print(f"resumed at step {step} ({wall / 60:.1f} min trained)", flush=True)
    params = sum(p.numel() for p in model.parameters())
    print(f"{params} parameters; {len(stream)} training tokens; block {block}; batch {args.batch}", flush=True)

    model.train()
    started, last_save = time.time() - wall, time.time()
    while step < args.steps:
        lr = lr_at(step, args.steps, args.lr, args.warmup)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = batch(stream, args.seed, step, args.batch, block)
        torch.manual_seed(args.seed * 7_919 + step)  # dropout masks: a function of the step
        logits = model(x).logits
        loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab_size), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        row = {"step": step, "tokens": step * args.batch * block, "lr": lr, "train_loss": loss.item(),
               "valid_loss": "", "valid_bpb": "", "wall_s": round(time.time() - started, 1)}
        if step % args.eval_every == 0 or step == args.steps:
            row["valid_loss"], row["valid_bpb"] = evaluate(model, valid, block)
            print(f"step {step}: train {loss.item():.3f}, held-out {row['valid_loss']:.4f} nats/token "
                  f"= {row['valid_bpb']:.4f} bits/byte, {row['wall_s'] / 60:.1f} min", flush=True)
        log.append(row)
        done = step == args.steps or step == args.stop_after
        if done or time.time() - last_save > args.checkpoint_minutes * 60:
            save_checkpoint(ckpt_path, model, opt, step, log, time.time() - started)
            last_save = time.time()
        if step == args.stop_after:
            return

    with open(args.out / "loss.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(log[0].keys()))
        writer.writeheader()
        writer.writerows(log)
    model.eval()
    model.save_pretrained(args.out / "model", safe_serialization=True)
    print(f"done: {step} steps, {step * args.batch * block} tokens seen, {(time.time() - started) / 60:.1f} min; "
          f"model in {args.out / 'model'}", flush=True)


if __name__ == "__main__":
    main()
