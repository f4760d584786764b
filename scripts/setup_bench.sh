#!/usr/bin/env bash
# Bench-only dependency: llama.cpp through llama-cpp-python (builds llama.cpp from source,
# native CPU flags) in its own venv, so nothing of it reaches the build or CI.
set -euo pipefail
VENV=${BENCH_VENV:-/opt/benchenv}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import llama_cpp' 2>/dev/null; then
  exit 0
fi
echo "setup_bench: building llama-cpp-python into $VENV (takes several minutes)"
python3 -m venv "$VENV"
CMAKE_ARGS="-DGGML_NATIVE=ON" "$VENV/bin/pip" install -q llama-cpp-python
