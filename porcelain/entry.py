"""The ``hs`` executable: the commands asked most often run without loading
typer — the hook command (histstore.porcelain.hook) and ``hs recall``,
``hs log``, ``hs show`` and ``hs status`` (histstore.porcelain.quick), when
every argument is one they know; every other command is the typer app
(histstore.porcelain.cli)."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:  # asked by scripts and tools: no CLI to build
        from histstore import __version__

        print(f"hs (histstore) {__version__}")
        return
    from histstore.porcelain.hook import main_fast

    code = main_fast(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from histstore.porcelain.quick import dispatch

    code = dispatch(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from histstore.porcelain.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
