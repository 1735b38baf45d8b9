#!/usr/bin/env python3
"""Exports a GPT-2 or Llama-family folder (config.json, model.safetensors,
tokenizer.json or vocab.json + merges.txt) the way transformers.js loads one: config.json,
generation_config.json and the tokenizer files at the top, the decoder with its
KV cache as onnx/model.onnx (fp32, optimum's text-generation-with-past),
and the two other files transformers.js loads by `dtype`: onnx/model_fp16.onnx
(every float in f16, the KV cache's too) and onnx/model_quantized.onnx (`q8`,
its default on the CPU: onnxruntime's dynamic quantization, uint8 weights with
one scale and zero point per tensor, as transformers.js's own conversion
script makes it). No q4: onnxruntime's 4-bit quantizer takes MatMul nodes
only, and the export's projections are Gemm nodes, so only the LM head
would be 4-bit: no match for our int4. Used by `./tools/dev bench` for the
transformers.js comparison.

    python3 tools/bench/export_onnx.py MODEL_DIR OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from transformers import GPT2TokenizerFast, PreTrainedTokenizerFast

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
if os.path.exists(f"{src}/tokenizer.json"):
    PreTrainedTokenizerFast(tokenizer_file=f"{src}/tokenizer.json").save_pretrained(out)
    shutil.copy(f"{src}/tokenizer.json", out)  # ours, byte for byte
else:
    GPT2TokenizerFast(vocab_file=f"{src}/vocab.json", merges_file=f"{src}/merges.txt").save_pretrained(out)
fp32 = f"{out}/onnx/model.onnx"
if not os.path.exists(fp32):
    with tempfile.TemporaryDirectory() as tmp:
        cli = os.path.join(os.path.dirname(sys.executable), "optimum-cli")
        subprocess.run([cli, "export", "onnx", "--model", src, "--task", "text-generation-with-past", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        os.makedirs(f"{out}/onnx", exist_ok=True)
        shutil.move(f"{tmp}/model.onnx", fp32)
        for name in ["config.json", "generation_config.json"]:
            shutil.move(f"{tmp}/{name}", f"{out}/{name}")
# transformers.js hands the fp16 graph an f16 KV cache only where the
# config says so (as the Hub's onnx-community exports do).
with open(f"{out}/config.json") as f:
    config = json.load(f)
config["transformers.js_config"] = {"kv_cache_dtype": {"fp16": "float16"}}
with open(f"{out}/config.json", "w") as f:
    json.dump(config, f, indent=2)
if not os.path.exists(f"{out}/onnx/model_fp16.onnx"):
    import onnx
    from onnxconverter_common import float16
    half = float16.convert_float_to_float16(onnx.load(fp32), keep_io_types=False)
    # The converter retypes every float tensor but leaves a Cast's target
    # type at float32; onnxruntime then refuses the graph. Cast to f16.
    for node in half.graph.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == onnx.TensorProto.FLOAT:
                a.i = onnx.TensorProto.FLOAT16
    onnx.save(half, f"{out}/onnx/model_fp16.onnx")
if not os.path.exists(f"{out}/onnx/model_quantized.onnx"):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(fp32, f"{out}/onnx/model_quantized.onnx", per_channel=False, reduce_range=False,
                     weight_type=QuantType.QUInt8)
print(f"wrote {out}")
