"""`python -m tessera.entrypoints.openai.api_server --model M [vLLM's serve flags]`: vLLM's
server module, running `tessera serve` with the same arguments (docs/server.md lists them)."""

from __future__ import annotations

import sys

from tessera.cli import main as cli_main


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    cli_main(["serve", *args])


if __name__ == "__main__":
    main()
