#!/usr/bin/env python3
"""Write the held-out passage the app and tests score the model on.

`www/models/shakespeare/heldout.txt` is the opening of Macbeth, Act I,
Scene III (about 6 KB, cut at a line end): a work the bundled model never
trained on (`corpus.VALID`), cleaned exactly as the corpus is. The
quantization lesson measures bits per byte and the divergence of each weight
format from f32 on it; `crates/engine/tests/formats.rs` holds int8 to its bar
on it.

Usage: python3 tools/shakespeare/heldout.py [--cache target/shakespeare/download]
"""
import argparse
from pathlib import Path

import corpus

WORK = "macbeth"
START = "SCENE III. A heath."
BYTES = 6000
OUT = Path(__file__).resolve().parents[2] / "www/models/shakespeare/heldout.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path("target/shakespeare/download"))
    args = parser.parse_args()
    assert WORK in corpus.VALID, "the passage must come from a held-out work"
    text = corpus.clean(corpus.read_works(corpus.fetch(args.cache))[WORK])
    start = text.index(START)
    end = text.rindex("\n", start, start + BYTES) + 1
    OUT.write_text(text[start:end], encoding="ascii")
    print(f"{OUT}: {end - start} bytes of {WORK}")


if __name__ == "__main__":
    main()
