#!/usr/bin/env python3
"""Exports a GPT-2 folder (config.json, model.safetensors, tokenizer.json or
vocab.json + merges.txt) the way transformers.js loads one: config.json,
generation_config.json and the tokenizer files at the top, the decoder with its
KV cache as onnx/model.onnx (fp32, optimum's text-generation-with-past).
Used by `./tools/dev bench` for the transformers.js comparison.

    python3 tools/bench/export_onnx.py MODEL_DIR OUT_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

from transformers import GPT2TokenizerFast

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
if os.path.exists(f"{src}/tokenizer.json"):
    GPT2TokenizerFast(tokenizer_file=f"{src}/tokenizer.json").save_pretrained(out)
    shutil.copy(f"{src}/tokenizer.json", out)  # ours, byte for byte
else:
    GPT2TokenizerFast(vocab_file=f"{src}/vocab.json", merges_file=f"{src}/merges.txt").save_pretrained(out)
with tempfile.TemporaryDirectory() as tmp:
    cli = os.path.join(os.path.dirname(sys.executable), "optimum-cli")
    subprocess.run([cli, "export", "onnx", "--model", src, "--task", "text-generation-with-past", tmp],
                   check=True, stdout=subprocess.DEVNULL)
    os.makedirs(f"{out}/onnx", exist_ok=True)
    shutil.move(f"{tmp}/model.onnx", f"{out}/onnx/model.onnx")
    for name in ["config.json", "generation_config.json"]:
        shutil.move(f"{tmp}/{name}", f"{out}/{name}")
print(f"wrote {out}")
