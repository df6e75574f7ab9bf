"""The `hs` entry point: ``hs recall`` without loading typer, else the full CLI.

An agent's tool or a person asks `hs recall` often, and most of any `hs`
command's start-up is importing typer; recall's quick path
(histstore.porcelain.recall_cmd) parses the arguments it knows itself and
hands anything else to the CLI (histstore.porcelain.cli), unchanged.
"""

from __future__ import annotations

import sys


def main() -> None:
    if "recall" in sys.argv[1:4]:
        from histstore.porcelain.recall_cmd import quick

        code = quick(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from histstore.porcelain.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
