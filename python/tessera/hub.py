"""Model names of the Hugging Face Hub ("ORG/NAME") as local paths, for LLM(...).

With huggingface_hub installed, its snapshot_download fills the cache (the same layout, the
same files as the engine's own resolver, src/loader/hf_hub.h); without it the engine resolves
the name (`None` from resolve). The environment is read at each call: HF_HUB_CACHE, HF_HOME,
HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN."""

from __future__ import annotations

import glob
import os
import re

_AUX_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
              "special_tokens_map.json", "tokenizer.model")
_PART = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$")
_FILE_SUFFIXES = (".gguf", ".safetensors", ".json", ".model", ".bin", ".jinja", ".pt")


def parse_repo_id(name: str) -> tuple[str, str] | None:
    """(repo, gguf file or "") of a Hub name; None for what reads as a path."""
    if not name or name[0] in "/.~" or "--" in name or ".." in name:
        return None
    parts = name.split("/")
    if len(parts) > 3 or not all(_PART.match(p) for p in parts):
        return None
    if len(parts) == 3:
        return (f"{parts[0]}/{parts[1]}", parts[2]) if parts[2].endswith(".gguf") else None
    if parts[-1].endswith(_FILE_SUFFIXES):
        return None
    return name, ""


def cache_dir(download_dir: str | None = None) -> str:
    if download_dir:
        return download_dir
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _has_tokenizer_file(names) -> bool:
    return "tokenizer.json" in names or "tokenizer.model" in names


def files_to_fetch(repo_files: list[str], repo: str, file: str, tokenizer_only: bool) -> list[str]:
    """The files the engine loads, as the engine picks them (hf_hub.h's files_to_fetch)."""
    top = [f for f in repo_files if "/" not in f]
    aux = [f for f in top if f in _AUX_FILES]
    if tokenizer_only and not file and _has_tokenizer_file(top):
        return aux
    if file:
        if file not in top:
            raise ValueError(f"{repo} has no file {file}")
        return aux + [file]
    safetensors = [f for f in top if f.endswith(".safetensors")]
    if safetensors:
        return aux + safetensors + [f for f in top if f == "model.safetensors.index.json"]
    gguf = [f for f in top if f.endswith(".gguf")]
    if len(gguf) == 1:
        return aux + gguf
    if gguf:
        raise ValueError(f"{repo} holds {len(gguf)} GGUF files ({', '.join(gguf[:4])}): name one as {repo}/FILE.gguf")
    raise ValueError(f"{repo} has no .safetensors or .gguf weights (the formats Tessera loads)")


def path_in_snapshot(snapshot: str, repo: str, file: str, tokenizer_only: bool) -> str:
    names = sorted(n for n in os.listdir(snapshot) if os.path.isfile(os.path.join(snapshot, n)))
    if tokenizer_only and not file and _has_tokenizer_file(names):
        return snapshot
    if file:
        if file not in names:
            raise ValueError(f"{repo}: {file} is not in the cached snapshot {snapshot}")
        return os.path.join(snapshot, file)
    if any(n.endswith(".safetensors") for n in names):
        return snapshot
    gguf = [n for n in names if n.endswith(".gguf")]
    if len(gguf) == 1:
        return os.path.join(snapshot, gguf[0])
    if gguf:
        raise ValueError(f"{repo}: the cached snapshot holds several GGUF files: name one as {repo}/FILE.gguf")
    raise ValueError(f"{repo}: the cached snapshot {snapshot} has no weights")


def resolve(name: str, revision: str | None, download_dir: str | None, tokenizer_only: bool) -> str | None:
    """A local path for `name` (as it is when it exists or is no Hub name); None when the
    engine is to resolve it (huggingface_hub is not installed)."""
    if not name or os.path.exists(name):
        return name
    ref = parse_repo_id(name)
    if ref is None:
        return name
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        return None
    repo, file = ref
    try:
        snapshot = _snapshot(repo, file, revision or "main", cache_dir(download_dir), tokenizer_only)
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    except Exception as e:  # huggingface_hub's errors, told in one line
        raise ValueError(f"{name}: {_describe(e, repo, revision or 'main')}") from None
    try:
        return path_in_snapshot(snapshot, repo, file, tokenizer_only)
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


def _snapshot(repo: str, file: str, revision: str, cache: str, tokenizer_only: bool) -> str:
    from huggingface_hub import HfApi, snapshot_download

    token = os.environ.get("HF_TOKEN") or None
    if _offline():
        return snapshot_download(repo, revision=revision, cache_dir=cache, local_files_only=True)
    info = HfApi(endpoint=_endpoint(), token=token).model_info(repo, revision=revision)
    files = files_to_fetch([s.rfilename for s in info.siblings or []], repo, file, tokenizer_only)
    return snapshot_download(repo, revision=revision, cache_dir=cache, endpoint=_endpoint(), token=token,
                             allow_patterns=[glob.escape(f) for f in files])


def _describe(e: Exception, repo: str, revision: str) -> str:
    from huggingface_hub import errors

    page = f"{_endpoint()}/{repo}"
    if isinstance(e, errors.GatedRepoError):
        return f"the model is gated: it needs a token (HF_TOKEN) of an account granted access at {page}"
    if isinstance(e, errors.RevisionNotFoundError):
        return f"no revision '{revision}' of the model on the Hub ({page})"
    if isinstance(e, errors.LocalEntryNotFoundError) and _offline():
        return (f"not a local path, and not in the Hugging Face cache (revision {revision}); "
                "HF_HUB_OFFLINE is set, so nothing is downloaded")
    status = getattr(getattr(e, "response", None), "status_code", None)
    if status == 401 or (isinstance(e, errors.RepositoryNotFoundError) and status != 404):
        return ("the Hub refuses access (HTTP 401): the model is private, gated or does not exist; "
                "set HF_TOKEN to a token with access")
    if status == 403:
        return f"no access to the model (HTTP 403: gated or private): request access at {page}"
    if isinstance(e, errors.RepositoryNotFoundError) or status == 404:
        return f"no such model on the Hugging Face Hub ({_endpoint()})"
    if status is not None:
        return f"the Hub answered HTTP {status}"
    first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return f"not a local path, and the Hugging Face Hub is unreachable: {first_line}"
