#!/usr/bin/env bash
# `make run`: serves the default model (SmolLM2-135M-Instruct Q4_1) with the OpenAI API on
# port 8000 (PORT, HOST, MODEL override); Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-$(scripts/default_model_path.sh)}
PORT=${PORT:-8000}
HOST=${HOST:-127.0.0.1}
echo "model: $MODEL"
cat <<MSG
Serving the OpenAI API on http://$HOST:$PORT/v1 (model name SmolLM2-135M-Instruct). Try, from another shell:
  curl http://$HOST:$PORT/v1/chat/completions -H "Content-Type: application/json" \\
    -d '{"model": "SmolLM2-135M-Instruct", "messages": [{"role": "user", "content": "What is the capital of France?"}]}'
More examples: README.md; routes and flags: docs/server.md.
MSG
exec build/bin/tessera serve "$MODEL" --host "$HOST" --port "$PORT" --served-model-name SmolLM2-135M-Instruct \
  --threads "${THREADS:-0}" "$@"
