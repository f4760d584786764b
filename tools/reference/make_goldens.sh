#!/usr/bin/env bash
# Regenerates the tiny test models (tests/data/models/) and every HF golden
# (tests/data/golden/hf-*.json). Needs a Python with torch, transformers, gguf, safetensors,
# numpy, accelerate (see tools/reference/README.md); CPU only, a few minutes on 2 cores.
#
#   tools/reference/make_goldens.sh            # models + all goldens
#   SKIP_MODELS=1 tools/reference/make_goldens.sh   # goldens only (keep the model files)
#   SKIP_SMOLLM2=1 ...                         # without the SmolLM2-135M golden
# Environment: PYTHON (default /opt/refenv/bin/python if present, else python3),
#   SMOLLM2_GGUF (default: scripts/default_model_path.sh), THREADS (default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -z "${PYTHON:-}" ]; then
  if [ -x /opt/refenv/bin/python ]; then PYTHON=/opt/refenv/bin/python; else PYTHON=python3; fi
fi
THREADS=${THREADS:-2}
export TRANSFORMERS_VERBOSITY=error PYTHONWARNINGS=ignore TQDM_DISABLE=1
M=tests/data/models
G=tests/data/golden
REF="$PYTHON tools/reference/hf_greedy_reference.py --threads $THREADS"
mkdir -p "$G"

if [ -z "${SKIP_MODELS:-}" ]; then
  "$PYTHON" tools/reference/make_tiny_models.py --out "$M"
fi

# Tiny models from their transformers directories: 8 seeded random prompts, 32 tokens, top-10.
for name in tiny-llama2 tiny-llama3 tiny-mistral tiny-qwen2 tiny-qwen3 tiny-smollm2 tiny-phi3; do
  $REF --model "$M/$name" --random-prompts --max-tokens 32 --top-k 10 --out "$G/hf-$name.json"
done

# GGUF variants, loaded (and dequantized) by transformers itself. transformers' GGUF loader
# ignores rope_freqs (llama3 scaling) and qwen3's attention.key_length, so those take the
# config from the matching HF directory; the weights still come from the GGUF.
for f in f32 q8_0 q4_0 q4_1; do
  $REF --model "$M/tiny-llama3/tiny-llama3-$f.gguf" --config-from "$M/tiny-llama3" \
    --random-prompts --max-tokens 32 --top-k 10 --out "$G/hf-tiny-llama3-$f.json"
done
$REF --model "$M/tiny-qwen2/tiny-qwen2-f32.gguf" --random-prompts --max-tokens 32 --top-k 10 \
  --out "$G/hf-tiny-qwen2-f32.json"
$REF --model "$M/tiny-qwen3/tiny-qwen3-f32.gguf" --config-from "$M/tiny-qwen3" \
  --random-prompts --max-tokens 32 --top-k 10 --out "$G/hf-tiny-qwen3-f32.json"
$REF --model "$M/tiny-smollm2/tiny-smollm2-f32.gguf" --random-prompts --max-tokens 32 --top-k 10 \
  --out "$G/hf-tiny-smollm2-f32.json"

# The real default model (never copied into the repo): natural-text prompts, tokenized by
# transformers' tokenizer built from the same GGUF.
if [ -z "${SKIP_SMOLLM2:-}" ]; then
  SMOLLM2_GGUF=${SMOLLM2_GGUF:-$(PYTHON=python3 bash scripts/default_model_path.sh)}
  $REF --model "$SMOLLM2_GGUF" --name smollm2-135m-instruct-q4_1 --text-prompts \
    --max-tokens 32 --top-k 10 --out "$G/hf-smollm2-135m-q4_1.json"
fi

"$PYTHON" tools/reference/check_goldens.py "$G"
