#!/usr/bin/env python3
"""Ship the trained model: pick f16 or f32, write www/models/shakespeare, plot the loss curve.

Reads <out>/model (the trainer's float32 export), <out>/tokenizer.json and
<out>/loss.csv. Scores the held-out works in float32 and with every weight
rounded to float16; ships float16 when that costs at most 0.01 nats per token
(halving the download), float32 otherwise. Writes

    www/models/shakespeare/{config.json, model.safetensors, tokenizer.json}
    www/models/shakespeare/loss.png   train and held-out loss against tokens seen
    <out>/export.json                 the figures quoted in MODEL_CARD.md

Usage: python3 tools/shakespeare/export.py --out target/shakespeare
"""
import argparse
import csv
import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import GPT2LMHeadModel

sys.path.insert(0, str(Path(__file__).parent))
import train  # noqa: E402  (same evaluation as during training)

MAX_F16_COST_NATS = 0.01


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tokens = [int(r["tokens"]) / 1e6 for r in rows]
    train_loss = [float(r["train_loss"]) for r in rows]
    # A 50-step running mean: single 2,048-token batches are noisy.
    smooth = [sum(train_loss[max(0, i - 49) : i + 1]) / (i + 1 - max(0, i - 49)) for i in range(len(rows))]
    held = [(int(r["tokens"]) / 1e6, float(r["valid_loss"])) for r in rows if r["valid_loss"]]
    fig, ax = plt.subplots(figsize=(6, 3.4), dpi=100)
    ax.plot(tokens, smooth, label="train (50-step mean)", linewidth=1)
    ax.plot([h[0] for h in held], [h[1] for h in held], "o-", label="held-out works", linewidth=1)
    ax.set_xlabel("tokens seen (millions)")
    ax.set_ylabel("loss (nats / token)")
    ax.set_ylim(bottom=min(smooth + [h[1] for h in held]) - 0.2, top=min(8.0, max(smooth)))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("target/shakespeare"))
    parser.add_argument("--ship", type=Path, default=Path("www/models/shakespeare"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    block = train.ARCH["n_positions"]
    _stream, valid = train.load_ids(args.out)

    model = GPT2LMHeadModel.from_pretrained(args.out / "model").eval()
    loss32, bpb32 = train.evaluate(model, valid, block)
    half = GPT2LMHeadModel.from_pretrained(args.out / "model").eval()
    with torch.no_grad():
        for p in half.parameters():
            p.copy_(p.half().float())
    loss16, bpb16 = train.evaluate(half, valid, block)
    use_f16 = loss16 - loss32 <= MAX_F16_COST_NATS
    print(f"held-out: f32 {loss32:.5f} nats/token = {bpb32:.4f} bits/byte; "
          f"f16 {loss16:.5f} = {bpb16:.4f} (cost {loss16 - loss32:+.5f} nats); shipping {'f16' if use_f16 else 'f32'}")

    args.ship.mkdir(parents=True, exist_ok=True)
    shipped = model.half() if use_f16 else model
    shipped.save_pretrained(args.ship, safe_serialization=True)
    for extra in ("generation_config.json",):
        (args.ship / extra).unlink(missing_ok=True)  # not part of the shipped format
    shutil.copy(args.out / "tokenizer.json", args.ship / "tokenizer.json")

    rows = list(csv.DictReader(open(args.out / "loss.csv")))
    plot(rows, args.ship / "loss.png")
    figures = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": int(rows[-1]["step"]),
        "tokens_seen": int(rows[-1]["tokens"]),
        "train_minutes": round(float(rows[-1]["wall_s"]) / 60, 1),
        "valid_nats_per_token_f32": loss32,
        "valid_bits_per_byte_f32": bpb32,
        "valid_nats_per_token_f16": loss16,
        "valid_bits_per_byte_f16": bpb16,
        "shipped_dtype": "float16" if use_f16 else "float32",
        "valid_works": [name for name, _ids, _len in valid],
    }
    (args.out / "export.json").write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))
    write_card(args.out, args.ship, figures, model.config)


def write_card(out: Path, ship: Path, figures: dict, config) -> None:
    """MODEL_CARD.md from the template, so its numbers are always this run's."""
    works = json.loads((out / "corpus.json").read_text())
    train_tokens = len(train.load_ids(out)[0])
    card = (Path(__file__).parent / "MODEL_CARD.template.md").read_text().format(
        valid_works=", ".join(w["name"] for w in works if w["split"] == "valid"),
        valid_bytes=sum(w["length"] for w in works if w["split"] == "valid"),
        train_works=sum(1 for w in works if w["split"] == "train"),
        train_bytes=sum(w["length"] for w in works if w["split"] == "train"),
        n_layer=config.n_layer, n_embd=config.n_embd, n_head=config.n_head, n_positions=config.n_positions,
        epochs=figures["tokens_seen"] / train_tokens,
        f16_cost=figures["valid_nats_per_token_f16"] - figures["valid_nats_per_token_f32"],
        **{k: v for k, v in figures.items() if k != "valid_works"},
    )
    (ship / "MODEL_CARD.md").write_text(card)


if __name__ == "__main__":
    main()
