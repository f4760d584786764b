#!/usr/bin/env bash
# Development files the GPU machine lacks, fetched here (Debian packages) and unpacked into
# .gpu-deps/ (git-ignored), which the device run carries along with .gpu-data/ (the Llama 3.1
# tokenizer from ../shared/data): PCRE2 headers (its runtime 10.42 matches), and ICU 72 whole
# (that machine has only ICU 74's runtime, and ICU's symbols carry their version).
# Static libraries and docs are dropped to stay small.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Llama 3.1 tokenizer for the 8B-shape random checkpoint (scripts/gpu-check.sh model8b).
TOKENIZER=../shared/data/tokenizers/llama3_1
if [ -d "$TOKENIZER" ] && [ ! -d .gpu-data/llama3_1 ]; then
  mkdir -p .gpu-data/llama3_1 && cp "$TOKENIZER"/tokenizer*.json .gpu-data/llama3_1/
fi
DEST=.gpu-deps
# xgrammar's source distribution (cmake/xgrammar.cmake pins it; that machine has no PyPI).
XG_VERSION=$(sed -n 's/^set(TESSERA_XGRAMMAR_VERSION \(.*\))$/\1/p' cmake/xgrammar.cmake)
XG_SHA256=$(sed -n 's/^set(TESSERA_XGRAMMAR_SHA256 \(.*\))$/\1/p' cmake/xgrammar.cmake)
XG_URL=$(sed -n 's/^ *"\(https:.*\)\${TESSERA_XGRAMMAR_VERSION}\.tar\.gz")$/\1/p' cmake/xgrammar.cmake)
XG="$DEST/xgrammar-$XG_VERSION.tar.gz"
if [ ! -f "$XG" ]; then
  mkdir -p "$DEST"
  curl -sSfL "$XG_URL$XG_VERSION.tar.gz" -o "$XG.part"
  echo "$XG_SHA256  $XG.part" | sha256sum -c --quiet && mv "$XG.part" "$XG"
fi
[ -f "$DEST/ok" ] && { echo "gpu_deps: $DEST ready"; exit 0; }
rm -rf "$DEST/debs" "$DEST/prefix"
mkdir -p "$DEST/debs" "$DEST/prefix"
(cd "$DEST/debs" && apt-get download libpcre2-dev libicu-dev libicu72 > /dev/null)
for d in "$DEST"/debs/*.deb; do dpkg -x "$d" "$DEST/prefix"; done
rm -rf "$DEST/debs" "$DEST/prefix/usr/share/doc" "$DEST/prefix/usr/share/man"
find "$DEST/prefix" -name '*.a' -delete
# pkg-config files name /usr: point them at the unpacked prefix (resolved on the GPU machine).
for pc in "$DEST"/prefix/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
  sed -i -E 's|^prefix ?= ?/usr$|prefix=${pcfiledir}/../../..|' "$pc"
done
# Only ICU's uc/data/i18n are linked; PCRE2's link name points at that machine's runtime.
rm -f "$DEST"/prefix/usr/lib/x86_64-linux-gnu/libicu{io,test,tu}.so*
ln -sf /usr/lib/x86_64-linux-gnu/libpcre2-8.so.0 "$DEST/prefix/usr/lib/x86_64-linux-gnu/libpcre2-8.so"
touch "$DEST/ok"
du -sh "$DEST"
