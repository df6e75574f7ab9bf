"""Running `hs` as a person does, on a pseudo-terminal (imported as `ptytools`).

:func:`views` runs several commands in one process whose stdout and stderr
are a pseudo-terminal (so start-up is paid once), each with its own
environment; :func:`prompt_then_ctrl_c` runs one command with stdin a
terminal too, and interrupts it once it asks. Nothing here sleeps: each read
waits for what the command writes, or for the terminal to close."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DRIVER = """
import json, os, sys, time
import typer
from histstore.porcelain.cli import app
command = typer.main.get_command(app)
base = dict(os.environ)
for i, (env, args) in enumerate(json.loads(sys.argv[1])):
    os.environ.clear()
    os.environ.update(base)
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    time.tzset()
    sys.stdout.write(f"\\n=== view {i}\\n")
    sys.stdout.flush()
    try:
        command.main(args, prog_name="hs")
        rc = 0
    except SystemExit as e:
        rc = e.code
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(f"\\n=== exit {rc or 0}\\n")
    sys.stdout.flush()
"""


def raw_output(fd: int) -> None:
    """Output post-processing off: a CR the test sees is one the command wrote."""
    attrs = termios.tcgetattr(fd)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


def read_all(master: int) -> bytes:
    """Everything the terminal gets until every writer has closed it."""
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TERM", "xterm-256color")
    if env["TERM"] == "dumb":
        env["TERM"] = "xterm-256color"
    env.update(extra or {})
    return env


def views(
    runs: list[tuple[dict[str, str | None], list[str]]], cwd: Path = ROOT
) -> list[tuple[str, int]]:
    """Each run's output (stdout and stderr as the terminal got them, decoded)
    and exit code; each run's environment is the test's, changed by its own
    dict (a value None unsets the variable)."""
    master, slave = pty.openpty()
    raw_output(slave)
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(runs)],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=_env(),
    )
    os.close(slave)
    out = read_all(master)
    os.close(master)
    assert proc.wait(timeout=120) == 0, out[-2000:]
    parts = re.split(rb"\n=== view \d+\n", out)[1:]
    assert len(parts) == len(runs), out[-2000:]
    result = []
    for part in parts:
        body, _, rc = part.rpartition(b"\n=== exit ")
        result.append((body.decode("utf-8"), int(rc.strip())))
    return result


def _wait_until_reading(pid: int) -> None:
    """Until the process sleeps (in the read of the answer: it has written the
    question and does nothing else). A signal sent before the read starts would
    be taken before it, and the read would then wait for a key that never
    comes; a person's Ctrl-C always comes while it waits."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return  # no /proc: the question was written, the read follows at once
    while True:
        try:
            state = stat.read_text().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            return
        if state in "SZX":  # asleep, or gone (then the assertions say why)
            return
        os.sched_yield()


def ctrl_c_as_on_a_terminal() -> None:
    """In a child: SIGINT does what it does at a person's terminal. A suite
    started in the background by a shell (``pytest &``) ignores SIGINT, and
    its children would inherit that and never see the Ctrl-C sent them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def prompt_then_ctrl_c(
    args: list[str], until: bytes, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> tuple[str, int]:
    """Run ``hs ARGS`` with stdin, stdout and stderr a terminal; once it has
    written ``until`` (its question), interrupt it as Ctrl-C does (SIGINT).
    What the terminal got, and the exit code."""
    master, slave = pty.openpty()
    raw_output(slave)
    proc = subprocess.Popen(
        [sys.executable, "-m", "histstore.porcelain.entry", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=_env(env),
        preexec_fn=ctrl_c_as_on_a_terminal,
    )
    os.close(slave)
    seen = bytearray()
    until += b" "  # the space input() writes just before it reads
    while until not in seen:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            chunk = b""
        assert chunk, f"hs ended before asking: {bytes(seen)!r}"
        seen += chunk
    _wait_until_reading(proc.pid)
    proc.send_signal(signal.SIGINT)
    seen += read_all(master)
    os.close(master)
    return bytes(seen).decode("utf-8"), proc.wait(timeout=60)
