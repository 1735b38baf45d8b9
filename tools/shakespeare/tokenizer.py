#!/usr/bin/env python3
"""Train the bundled model's byte-level BPE tokenizer on the training works.

Writes <out>/tokenizer.json (GPT-2 style: byte-level pre-tokenizer without a
prefix space, byte-level decoder, `<|endoftext|>` as the last id) and, with
--measure, prints for several vocabulary sizes what the choice trades off:
tokens per byte on the held-out works (shorter sequences = more text per
position of context and per training step) against how many vocabulary entries
are rare in the training split (entries seen < 100 times get too few gradient
updates to learn a useful embedding in a two-hour run).

Usage: python3 tools/shakespeare/tokenizer.py --out target/shakespeare [--vocab 2048] [--measure]
"""
import argparse
import json
from collections import Counter
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

EOT = "<|endoftext|>"


def split_texts(out: Path) -> dict[str, list[str]]:
    corpus = (out / "corpus.txt").read_bytes()
    works = json.loads((out / "corpus.json").read_text())
    texts = {"train": [], "valid": []}
    for work in works:
        body = corpus[work["offset"] : work["offset"] + work["length"]]
        texts[work["split"]].append(body.decode("ascii"))
    return texts


def train(texts: list[str], vocab_size: int) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - 1,  # the end-of-text token is added last
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    tokenizer.add_special_tokens([EOT])
    assert tokenizer.get_vocab_size() == vocab_size, tokenizer.get_vocab_size()
    assert tokenizer.token_to_id(EOT) == vocab_size - 1
    return tokenizer


def measure(texts: dict[str, list[str]]) -> None:
    valid_bytes = sum(len(t) for t in texts["valid"])
    print("vocab  tokens/byte(valid)  entries seen <100x in train  embedding params at 256 dims")
    for vocab_size in (512, 1024, 2048, 3072, 4096):
        tokenizer = train(texts["train"], vocab_size)
        valid_tokens = sum(len(e.ids) for e in tokenizer.encode_batch(texts["valid"]))
        counts = Counter(i for e in tokenizer.encode_batch(texts["train"]) for i in e.ids)
        rare = sum(1 for i in range(vocab_size - 1) if counts[i] < 100)
        print(f"{vocab_size:5}  {valid_tokens / valid_bytes:18.3f}  {rare:27}  {vocab_size * 256:>10}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("target/shakespeare"))
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--measure", action="store_true")
    args = parser.parse_args()
    texts = split_texts(args.out)
    if args.measure:
        measure(texts)
    tokenizer = train(texts["train"], args.vocab)
    tokenizer.save(str(args.out / "tokenizer.json"))
    sample = "ROMEO:\nBut soft, what light through yonder window breaks?"
    print(f"tokenizer.json: vocab {args.vocab}; {sample!r} ->")
    print(" ", tokenizer.encode(sample).tokens)


if __name__ == "__main__":
    main()
