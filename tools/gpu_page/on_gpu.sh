#!/usr/bin/env bash
# `./tools/dev gpu-page` on the GPU machine (see pack.sh): the parts of the
# Chromium archive carried by this command go to /tmp/decode-lab-gpu-page
# (kept between commands run back to back); once every part is there and the
# archive's checksum matches, it is unpacked, the libraries this machine
# lacks are linked from the carried ones, a GPT-2-124M-shaped f16 model is
# made with the carried CLI, and tools/gpu_page/run.py measures the page.
# Results: target/gpu-page/out/ (gpu-page.json, gpu-page.txt), copied to
# $OUT when the device tool sets it.
set -euo pipefail
src="$ROOT/target/gpu-page"
home="${GPU_PAGE_HOME:-/tmp/decode-lab-gpu-page}"
mkdir -p "$home/parts"
for part in "$src"/chromium.tar.xz.part-*; do
  [ -e "$part" ] && cp "$part" "$home/parts/" && echo "gpu-page: received ${part##*/}"
done
[ -e "$src/chromium.sha256" ] && cp "$src/chromium.sha256" "$home/"
[ -d "$src/dist" ] && rm -rf "$home/dist" && cp -r "$src/dist" "$home/dist"
[ -e "$src/decode-lab" ] && cp "$src/decode-lab" "$home/decode-lab"
if [ ! -x "$home/chromium/bin/chromium-headless-shell" ]; then
  [ -e "$home/chromium.sha256" ] || { echo "gpu-page: no chromium.sha256 yet: carry it with a part" >&2; exit 3; }
  cat "$home"/parts/chromium.tar.xz.part-* > "$home/chromium.tar.xz"
  if [ "$(sha256sum "$home/chromium.tar.xz" | awk '{print $1}')" != "$(cat "$home/chromium.sha256")" ]; then
    echo "gpu-page: $(ls "$home/parts" | wc -l) part(s) here, the archive is not whole yet: carry the others" >&2
    exit 3
  fi
  mkdir -p "$home/chromium" && tar -C "$home/chromium" -xJf "$home/chromium.tar.xz" && rm "$home/chromium.tar.xz"
fi
[ -d "$home/dist" ] && [ -x "$home/decode-lab" ] || { echo "gpu-page: Chromium is here; now carry dist/ and decode-lab" >&2; exit 3; }
shell="$home/chromium/bin/chromium-headless-shell"
# Link only the libraries this machine lacks, until nothing is missing.
mkdir -p "$home/missing"
export LD_LIBRARY_PATH="$home/missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for _ in 1 2 3 4 5 6; do
  missing=$(ldd "$shell" | awk '/not found/{print $1}')
  [ -z "$missing" ] && break
  for name in $missing; do
    if [ -e "$home/chromium/lib/$name" ]; then ln -sf "$home/chromium/lib/$name" "$home/missing/$name"
    else echo "gpu-page: $name is missing here and was not carried" >&2; exit 4; fi
  done
done
echo "gpu-page: libraries linked from the carried ones: $(ls "$home/missing" | tr '\n' ' ')"
model="$home/dist/models/gpt2-124m-shape"
[ -f "$model/model.safetensors" ] || "$home/decode-lab" random-model --out "$model" --n-layer 12 --n-head 12 \
  --n-embd 768 --n-positions 1024 --vocab-size 50257 --f16 --seed 124 --tokenizer-from "$home/dist/models/shakespeare"
out="$ROOT/target/gpu-page/out"
python3 "$ROOT/tools/gpu_page/run.py" --dist "$home/dist" --chromium "$shell" --out "$out" \
  --model models/gpt2-124m-shape/ ${GPU_PAGE_ARGS:-}
[ -n "${OUT:-}" ] && cp "$out"/gpu-page.* "$OUT/"
