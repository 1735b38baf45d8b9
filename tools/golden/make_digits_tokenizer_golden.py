#!/usr/bin/env python3
"""Golden token ids for a tokenizer.json whose pre-tokenizer is a Sequence of
`Digits` and `ByteLevel`: SmolLM2's layout (each digit its own piece, then
GPT-2's pattern). A byte-level BPE is trained with Hugging Face `tokenizers`
on the mixed corpus (tests/fixtures/gpt2_tokenizer/corpus.txt: numbers,
accents, CJK, RTL scripts, emoji with ZWJ, code, prose), once with each digit
isolated and once with digit runs kept together, and the corpus's ids are
written as the oracle.

    pip install tokenizers
    python3 tools/golden/make_digits_tokenizer_golden.py

writes tests/fixtures/digits_tokenizer/{individual,contiguous}/tokenizer.json
and ids.u16 (every id, little-endian u16).
"""
import os
import struct

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests/fixtures/gpt2_tokenizer/corpus.txt")
OUT = os.path.join(ROOT, "tests/fixtures/digits_tokenizer")


def main():
    with open(CORPUS, encoding="utf-8", newline="") as f:
        text = f.read()
    for name, individual in [("individual", True), ("contiguous", False)]:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=individual),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<|endoftext|>", "<|im_end|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
        tok.train_from_iterator([text], trainer)
        out = os.path.join(OUT, name)
        os.makedirs(out, exist_ok=True)
        tok.save(os.path.join(out, "tokenizer.json"))
        ids = tok.encode(text, add_special_tokens=False).ids
        assert max(ids) < 65536
        with open(os.path.join(out, "ids.u16"), "wb") as f:
            f.write(struct.pack(f"<{len(ids)}H", *ids))
        print(f"{name}: {len(text.encode())} bytes -> {len(ids)} ids, "
              f"digits of '2026' -> {tok.encode('2026 12345').tokens}")


if __name__ == "__main__":
    main()
