"""What a person's terminal gets: colour, the pager, and times in the local zone.

One place decides, for every command (docs/cli.md, "Terminal output"):

* **Colour**: ``--color always`` forces it, ``--color never`` or ``NO_COLOR``
  (set and not empty) turns it off; by default (``auto``) it is on when stdout
  is a terminal whose ``TERM`` is not ``dumb``. Only the SGR codes of
  :data:`STYLES` are written, each around a piece of text already made
  visible (:func:`histstore.display.visible`): an escape sequence in stored
  text is shown as ``^[[…``, never passed on. Stderr is never coloured.
* **The pager**: the human output of the commands in :data:`PAGED` goes
  through ``$HS_PAGER``, else ``$PAGER``, else ``less -FRX`` (``LESS=FRX`` is
  set when ``LESS`` is not, as git does), when stdout is a terminal and
  neither ``--no-pager`` nor ``-P`` is given; an empty pager or ``cat`` means
  none. It starts with the first line a command prints, so an error before
  any output stays one line on the terminal. When the pager quits before the
  end (``q`` in less), the rest is dropped and the command's exit code stands.
* **Times** are stored in UTC (RFC 3339) and shown in the local zone (``TZ``;
  ``TZ=UTC`` shows UTC); ``--json`` keeps them as stored.

No typer here (only the standard library and histstore.display), so a
command's quick path can print through it as the full CLI does.
"""

from __future__ import annotations

import io
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from histstore.display import visible

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

#: the commands whose human output is paged (as git pages log, show, diff)
PAGED = frozenset(
    {
        "log",
        "show",
        "recall",
        "ops",
        "forgotten",
        "memory log",
        "memory show",
        "memory diff",
        "memory prompt",
        "memory scan",
    }
)

#: what each kind of piece is painted with (SGR parameters)
STYLES = {
    "id": "33",  # yellow, as git shows a commit id
    "date": "34",
    "project": "36",
    "agent": "35",
    "match": "1;31",  # as grep and ripgrep show a match
    "add": "32",
    "del": "31",
    "hunk": "36",
    "head": "1",
}
COLOR_CHOICES = ("auto", "always", "never")
DEFAULT_PAGER = "less -FRX"


# ---------------------------------------------------------------- styled text


class Text:
    """A line (or lines) of a human view: pieces of text, some with a style.

    ``"a " + paint(x, "id")`` is a Text; :func:`say` makes each piece visible,
    then paints it when colour is on."""

    __slots__ = ("pieces",)

    def __init__(self, *parts: str | Text | tuple[str, str | None]) -> None:
        self.pieces: list[tuple[str, str | None]] = []
        for p in parts:
            self._add(p)

    def _add(self, part: str | Text | tuple[str, str | None]) -> None:
        if isinstance(part, Text):
            self.pieces.extend(part.pieces)
        elif isinstance(part, tuple):
            if part[0]:
                self.pieces.append(part)
        elif part:
            self.pieces.append((part, None))

    def __add__(self, other: str | Text) -> Text:
        return Text(self, other)

    def __radd__(self, other: str) -> Text:
        return Text(other, self)

    def __str__(self) -> str:
        return "".join(t for t, _ in self.pieces)

    def __len__(self) -> int:
        return sum(len(t) for t, _ in self.pieces)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Text) and self.pieces == other.pieces

    __hash__ = None  # type: ignore[assignment]


def paint(text: object, style: str) -> Text:
    """``text`` to be shown in ``style`` (a key of :data:`STYLES`)."""
    assert style in STYLES, style
    return Text((str(text), style))


def join(parts: list[Text | str], sep: str) -> Text:
    out = Text()
    for i, p in enumerate(parts):
        if i:
            out = out + sep
        out = out + p
    return out


def rendered(text: str | Text, colour: bool, *, lines: bool = True) -> str:
    """The characters a terminal gets for ``text``: every piece made visible,
    then (with ``colour``) wrapped in its style's SGR codes."""
    pieces = text.pieces if isinstance(text, Text) else [(text, None)]
    out = []
    for t, style in pieces:
        shown = visible(t, lines=lines)
        if colour and style is not None and shown:
            out.append(f"\x1b[{STYLES[style]}m{shown}\x1b[0m")
        else:
            out.append(shown)
    return "".join(out)


# --------------------------------------------------------- matched terms


def highlight_phrases(
    text: str | Text,
    phrases: list[list[str]],
    token_spans: Callable[[str], list[tuple[int, int, str]]],
) -> Text:
    """``text`` with every run of tokens equal to one of ``phrases`` painted
    ``match``: ``token_spans`` gives a text's tokens with their places, as
    recall's index makes them (case and accents folded: ``login user`` marks
    ``login_user``, ``Login-User``), and the phrases are of those tokens; the
    separators between a phrase's tokens are marked too."""
    wanted = [p for p in phrases if p]
    if not wanted:
        return text if isinstance(text, Text) else Text(text)

    def spans(s: str) -> list[tuple[int, int]]:
        toks = token_spans(s)
        out: list[tuple[int, int]] = []
        i = 0
        while i < len(toks):
            best = 0
            for p in wanted:
                n = len(p)
                if n > best and [t[2] for t in toks[i : i + n]] == p:
                    best = n
            if best:
                out.append((toks[i][0], toks[i + best - 1][1]))
                i += best
            else:
                i += 1
        return out

    return _mark(text, spans)


def highlight_text(text: str | Text, needle: str) -> Text:
    """``text`` with every occurrence of ``needle`` (ignoring case) painted ``match``."""
    if not needle:
        return text if isinstance(text, Text) else Text(text)
    import re

    pattern = re.compile(re.escape(needle), re.IGNORECASE)
    return _mark(text, lambda s: [m.span() for m in pattern.finditer(s) if m.end() > m.start()])


def _mark(text: str | Text, spans: object) -> Text:
    assert callable(spans)
    pieces = text.pieces if isinstance(text, Text) else [(text, None)]
    out = Text()
    for t, style in pieces:
        if style is not None:  # already painted (an id, a date): left as it is
            out = out + Text((t, style))
            continue
        at = 0
        for a, b in spans(t):
            out = out + t[at:a] + Text((t[a:b], "match"))
            at = b
        out = out + t[at:]
    return out


# ------------------------------------------------------------------ times


def local_time(ts: str | None, *, seconds: bool = False, zone: bool = True) -> str:
    """A stored UTC time as a person reads it here: ``2026-01-02 04:04 CET``
    (the local zone, ``TZ``); with ``seconds``, ``04:04:05``; ``-`` for none.
    Text that is no time is given back as it is."""
    if not ts:
        return "-"
    try:
        t = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    try:
        t = t.astimezone()
    except (OverflowError, OSError, ValueError):  # out of the platform's range
        t = t.astimezone(UTC)
    shown = t.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    if zone:
        shown += " " + (t.tzname() or t.strftime("%z"))
    return shown


def local_date(ts: str | None) -> str:
    """The local date of a stored time: ``2026-01-02``."""
    return local_time(ts, zone=False)[:10]


# ------------------------------------------------------ colour and the pager


# (plain classes, not dataclasses: every command imports this module, and a
# dataclass costs ~0.4 ms of its start-up to create; nothing compares these)


class _Pager:
    """The pager a view's output goes to, and the descriptors it replaced."""

    def __init__(self, proc: subprocess.Popen[bytes], saved_out: int, saved_err: int | None):
        self.proc = proc
        self.saved_out = saved_out
        self.saved_err = saved_err


class _State:
    """What the command line decided for this process's terminal output."""

    def __init__(self) -> None:
        self.color = "auto"
        self.no_pager = False
        self.command = ""
        self.colour: bool | None = None  # decided at the first line printed
        self.pager: _Pager | None = None
        self.tried_pager = False


_state = _State()


def start() -> None:
    """A new command line: nothing decided yet."""
    finish()
    global _state
    _state = _State()


def set_options(*, color: str | None = None, no_pager: bool | None = None) -> None:
    """``--color`` and ``--no-pager`` as given, before the command (``hs -P
    log``) or after it (``hs log --color never``)."""
    if color is not None:
        check_color(color)
        _state.color = color
        _state.colour = None
    if no_pager:
        _state.no_pager = True


def set_command(path: str) -> None:
    """The command being run, as ``log`` or ``memory diff`` (whether it pages)."""
    _state.command = path


def command() -> str:
    """The command being run (``memory diff``), or "" before it is known."""
    return _state.command


def check_color(value: str) -> str:
    if value not in COLOR_CHOICES:
        from histstore.errors import BadInput

        raise BadInput(f"--color {value!r}: give auto, always or never")
    return value


def colour() -> bool:
    """Whether stdout gets colour (decided once per command, before any pager)."""
    if _state.colour is None:
        _state.colour = _decide_colour(_state.color, sys.stdout)
    return _state.colour


def _decide_colour(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    return _isatty(stream)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def pager_command(environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """The pager to run, or None: ``$HS_PAGER``, else ``$PAGER``, else
    ``less -FRX`` when less is installed; an empty one or ``cat`` is none."""
    env = os.environ if environ is None else environ
    for name in ("HS_PAGER", "PAGER"):
        if name in env:
            cmd = env[name].strip()
            return None if cmd in ("", "cat") else cmd
    import shutil

    return DEFAULT_PAGER if shutil.which("less") else None


def _wants_pager() -> bool:
    return (
        _state.command in PAGED
        and not _state.no_pager
        and _isatty(sys.stdout)
        and os.environ.get("TERM") != "dumb"
    )


def _start_pager() -> None:
    _state.tried_pager = True
    cmd = pager_command()
    if cmd is None:
        return
    import subprocess

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        return  # no shell to run it: print as without a pager
    assert proc.stdin is not None
    out_fd = sys.stdout.fileno()
    saved_out = os.dup(out_fd)
    os.dup2(proc.stdin.fileno(), out_fd)
    saved_err = None
    if os.isatty(2):  # as git does: what goes to the terminal goes to the pager
        saved_err = os.dup(2)
        os.dup2(proc.stdin.fileno(), 2)
    proc.stdin.close()
    _line_buffering(False)
    _state.pager = _Pager(proc, saved_out, saved_err)


def stdout() -> TextIO:
    """The stream a human view prints to: stdout, through the pager when the
    command pages (started at the first use)."""
    if not _state.tried_pager and _state.pager is None:
        colour()  # decided on the terminal, before the pager takes stdout
        if _wants_pager():
            _start_pager()
        else:
            _state.tried_pager = True
    return sys.stdout


def finish() -> None:
    """The command is done: the rest of its output to the pager, the terminal
    given back, and wait for the pager to be quit (Ctrl-C meanwhile goes to the
    pager, as in git)."""
    p = _state.pager
    if p is None:
        return
    _state.pager = None
    out_fd = sys.stdout.fileno()
    try:
        sys.stdout.flush()
    except OSError:  # the pager was quit: what is left goes nowhere
        drop_stdout()
    with _suppress():
        sys.stderr.flush()
    os.dup2(p.saved_out, out_fd)
    os.close(p.saved_out)
    if p.saved_err is not None:
        os.dup2(p.saved_err, 2)
        os.close(p.saved_err)
    _line_buffering(True)
    import signal

    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        old = None
    try:
        p.proc.wait()
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def _line_buffering(on: bool) -> None:
    """Whole blocks to a pager (fewer writes), lines to a terminal."""
    stream = sys.stdout
    if isinstance(stream, io.TextIOWrapper):
        with _suppress():
            stream.reconfigure(line_buffering=on)


def drop_stdout() -> None:
    """The reader of stdout went away (a pager quit, ``hs log | head``): what
    is still buffered, and whatever is printed after, goes to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    with _suppress():
        sys.stdout.flush()


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, (OSError, ValueError))


# ------------------------------------------------------------------ printing


def say(text: str | Text = "", *, err: bool = False, nl: bool = True, lines: bool = True) -> None:
    """Print one piece of a human view: control characters made visible, in
    colour on a terminal, through the pager when the command pages."""
    end = "\n" if nl else ""
    if err:
        with _suppress():
            sys.stdout.flush()  # what came before stays before
        _write(sys.stderr, rendered(text, False, lines=lines) + end)
        return
    stream = stdout()
    _write(stream, rendered(text, colour(), lines=lines) + end)


def _write(stream: TextIO, s: str) -> None:
    try:
        stream.write(s)
    except UnicodeEncodeError:
        stream.flush()
        stream.buffer.write(s.encode(stream.encoding or "utf-8", "replace"))
    if stream is sys.stderr:
        stream.flush()
