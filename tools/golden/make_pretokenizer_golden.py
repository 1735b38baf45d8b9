#!/usr/bin/env python3
"""Golden token ids for the byte-level BPE layouts of today's small models,
from Hugging Face `tokenizers`: a BPE is trained on the mixed corpus
(tests/fixtures/gpt2_tokenizer/corpus.txt: numbers, accents, CJK, RTL
scripts, emoji with ZWJ, combining marks, code, prose) with each
pre-tokenizer below, and the corpus's ids are written as the oracle.

- individual / contiguous: a Sequence of `Digits` (each digit, or each run
  of digits, a piece) then `ByteLevel` (GPT-2's pattern): SmolLM2's layout;
- llama3: `Split` on Llama 3's pattern (numbers in pieces of up to three
  digits), then `ByteLevel` without its own pattern;
- qwen2: an NFC normalizer, `Split` on Qwen2's pattern (each digit a piece),
  then `ByteLevel` without its own pattern.

    pip install tokenizers
    python3 tools/golden/make_pretokenizer_golden.py

writes tests/fixtures/pretokenizers/NAME/tokenizer.json and ids.u16 (every
id, little-endian u16).
"""
import os
import struct

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests/fixtures/gpt2_tokenizer/corpus.txt")
OUT = os.path.join(ROOT, "tests/fixtures/pretokenizers")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
         r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def digits_then_byte_level(individual):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=individual),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])


def split_then_byte_level(pattern):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


# name: (pre-tokenizer, normalizer)
CASES = {
    "individual": (digits_then_byte_level(True), None),
    "contiguous": (digits_then_byte_level(False), None),
    "llama3": (split_then_byte_level(LLAMA3), None),
    "qwen2": (split_then_byte_level(QWEN2), normalizers.NFC()),
}


def main():
    with open(CORPUS, encoding="utf-8", newline="") as f:
        text = f.read()
    for name, (pre, normalizer) in CASES.items():
        tok = Tokenizer(models.BPE())
        if normalizer is not None:
            tok.normalizer = normalizer
        tok.pre_tokenizer = pre
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
              f"'It's 2026  ok' -> {tok.encode(chr(73) + chr(116) + chr(39) + 's 2026  ok').tokens}")


if __name__ == "__main__":
    main()
