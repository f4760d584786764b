"""Fixtures of the Python package's tests: one LLM over the default model (SmolLM2-135M-Instruct
Q4_1, on the CPU) shared by a module, and the CLI binary they compare against."""

from __future__ import annotations

import os
import subprocess

import pytest


def default_model() -> str:
    model = os.environ.get("TESSERA_DEFAULT_MODEL")
    if not model:
        source = os.environ.get("TESSERA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
        model = subprocess.run(["bash", os.path.join(source, "scripts", "default_model_path.sh")],
                               capture_output=True, text=True).stdout.strip()
    if not model or not os.path.exists(model):
        pytest.skip("the default model is not installed (make setup)", allow_module_level=True)
    return model


@pytest.fixture(scope="session")
def model_path() -> str:
    return default_model()


@pytest.fixture(scope="session")
def llm(model_path):
    from tessera import LLM
    return LLM(model=model_path, device="cpu", max_model_len=1024, max_num_seqs=16, seed=0)


@pytest.fixture(scope="session")
def tessera_bin() -> str:
    path = os.environ.get("TESSERA_BIN")
    if not path or not os.path.exists(path):
        pytest.skip("TESSERA_BIN is not set to the CLI binary")
    return path
