"""LLM("ORG/NAME"): model names through huggingface_hub's snapshot_download (when installed) and
through the engine's own resolver (when it is not), against a stand-in Hub on 127.0.0.1
(tests/e2e/hub_stand_in.py) serving stories260K; the reference is LLM over the local GGUF."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import hub_stand_in as hs  # noqa: E402

from tessera import LLM, SamplingParams  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "stories260K")
GGUF = os.path.join(DATA, "stories260K-f32.gguf")
PROMPT = "Once upon a time"
GREEDY = SamplingParams(max_tokens=4, temperature=0)
ARGS = dict(device="cpu", max_model_len=256, max_num_seqs=4)


@pytest.fixture(scope="module")
def hub():
    gguf = hs.read(GGUF)
    server = hs.HubStandIn({
        "org/tiny": hs.Repo({"main": {"stories260K-f32.gguf": gguf, "README.md": b"# tiny\n",
                                      "pytorch_model.bin": b"x" * 100},
                             "v1": {"stories260K-f32.gguf": gguf}}),
        "org/gated": hs.Repo({"main": {"stories260K-f32.gguf": gguf}}, gated=True),
    }).start()
    yield server
    server.stop()


@pytest.fixture
def hub_env(hub, tmp_path, monkeypatch):
    for k in ("HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    return tmp_path / "hub"


@pytest.fixture(scope="module")
def local_tokens():
    return LLM(GGUF, **ARGS).generate(PROMPT, GREEDY, use_tqdm=False)[0].outputs[0].token_ids


def tokens(llm):
    return llm.generate(PROMPT, GREEDY, use_tqdm=False)[0].outputs[0].token_ids


def snapshot_files(cache, revision="main"):
    folder = cache / "models--org--tiny"
    sha = (folder / "refs" / revision).read_text().strip()
    return sha, sorted(os.listdir(folder / "snapshots" / sha))


def test_name_through_huggingface_hub(hub, hub_env, local_tokens):
    pytest.importorskip("huggingface_hub")
    before = hub.count()
    assert tokens(LLM("org/tiny", **ARGS)) == local_tokens
    sha, files = snapshot_files(hub_env)
    assert sha == hub.repos["org/tiny"].branches["main"].sha
    assert files == ["stories260K-f32.gguf"]
    # snapshot_download lists the tree (the engine's resolver does not): it did the work.
    assert any("/tree/" in p for _, p, _ in hub.since(before))
    assert tokens(LLM("org/tiny", revision="v1", **ARGS)) == local_tokens
    assert snapshot_files(hub_env, "v1")[0] == hub.repos["org/tiny"].branches["v1"].sha


def test_name_through_the_engine_without_huggingface_hub(hub, hub_env, local_tokens, monkeypatch):
    real = sys.modules.get("huggingface_hub")
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    before = hub.count()
    assert tokens(LLM("org/tiny", **ARGS)) == local_tokens
    assert snapshot_files(hub_env) == (hub.repos["org/tiny"].branches["main"].sha, ["stories260K-f32.gguf"])
    assert not any("/tree/" in p for _, p, _ in hub.since(before))
    # The cache the engine wrote serves huggingface_hub's reader too, offline.
    if real is None:
        monkeypatch.delitem(sys.modules, "huggingface_hub")
        pytest.importorskip("huggingface_hub")
    else:
        monkeypatch.setitem(sys.modules, "huggingface_hub", real)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = hub.count()
    assert tokens(LLM("org/tiny", **ARGS)) == local_tokens
    assert hub.count() == before


@pytest.mark.parametrize("with_hf_hub", [True, False])
def test_errors_name_the_model(hub, hub_env, monkeypatch, with_hf_hub):
    if with_hf_hub:
        pytest.importorskip("huggingface_hub")
    else:
        monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ValueError, match=r"org/missing: .*no such model"):
        LLM("org/missing", **ARGS)
    with pytest.raises(ValueError, match=r"org/gated: .*gated.*token"):
        LLM("org/gated", **ARGS)
    with pytest.raises(ValueError, match=r"org/tiny: .*no revision 'nope'"):
        LLM("org/tiny", revision="nope", **ARGS)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = hub.count()
    with pytest.raises(ValueError, match=r"org/tiny: .*HF_HUB_OFFLINE"):
        LLM("org/tiny", **ARGS)
    assert hub.count() == before
