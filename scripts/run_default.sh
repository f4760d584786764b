#!/usr/bin/env bash
# `make run`: runs the default model (SmolLM2-135M-Instruct Q4_1). Until the HTTP server
# lands this prints one greedy answer to a chat message: the model's own chat template
# (from the GGUF) renders the conversation, the engine generates.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-$(scripts/default_model_path.sh)}
QUESTION=${QUESTION:-What is the capital of France?}
echo "model: $MODEL"
CONTEXT=$(mktemp)
trap 'rm -f "$CONTEXT"' EXIT
python3 -c 'import json, sys; print(json.dumps({"messages": [{"role": "user", "content": sys.argv[1]}], "add_generation_prompt": True}))' \
  "$QUESTION" > "$CONTEXT"
PROMPT=$(build/bin/tessera template render --template "$MODEL" --context "$CONTEXT"; printf x)
PROMPT=${PROMPT%x}  # keep the template's trailing newline
echo "user: $QUESTION"
build/bin/tessera generate --model "$MODEL" --prompt "$PROMPT" --max-tokens "${MAX_TOKENS:-64}" \
  --temperature 0 --threads "${THREADS:-0}" --json --disable-progress-bar 2>/dev/null |
  python3 -c 'import json, sys; r = json.loads(sys.stdin.read()); print("assistant:", r["outputs"][0]["text"]); print("prompt ids:", r["prompt_token_ids"])'
