"""Helpers shared by the tests (imported as `helpers`; tests/ is on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
import typer.testing
from typer.testing import CliRunner

from histstore.porcelain.cli import app

COMMAND = typer.main.get_command(app)
# Building the click command from the typer app is most of an in-process
# invocation; the tests' runner builds it once (typer.testing looks it up
# through this name on every invoke).
typer.testing._get_command = lambda the_app: (
    COMMAND if the_app is app else typer.main.get_command(the_app)
)  # type: ignore[assignment]


class HS:
    """Runs `hs` in-process, as a person would type it."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None) -> Any:
        return self.runner.invoke(
            app, list(args), input=input, catch_exceptions=False, prog_name="hs"
        )

    def json_lines(self, *args: str, input: str | None = None) -> list[Any]:
        r = self(*args, input=input)
        assert r.exit_code == 0, r.stderr
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def turn_record(n: int = 1, **over: Any) -> dict[str, Any]:
    """A valid turn record in the project's own turn JSONL format."""
    rec: dict[str, Any] = {
        "turn_id": f"turn-{n:04d}",
        "session_id": over.pop("session_id", "sess-a"),
        "project": "/home/dev/src/app",
        "asked_at": f"2026-03-{1 + n % 28:02d}T10:{n % 60:02d}:00Z",
        "asked": f"question {n}: how should login_user handle expired tokens?",
        "answered": f"answer {n}: refresh them in the middleware",
        "files": ["src/auth.py"],
        "edited": ["src/middleware.py"],
        "tools": {"Read": 1, "Edit": 1},
        "tainted": False,
    }
    rec.update(over)
    return rec


def write_turns(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path
