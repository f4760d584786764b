#!/usr/bin/env bash
# `make run`: runs the default model (SmolLM2-135M-Instruct Q4_1). Until the HTTP server
# lands this prints one greedy generation of a chat prompt, as token ids.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-$(scripts/default_model_path.sh)}
# SmolLM2's chat template applied to "What is the capital of France?" (default system
# prompt, generation prompt added), tokenized with Hugging Face tokenizers.
PROMPT=${PROMPT_TOKEN_IDS:-1,9690,198,2683,359,253,5356,5646,11173,3365,3511,308,34519,28,7018,411,407,19712,8182,2,198,1,4093,198,1780,314,260,3575,282,4649,47,2,198,1,520,9531,198}
echo "model: $MODEL"
exec build/bin/tessera generate --model "$MODEL" --prompt-token-ids "$PROMPT" \
  --max-tokens "${MAX_TOKENS:-64}" --temperature 0 --logprobs 0 --threads "${THREADS:-0}"
