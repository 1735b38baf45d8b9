"""A GPT-2 model folder (config.json, model.safetensors, vocab.json +
merges.txt) as a GGUF file llama.cpp loads, in F32, F16, Q8_0 or Q4_0: the
bench's like-for-like peer (tools/bench/vs_llama_cpp.py).

Like for like with our weight formats: the matrices of the blocks, the token
embedding and the LM head (GPT-2 ties it to the embedding: written out as
`output.weight`, as llama.cpp's own converter does) in the format; layer
norms, biases and the position embedding in F32, as our engine keeps them.
Tensor names and layout follow llama.cpp's `convert_hf_to_gguf.py` for
GPT-2 (Conv1D weights transposed to `[out, in]`).

usage: to_gguf.py MODEL_DIR OUT.gguf {F32,F16,Q8_0,Q4_0}
"""

import json
import sys
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import load_file

QTYPES = {
    "F32": gguf.GGMLQuantizationType.F32,
    "F16": gguf.GGMLQuantizationType.F16,
    "Q8_0": gguf.GGMLQuantizationType.Q8_0,
    "Q4_0": gguf.GGMLQuantizationType.Q4_0,
}
FILE_TYPES = {
    "F32": gguf.LlamaFileType.ALL_F32,
    "F16": gguf.LlamaFileType.MOSTLY_F16,
    "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
    "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
}

# Hugging Face GPT-2 name (after `h.N.`) -> llama.cpp's, and whether it is
# a Conv1D matrix ([in, out]: transposed) in the weight format.
BLOCK = {
    "ln_1.weight": ("attn_norm.weight", False),
    "ln_1.bias": ("attn_norm.bias", False),
    "attn.c_attn.weight": ("attn_qkv.weight", True),
    "attn.c_attn.bias": ("attn_qkv.bias", False),
    "attn.c_proj.weight": ("attn_output.weight", True),
    "attn.c_proj.bias": ("attn_output.bias", False),
    "ln_2.weight": ("ffn_norm.weight", False),
    "ln_2.bias": ("ffn_norm.bias", False),
    "mlp.c_fc.weight": ("ffn_up.weight", True),
    "mlp.c_fc.bias": ("ffn_up.bias", False),
    "mlp.c_proj.weight": ("ffn_down.weight", True),
    "mlp.c_proj.bias": ("ffn_down.bias", False),
}


def tensor(writer, name, data, kind):
    """`data` (float32) under `name`, in `kind` if it is a matrix, else F32."""
    data = np.ascontiguousarray(data, dtype=np.float32)
    qtype = QTYPES[kind] if data.ndim == 2 else gguf.GGMLQuantizationType.F32
    if qtype == gguf.GGMLQuantizationType.F32:
        writer.add_tensor(name, data)
    elif qtype == gguf.GGMLQuantizationType.F16:
        writer.add_tensor(name, data.astype(np.float16))
    else:
        writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)


def tokenizer(writer, folder, vocab_size):
    """GPT-2's byte-level BPE: the tokens in id order, their merges, <|endoftext|>."""
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    tokens = [""] * vocab_size
    for text, i in vocab.items():
        if i < vocab_size:
            tokens[i] = text
    lines = (folder / "merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [l for l in lines if l and not l.startswith("#version")]
    eot = vocab.get("<|endoftext|>", vocab_size - 1)
    types = [gguf.TokenType.NORMAL] * vocab_size
    types[eot] = gguf.TokenType.CONTROL
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(eot)
    writer.add_eos_token_id(eot)


def main(folder, out, kind):
    folder = Path(folder)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    weights = {k.removeprefix("transformer."): v for k, v in load_file(folder / "model.safetensors").items()}
    n_embd, n_layer = config["n_embd"], config["n_layer"]
    writer = gguf.GGUFWriter(out, "gpt2")
    writer.add_name("decode-lab bench model")
    writer.add_context_length(config["n_positions"])
    writer.add_embedding_length(n_embd)
    writer.add_feed_forward_length(config.get("n_inner") or 4 * n_embd)
    writer.add_block_count(n_layer)
    writer.add_head_count(config["n_head"])
    writer.add_layer_norm_eps(config.get("layer_norm_epsilon", 1e-5))
    writer.add_file_type(FILE_TYPES[kind])
    tokenizer(writer, folder, config["vocab_size"])
    f32 = lambda name: weights[name].astype(np.float32)
    tensor(writer, "token_embd.weight", f32("wte.weight"), kind)
    tensor(writer, "position_embd.weight", f32("wpe.weight"), "F32")
    for i in range(n_layer):
        for hf, (ours, conv1d) in BLOCK.items():
            data = f32(f"h.{i}.{hf}")
            tensor(writer, f"blk.{i}.{ours}", data.T if conv1d else data, kind)
    tensor(writer, "output_norm.weight", f32("ln_f.weight"), kind)
    tensor(writer, "output_norm.bias", f32("ln_f.bias"), kind)
    head = weights.get("lm_head.weight", weights["wte.weight"])
    tensor(writer, "output.weight", head.astype(np.float32), kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in QTYPES:
        sys.exit(__doc__)
    main(*sys.argv[1:])
