"""The `tessera` console script: the CLI binary installed with the package."""

from __future__ import annotations

import os
import sys


def binary() -> str:
    """The installed package's binary; TESSERA_BIN overrides it (a build tree's)."""
    path = os.environ.get("TESSERA_BIN") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "tessera")
    if not os.path.exists(path):
        raise SystemExit(f"tessera: the CLI binary is missing at {path} (reinstall the package)")
    return path


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    os.execv(binary(), ["tessera", *args])
