#!/usr/bin/env bash
# Runs vLLM's own OpenAI-server test modules against `tessera serve` (see README.md).
# Tessera's own script: vLLM's test files are fetched into $SUITE (default /tmp/vllm_suite),
# never into this repository.
#
#   tests/vllm_suite/run_suite.sh setup             # venv + vLLM sdist + scratch tree
#   tests/vllm_suite/run_suite.sh run [MODULE...]   # each module under `timeout`, JUnit XML out
#   tests/vllm_suite/run_suite.sh summary           # per-module counts and failure messages
#
# MODULE is a path under vLLM's tests/entrypoints/ (default: $MODULES below).
# Environment: TESSERA_BIN (default build/bin/tessera), TESSERA_MODEL (default: the repo's
# scripts/default_model_path.sh), VLLM_VERSION (sdist version, default 0.33.0),
# MODULE_TIMEOUT (s, default 900), TEST_TIMEOUT (s per test, default 300).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SUITE="${VLLM_SUITE_DIR:-/tmp/vllm_suite}"
VLLM_VERSION="${VLLM_VERSION:-0.33.0}"
TREE="$SUITE/tree"
VENV="$SUITE/venv"
RES="$SUITE/results"
export TESSERA_BIN="${TESSERA_BIN:-$REPO/build/bin/tessera}"
export TESSERA_SOURCE_DIR="$REPO"
export VLLM_SUITE_DIR="$SUITE"
export VLLM_STUB_VERSION="$VLLM_VERSION"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

# vLLM 0.33.0's modules that start a server and talk HTTP to it (paths under tests/entrypoints/),
# for text models. Not listed: pooling/, speech_to_text/, multimodal/, scale_out/, rl/ (but
# test_sleep), tool_parsers/, generate/ (structured decisions, generative scoring),
# openai/correctness/test_lmeval.py (needs lm_eval and a GSM8K download; a model's accuracy).
MODULES=(
  openai/completion/test_completion.py
  openai/completion/test_prompt_validation.py
  openai/completion/test_token_in_token_out.py
  openai/completion/test_completion_with_prompt_embeds.py
  openai/completion/test_tensorizer_entrypoint.py
  openai/chat_completion/test_chat.py
  openai/chat_completion/test_chat_completion.py
  openai/chat_completion/test_chat_echo.py
  openai/chat_completion/test_chat_logit_bias_validation.py
  openai/chat_completion/test_enable_force_include_usage.py
  openai/chat_completion/test_logprob_token_ids.py
  openai/chat_completion/test_root_path.py
  openai/chat_completion/test_batched_chat_completions.py
  openai/chat_completion/test_serving_chat.py
  openai/chat_completion/test_chat_completion_with_prompt_embeds.py
  openai/chat_completion/test_completion_with_function_calling.py
  openai/chat_completion/test_extra_content_fields.py
  openai/chat_completion/test_include_reasoning.py
  openai/chat_completion/test_thinking_token_budget.py
  openai/test_return_token_ids.py
  openai/test_return_tokens_as_ids.py
  openai/test_chunked_prompt.py
  openai/test_openai_schema.py
  openai/models/test_models.py
  serve/instrumentator/test_basic.py
  serve/instrumentator/test_metrics.py
  serve/instrumentator/test_orca_metrics.py
  serve/instrumentator/test_uds.py
  serve/middleware/test_optional_middleware.py
  serve/tokenize/test_tokenization.py
  serve/tokenize/test_tokenization_vlm.py
  serve/tokenize/test_tokenize_then_chat_vlm.py
  serve/lora/test_lora_adapters.py
  launchers/test_shutdown.py
  serve/sagemaker/test_sagemaker_handler_overrides.py
  serve/sagemaker/test_sagemaker_middleware_integration.py
  serve/sagemaker/test_sagemaker_stateful_sessions.py
  serve/sagemaker/test_sagemaker_lora_adapters.py
  rl/state_transitions/test_sleep.py
  anthropic/test_messages.py
  cohere/test_chat_v2.py
  openai/responses
)

setup() {
  mkdir -p "$SUITE" "$RES"
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv --system-site-packages "$VENV"
  fi
  "$VENV/bin/pip" install -q pytest pytest-asyncio pytest-timeout httpx requests openai \
      anthropic jsonschema pybase64 psutil regex fastapi prometheus_client schemathesis \
      tokenizers gguf jinja2 openai-harmony model-hosting-container-standards
  local tgz="$SUITE/vllm-$VLLM_VERSION.tar.gz"
  if [ ! -s "$tgz" ]; then
    # pip finds the sdist but cannot prepare its metadata without torch: take the URL it found.
    local url
    url="$("$VENV/bin/pip" download "vllm==$VLLM_VERSION" --no-deps --no-binary :all: \
        --no-build-isolation -d "$SUITE/pipdl" -vvv 2>&1 |
        grep -oE "https://files.pythonhosted.org/[^ ]*/vllm-$VLLM_VERSION\.tar\.gz" | head -1)" || true
    [ -n "$url" ] || { echo "could not find vllm-$VLLM_VERSION.tar.gz on PyPI" >&2; exit 1; }
    curl -sSfL -o "$tgz" "$url"
  fi
  rm -rf "$TREE"
  mkdir -p "$TREE"
  tar xzf "$tgz" -C "$TREE" --strip-components=1 \
      "vllm-$VLLM_VERSION/tests/__init__.py" "vllm-$VLLM_VERSION/tests/entrypoints" \
      --wildcards "vllm-$VLLM_VERSION/examples/*.jinja"
  cp "$HERE/conftest_tessera.py" "$TREE/conftest.py"
  printf '[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:cacheprovider\n' > "$TREE/pytest.ini"
}

run() {
  mkdir -p "$RES"
  cp "$HERE/conftest_tessera.py" "$TREE/conftest.py"
  local mods=("$@")
  [ ${#mods[@]} -gt 0 ] || mods=("${MODULES[@]}")
  for m in "${mods[@]}"; do
    local name="${m//\//__}"; name="${name%.py}"
    echo "=== $m"
    rm -f "$RES/$name.deselected"
    ( cd "$TREE" && VLLM_SUITE_DESELECTED="$RES/$name.deselected" \
        timeout "${MODULE_TIMEOUT:-900}" "$VENV/bin/python" -m pytest "tests/entrypoints/$m" \
        --timeout "${TEST_TIMEOUT:-300}" -q -rfEs --junitxml "$RES/$name.xml" -o junit_family=xunit2 \
        > "$RES/$name.log" 2>&1; echo "exit $?" >> "$RES/$name.log" ) || true
    tail -n 3 "$RES/$name.log"
  done
}

summary() {
  "$VENV/bin/python" - "$RES" <<'EOF'
import glob, os, sys, xml.etree.ElementTree as ET
res = sys.argv[1]
UNBUILT = "needs an unbuilt feature: "
rows = []
for xml in sorted(glob.glob(os.path.join(res, "*.xml"))):
    name = os.path.basename(xml)[:-4]
    des = os.path.join(res, name + ".deselected")
    ndes = len([l for l in open(des).read().splitlines() if l.strip()]) if os.path.exists(des) else 0
    counts = dict(run=0, passed=0, failed=0, unbuilt=0, skipped=0)
    fails = []
    for tc in ET.parse(xml).getroot().iter("testcase"):
        tid = tc.get("classname", "").split(".")[-1] + "::" + tc.get("name")
        f = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
        s = tc.find("skipped")
        if s is not None:
            msg = s.get("message", "")
            counts["unbuilt" if UNBUILT in msg else "skipped"] += 1
            continue
        counts["run"] += 1
        if f is not None:
            counts["failed"] += 1
            fails.append((tid, (f.get("message") or "").splitlines()[0][:300] if f.get("message") else ""))
        else:
            counts["passed"] += 1
    rows.append((name.replace("__", "/"), counts, ndes, fails))
print("| module | run | passed | failed | unbuilt-skip | other-skip | deselected (no server) |")
print("|---|---|---|---|---|---|---|")
for name, c, nd, _ in rows:
    print(f"| {name} | {c['run']} | {c['passed']} | {c['failed']} | {c['unbuilt']} | {c['skipped']} | {nd} |")
print()
for name, _, _, fails in rows:
    for tid, msg in fails:
        print(f"FAIL {name} {tid}: {msg}")
EOF
}

cmd="${1:-}"; shift || true
case "$cmd" in
  setup) setup ;;
  run) run "$@" ;;
  summary) summary ;;
  all) setup; run "$@"; summary ;;
  *) echo "usage: $0 setup|run [MODULE...]|summary|all" >&2; exit 2 ;;
esac
