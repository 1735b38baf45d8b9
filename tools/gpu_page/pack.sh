#!/usr/bin/env bash
# Packs what `./tools/dev gpu-page` needs on a GPU machine that has Python
# but no Node, no Chromium and no network, into target/gpu-page/ (each
# command to that machine carries at most 64 MiB with the working tree, so
# Chromium travels in parts of 45 MB, one or two per command):
#   chromium.tar.xz.part-*  Debian's chromium-headless-shell with the data files
#                          of chromium-common it reads (ICU, V8 snapshots, the
#                          bundled Vulkan loader and ANGLE) and every library it
#                          links beyond glibc, as this Debian has them; the GPU
#                          machine links only the ones it lacks (on_gpu.sh)
#   chromium.sha256        the whole archive's checksum, checked before unpacking
#   dist/, decode-lab      the release build of the page and of the CLI
# Sourced by tools/dev with ROOT set; uses Debian's apt-get download and dpkg.
set -euo pipefail
out="$ROOT/target/gpu-page"
stage="$out/stage"
rm -rf "$out" && mkdir -p "$stage/bin" "$stage/lib" "$out/debs"
(cd "$out/debs" && apt-get download chromium-headless-shell chromium-common 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
for deb in "$out"/debs/*.deb; do dpkg -x "$deb" "$out/root"; done
lib="$out/root/usr/lib/chromium"
cp "$lib/chromium-headless-shell" "$lib"/headless_*.pak "$stage/bin/"
# What the shell reads beside itself: ICU data, V8 snapshots, ANGLE and the Vulkan loader.
for f in icudtl.dat snapshot_blob.bin v8_context_snapshot.bin libEGL.so libGLESv2.so libvulkan.so.1 \
  libvk_swiftshader.so vk_swiftshader_icd.json; do
  [ -e "$lib/$f" ] && cp -L "$lib/$f" "$stage/bin/"
done
# Every library it links beyond glibc itself, as files (not symlinks).
ldd "$stage/bin/chromium-headless-shell" | awk '/=> \//{print $1, $3}' | while read -r name path; do
  case "$name" in libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) continue ;; esac
  cp -L "$path" "$stage/lib/$name"
done
tar -C "$stage" -cf - . | xz -6 -T0 > "$out/chromium.tar.xz"
sha256sum "$out/chromium.tar.xz" | awk '{print $1}' > "$out/chromium.sha256"
split -b 45M "$out/chromium.tar.xz" "$out/chromium.tar.xz.part-"
rm -rf "$stage" "$out/root" "$out/debs" "$out/chromium.tar.xz"
cp -r "$ROOT/dist" "$out/dist"
cp "$ROOT/target/release/decode-lab" "$out/decode-lab"
ls -l "$out" | awk 'NR > 1 {printf "  %s %s\n", $5, $9}'
