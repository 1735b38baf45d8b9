#!/usr/bin/env python3
"""Golden token ids for the SentencePiece-style BPE that TinyLlama, Llama 2
and Mistral 7B ship as tokenizer.json: `▁` for spaces, one `▁` prepended,
byte fallback (`<0xE4>` …) for characters outside the vocabulary, and a
post-processor that puts `<s>` (BOS) first.

A SentencePiece BPE is trained on the mixed corpus
(tests/fixtures/gpt2_tokenizer/corpus.txt) with Llama's settings (byte
fallback, split digits, dummy prefix, no normalisation) and a character
coverage below 1, so CJK, emoji and rare letters fall back to bytes. It is
converted as transformers' LlamaConverter does, in two layouts:

- legacy: normalizer Prepend("▁") + Replace(" ", "▁") (the Hub files of
  TinyLlama-1.1B-Chat and Llama 2; `▁` is prepended after every special token);
- metaspace: a Metaspace pre-tokenizer, prepend_scheme "first" (what
  transformers writes with legacy=False).

transformers 5's SpmConverter passes the wrong argument to its extractor, so
the merges are made as transformers 4's SentencePieceExtractor made them
(ranked by the merged piece's score), which is where the Hub files come from.

    pip install tokenizers transformers sentencepiece protobuf
    python3 tools/golden/make_sentencepiece_golden.py

writes tests/fixtures/sentencepiece/NAME/tokenizer.json, ids.u16 (the
corpus with special tokens added: BOS first; little-endian u16) and
cases.json (short texts: their ids, and the text `decode` gives back).
"""
import io
import json
import os
import struct

import sentencepiece as spm
from tokenizers import processors
import transformers.convert_slow_tokenizer as convert

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests/fixtures/gpt2_tokenizer/corpus.txt")
OUT = os.path.join(ROOT, "tests/fixtures/sentencepiece")

CASES = ["Hello world", " Hello", "  two spaces first", "", " ", "a<s>b", "<s> after BOS",
         "end </s>", "line\nbreak\ttab", "2026-11-27: 3.14159", "你好，世界 🙂👩‍👩‍👧",
         "naïve café Ωμέγα", "x▁y", "<0x41> is not a byte", "<unk>"]


class Extractor(convert.SentencePieceExtractor):
    """transformers 4's merges: every split of a piece into two pieces,
    ranked by the whole piece's score (higher first)."""

    def extract(self, vocab_scores):
        vocab = {p.piece: i for i, p in enumerate(self.proto.pieces)}
        merges = []
        for piece, score in dict(vocab_scores).items():
            local = [(piece[:k], piece[k:], score) for k in range(1, len(piece))
                     if piece[:k] in vocab and piece[k:] in vocab]
            merges += sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.sort(key=lambda m: m[2], reverse=True)
        return vocab, [(a, b) for a, b, _ in merges]


class Converter(convert.LlamaConverter):
    SpmExtractor = Extractor


class Original:
    """What LlamaConverter reads from a slow LlamaTokenizer."""

    def __init__(self, vocab_file, legacy):
        self.vocab_file, self.legacy, self.add_prefix_space = vocab_file, legacy, True

    def convert_ids_to_tokens(self, i):
        return ["<unk>", "<s>", "</s>"][i]


def train(text, path):
    lines = [line for line in text.split("\n") if line.strip()]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=2000,
        byte_fallback=True, character_coverage=0.995, split_digits=True, add_dummy_prefix=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        max_sentence_length=1 << 20, minloglevel=2)
    with open(path, "wb") as f:
        f.write(model.getvalue())
    return spm.SentencePieceProcessor(model_file=path)


def main():
    with open(CORPUS, encoding="utf-8", newline="") as f:
        text = f.read()
    os.makedirs(OUT, exist_ok=True)
    model_path = os.path.join(OUT, "sp.model")
    sp = train(text, model_path)
    for name, legacy in [("legacy", True), ("metaspace", False)]:
        tok = Converter(Original(model_path, legacy)).converted()
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
        out = os.path.join(OUT, name)
        os.makedirs(out, exist_ok=True)
        tok.save(os.path.join(out, "tokenizer.json"))
        ids = tok.encode(text).ids
        assert ids[0] == 1 and max(ids) < 65536
        with open(os.path.join(out, "ids.u16"), "wb") as f:
            f.write(struct.pack(f"<{len(ids)}H", *ids))
        cases = [{"text": t, "ids": tok.encode(t).ids, "decoded": tok.decode(tok.encode(t).ids)}
                 for t in CASES]
        with open(os.path.join(out, "cases.json"), "w", encoding="utf-8") as f:
            json.dump(cases, f, ensure_ascii=False, indent=1)
        # SentencePiece itself, line by line, as a check on the conversion.
        lines = [line for line in text.split("\n") if line.strip()]
        same = sum(tok.encode(line, add_special_tokens=False).ids == sp.encode(line) for line in lines)
        fallback = sum(1 for i in ids if 3 <= i < 259)
        print(f"{name}: {len(text.encode())} bytes -> {len(ids)} ids ({fallback} byte-fallback), "
              f"lines equal to sentencepiece's {same}/{len(lines)}")
    os.remove(model_path)


if __name__ == "__main__":
    main()
