#!/usr/bin/env python3
"""Exports a GPT-2 or Llama-family folder (config.json, model.safetensors,
tokenizer.json or vocab.json + merges.txt) the way transformers.js loads one: config.json,
generation_config.json and the tokenizer files at the top, the decoder with its
KV cache as onnx/model.onnx (fp32, optimum's text-generation-with-past),
and the two other files transformers.js loads by `dtype`: onnx/model_fp16.onnx
(every float in f16, the KV cache's too) and onnx/model_quantized.onnx (`q8`,
its default on the CPU: onnxruntime's dynamic quantization, uint8 weights with
one scale and zero point per tensor, as transformers.js's own conversion
script makes it), and onnx/model_q4.onnx (`q4`: onnxruntime's MatMulNBits,
4-bit weights in groups of 32 with one scale each, symmetric, as our int4 and
llama.cpp's Q4_0 are; f32 activations). onnxruntime's 4-bit quantizer takes
MatMul nodes only, and GPT-2's export writes its projections as Gemm nodes, so
for q4 each Gemm becomes the MatMul and Add it computes (the same sums) first.
Used by `./tools/dev bench` for the transformers.js comparison.

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
if not os.path.exists(f"{out}/onnx/model_q4.onnx"):
    import onnx
    from onnx import helper, numpy_helper
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    graph = onnx.load(fp32)
    inits = {t.name: t for t in graph.graph.initializer}
    nodes = []
    for node in graph.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        plain = attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0 and not attrs.get("transA", 0)
        if node.op_type != "Gemm" or not plain or node.input[1] not in inits:
            nodes.append(node)
            continue
        weight = node.input[1]
        if attrs.get("transB", 0):  # MatMul wants [in, out]
            w = numpy_helper.to_array(inits[weight]).T.copy()
            inits[weight].CopyFrom(numpy_helper.from_array(w, weight))
        biased = len(node.input) > 2 and node.input[2]
        product = f"{node.output[0]}_matmul" if biased else node.output[0]
        nodes.append(helper.make_node("MatMul", [node.input[0], weight], [product], name=f"{node.name}_matmul"))
        if biased:
            nodes.append(helper.make_node("Add", [product, node.input[2]], [node.output[0]], name=f"{node.name}_add"))
    del graph.graph.node[:]
    graph.graph.node.extend(nodes)
    quantizer = MatMulNBitsQuantizer(graph, block_size=32, is_symmetric=True)
    quantizer.process()
    onnx.save(quantizer.model.model, f"{out}/onnx/model_q4.onnx")
print(f"wrote {out}")
