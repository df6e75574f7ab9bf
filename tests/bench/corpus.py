"""Seeded, deterministic synthetic corpus of agent history for the benchmarks.

Three formats, generated from one shared plan so that, for the same seed and size,
they describe the same history (same sessions, turn ids, prompts, answers, files):

* :func:`write_turns_jsonl` -- the project's own turn JSONL (one turn per line);
* :func:`write_claude_projects` -- Claude Code session files,
  ``root/<slug>/<sessionId>.jsonl`` (the layout Claude Code writes);
* :func:`write_codex_sessions` -- Codex CLI rollouts (the 0.12x generation),
  ``root/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``, or all of it as one
  rollout.

Everything comes from ``random.Random(seed)`` and a fixed end date
(:data:`END`), so the output is byte-identical for a given seed and size. Both
writers stream to disk: only the session being written is held in memory.

Text is drawn from a fixed vocabulary (English function words, technical words,
a few thousand pseudo-words with a Zipf-like distribution, code identifiers)
plus three kinds of planted terms for recall benchmarks:

* :data:`RARE_TERMS` -- each planted in exactly :func:`rare_count` turns
  (~0.01 %, at least one); :attr:`Stats.rare` lists the turn ids;
* :data:`COMMON_TERMS` -- each planted in a turn with probability
  :data:`COMMON_RATES` (12-35 %); :attr:`Stats.common` counts the turns;
* identifiers (``parse_config``, ``LoginHandler``) and project file paths.

Planted terms occur nowhere else (not even as a substring of another word), so
``rg -i TERM`` over the output matches exactly the planted turns' lines.

Usage as a script::

    python tests/bench/corpus.py --format turns|claude|codex --turns N --seed S OUT
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from pathlib import Path
from random import Random
from typing import Any

END = datetime(2026, 11, 1, tzinfo=UTC)
SPAN_DAYS = 120
START = END - timedelta(days=SPAN_DAYS)
_END_MS = int(END.timestamp() * 1000)
_START_MS = int(START.timestamp() * 1000)
_DAY_MS = 86_400_000

RARE_RATE = 0.0001
RARE_TERMS: tuple[str, ...] = (
    "zephyrquartz",
    "quillobsidian",
    "vortexmarzipan",
    "jubilantkrypton",
    "fjordwhistle",
    "oxbowzirconia",
    "glyphpernickety",
    "mistralquokka",
)
COMMON_RATES: dict[str, float] = {
    "regression": 0.35,
    "deadlock": 0.20,
    "throughput": 0.15,
    "segfault": 0.12,
}
COMMON_TERMS: tuple[str, ...] = tuple(COMMON_RATES)
#: planted (with ``steps``) in the output of a failing command only, as an
#: exception name is: found only by searching tool outputs
STEP_TERMS: tuple[str, ...] = ("QuasarWithException", "nimbusgroundswell")

AGENT = "hs"
MODELS = (
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-1-20250805",
    "claude-sonnet-4-20250514",
    "claude-haiku-4-5-20251001",
)
_MODEL_WEIGHTS = (60, 20, 15, 5)
VERSIONS = ("1.0.128", "2.0.37", "2.0.76", "2.1.114")


def _wordlist(text: str) -> list[str]:
    return text.split()


FUNCTION_WORDS = _wordlist(
    "the to of and a in is it that for this we on with be as not if you can but are "
    "or so from by at should will when then an i have was there which what all one "
    "now just also into only more each after before because than here do does would "
    "could it's let's me my our they them its no yes how why where about over under "
    "again still other same new some any"
)
TECH_WORDS = _wordlist(
    "function test error file module import return value type class method call "
    "string list dict key index path line config option flag argument result output "
    "input user session request response handler server client query table column "
    "row record field parser token buffer stream queue worker thread lock timeout "
    "retry commit branch merge diff patch build release version package dependency "
    "install script command shell log trace stack exception warning debug cache "
    "schema migration database index hash blob store object tree ref"
)
VERBS = _wordlist(
    "get set load save parse build make read write open close init start stop run "
    "check validate render format update delete create fetch send handle resolve "
    "apply merge split compute encode decode login logout sync flush reset"
)
NOUNS = _wordlist(
    "user config path file session token request response item record entry node "
    "tree blob commit branch index cache schema table row column query result "
    "handler client server store object hash event message payload header body "
    "options settings context state buffer stream worker job task"
)
_SYLLABLES = _wordlist(
    "ka ro mi tu ne sa lo vi de pa ri mo zu te lan dor bek sil mur fen gar tol pim "
    "rus val nok der sin tra ple bro cle dri flo gri qua shu vel wim yar"
)
_CODE_EXT = {"py": "python", "ts": "typescript", "go": "go"}
_TABLE_BITS = 16
_TABLE_SIZE = 1 << _TABLE_BITS
_BIG_ENDIAN = sys.byteorder == "big"


# ---------------------------------------------------------------------------
# Vocabulary: fixed (independent of the corpus seed), built once.


def _reserved(word: str) -> bool:
    """True when a word contains a planted term (it would make the term match)."""
    low = word.lower()
    return any(t in low for t in RARE_TERMS) or any(t in low for t in COMMON_TERMS)


def _zipf_slots(words: list[str], n_slots: int, s: float) -> list[str]:
    weights = [1.0 / (r + 1) ** s for r in range(len(words))]
    total = sum(weights)
    out: list[str] = []
    for w, weight in zip(words, weights, strict=True):
        out.extend([w] * max(1, round(weight / total * n_slots)))
    return out


@dataclass(frozen=True)
class _Vocab:
    table: tuple[str, ...]  # _TABLE_SIZE tokens, Zipf-weighted, some with punctuation
    pseudo: tuple[str, ...]
    idents: tuple[str, ...]
    classes: tuple[str, ...]


def _build_vocab() -> _Vocab:
    rng = Random(0x5EED)
    pseudo_set: dict[str, None] = {}
    while len(pseudo_set) < 3000:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 3, 4))))
        if not _reserved(w) and w not in FUNCTION_WORDS and w not in TECH_WORDS:
            pseudo_set[w] = None
    pseudo = list(pseudo_set)
    idents = [f"{v}_{n}" for v in VERBS for n in NOUNS if not _reserved(f"{v}_{n}")]
    rng.shuffle(idents)
    classes = [
        f"{n.capitalize()}{m.capitalize()}"
        for n in NOUNS
        for m in ("handler", "manager", "store", "parser", "client", "error", "config")
        if n != m
    ]
    rng.shuffle(classes)
    ident_tokens = [f"`{i}`" if k % 2 else i for k, i in enumerate(idents[:400])]
    ident_tokens += classes[:100]
    slots: list[str] = []
    slots += _zipf_slots(FUNCTION_WORDS, int(_TABLE_SIZE * 0.40), 0.9)
    slots += _zipf_slots(TECH_WORDS, int(_TABLE_SIZE * 0.13), 0.8)
    slots += _zipf_slots(pseudo, int(_TABLE_SIZE * 0.39), 1.05)
    slots += _zipf_slots(ident_tokens, int(_TABLE_SIZE * 0.08), 0.7)
    rng.shuffle(slots)
    slots = (slots + FUNCTION_WORDS * (_TABLE_SIZE // len(FUNCTION_WORDS) + 1))[:_TABLE_SIZE]
    table: list[str] = []
    for w in slots:
        r = rng.random()
        table.append(w + "," if r < 0.06 else w + "." if r < 0.12 else w)
    return _Vocab(tuple(table), tuple(pseudo), tuple(idents), tuple(classes))


_VOCAB = _build_vocab()


def _words(rng: Random, k: int) -> str:
    """k words drawn from the Zipf table (C-speed: one randbytes, one itemgetter)."""
    k = max(2, k)
    idx = array("H")
    idx.frombytes(rng.randbytes(2 * k))
    if _BIG_ENDIAN:
        idx.byteswap()
    words: tuple[str, ...] = itemgetter(*idx)(_VOCAB.table)
    return " ".join(words)


def _length(rng: Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return min(hi, max(lo, int(rng.lognormvariate(0.0, sigma) * median)))


def _plant(rng: Random, text: str, term: str) -> str:
    """Insert ``term`` as a separate word at a random word boundary."""
    i = text.find(" ", rng.randrange(len(text))) if text else -1
    if i < 0:
        return f"{text} {term}" if text else term
    return f"{text[:i]} {term}{text[i:]}"


def _uuid(rng: Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def _b62(rng: Random, n: int) -> str:
    raw = base64.b64encode(rng.randbytes((n * 3 + 3) // 4 + 3), b"Qz").decode()
    return raw[:n]


_DAY_PREFIX: dict[int, str] = {}


def fmt_ms(ms: int) -> str:
    """Milliseconds since the epoch as ``2026-01-02T03:04:05.678Z``."""
    day, rest = divmod(ms, _DAY_MS)
    prefix = _DAY_PREFIX.get(day)
    if prefix is None:
        prefix = datetime.fromtimestamp(day * 86400, UTC).strftime("%Y-%m-%dT")
        _DAY_PREFIX[day] = prefix
    secs, milli = divmod(rest, 1000)
    mins, s = divmod(secs, 60)
    h, m = divmod(mins, 60)
    return f"{prefix}{h:02d}:{m:02d}:{s:02d}.{milli:03d}Z"


def rare_count(n_turns: int) -> int:
    """How many turns each rare term is planted in (~0.01 %, at least one)."""
    return max(1, round(n_turns * RARE_RATE))


# ---------------------------------------------------------------------------
# The plan: sessions and turns, shared by both formats.


@dataclass(slots=True)
class _Project:
    cwd: str
    lang: str
    files: list[str]  # paths relative to cwd, hottest first
    cum: list[float]  # cumulative Zipf weights over files


@dataclass(slots=True)
class _Call:
    name: str
    path: str = ""  # absolute path for Read/Edit
    error: bool = False  # Bash only: the command failed
    rejected: bool = False  # the person refused the call (interrupted turn)


@dataclass(slots=True)
class _Turn:
    turn_id: str
    asked_at: int  # ms since epoch
    duration: int  # ms; every record of the turn lies in [asked_at, asked_at + duration]
    asked: str
    answered: str
    calls: list[_Call]
    status: str
    tainted: bool
    model: str
    terms: list[str]  # the rare and common terms planted in asked or answered


@dataclass(slots=True)
class _Session:
    session_id: str
    project: _Project
    model: str
    version: str
    branch: str
    title: str | None
    turns: list[_Turn]


def _make_projects(rng: Random, n: int) -> list[_Project]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        a = rng.choice(_VOCAB.pseudo[:400])
        name = a if rng.random() < 0.5 else f"{a}-{rng.choice(NOUNS)}"
        if name in seen:
            name = f"{name}{len(names)}"
        seen.add(name)
        names.append(name)
    projects: list[_Project] = []
    for name in names:
        ext = rng.choice(("py", "py", "ts", "go"))
        pkg = name.replace("-", "_")
        dirs = [f"src/{pkg}", f"src/{pkg}/{rng.choice(NOUNS)}", "tests", "scripts", "docs"]
        files: dict[str, None] = {"README.md": None}
        for _ in range(rng.randint(25, 80)):
            d = rng.choice(dirs)
            stem = rng.choice(NOUNS) if rng.random() < 0.6 else rng.choice(_VOCAB.idents)
            if d == "tests":
                stem = f"test_{stem}"
            files[f"{d}/{stem}.{'md' if d == 'docs' else ext}"] = None
        rel = list(files)
        rng.shuffle(rel)
        cum: list[float] = []
        acc = 0.0
        for r in range(len(rel)):
            acc += 1.0 / (r + 1) ** 1.1
            cum.append(acc)
        projects.append(_Project(f"/home/dev/src/{name}", ext, rel, cum))
    return projects


_OPENERS = (
    "Can you",
    "Please",
    "Why does",
    "Fix",
    "Add",
    "Look at",
    "I think",
    "Refactor",
    "Explain",
    "The test for",
    "Now",
    "OK,",
)
_UNTRUSTED = ("WebFetch", "WebFetch", "WebSearch", "mcp__github__get_issue")


def _plan(n_turns: int, seed: int, n_projects: int) -> Iterator[_Session]:
    """Yield the sessions of the corpus, one at a time."""
    rng = Random(seed)
    projects = _make_projects(rng, max(1, n_projects))
    pcum: list[float] = []
    acc = 0.0
    for r in range(len(projects)):
        acc += 1.0 / (r + 1) ** 0.8
        pcum.append(acc)
    rare_at: dict[int, list[str]] = {}
    for term in RARE_TERMS:
        for i in rng.sample(range(n_turns), min(n_turns, rare_count(n_turns))):
            rare_at.setdefault(i, []).append(term)
    span = _END_MS - _START_MS - _DAY_MS
    done = 0
    while done < n_turns:
        size = min(n_turns - done, rng.randint(5, 40))
        project = rng.choices(projects, cum_weights=pcum)[0]
        model = rng.choices(MODELS, weights=_MODEL_WEIGHTS)[0]
        branch = "main" if rng.random() < 0.6 else f"feature/{rng.choice(_VOCAB.pseudo[:500])}"
        title = _words(rng, rng.randint(3, 7)).replace(".", "").replace(",", "").capitalize()
        session = _Session(
            session_id=_uuid(rng),
            project=project,
            model=model,
            version=rng.choice(VERSIONS),
            branch=branch,
            title=title if rng.random() < 0.15 else None,
            turns=[],
        )
        t = _START_MS + span * done // n_turns + rng.randrange(3_600_000)
        read_so_far: list[str] = []
        for k in range(size):
            turn = _plan_turn(rng, project, model, done + k, t, read_so_far, rare_at)
            session.turns.append(turn)
            t += turn.duration + rng.randint(20_000, 900_000)
        done += size
        yield session


def _plan_turn(
    rng: Random,
    project: _Project,
    model: str,
    index: int,
    t: int,
    read_so_far: list[str],
    rare_at: dict[int, list[str]],
) -> _Turn:
    r = rng.random()
    status = "interrupted" if r < 0.03 else "failed" if r < 0.07 else "completed"
    tainted = rng.random() < 0.05
    n_calls = 0 if rng.random() < 0.15 else min(12, int(rng.expovariate(1 / 2.5)) + 1)
    if status != "completed":
        n_calls = max(n_calls, 1)
    calls: list[_Call] = []
    cwd = project.cwd
    mentioned: list[str] = []
    for _ in range(n_calls):
        c = rng.random()
        if c < 0.45 or (c < 0.62 and not read_so_far):
            rel = rng.choices(project.files, cum_weights=project.cum)[0]
            path = f"{cwd}/{rel}"
            calls.append(_Call("Read", path))
            read_so_far.append(path)
            mentioned.append(rel)
        elif c < 0.62:
            calls.append(_Call("Edit", rng.choice(read_so_far[-8:])))
        elif c < 0.85:
            calls.append(_Call("Bash", error=rng.random() < 0.04))
        elif c < 0.95:
            calls.append(_Call("Grep"))
        else:
            calls.append(_Call("Glob"))
    if tainted:
        calls.insert(rng.randrange(len(calls) + 1), _Call(rng.choice(_UNTRUSTED)))
    if status == "failed":
        calls.append(_Call("Bash", error=True))
    elif status == "interrupted":
        calls.append(_Call("Bash", rejected=True))

    asked = f"{rng.choice(_OPENERS)} {_words(rng, _length(rng, 42, 0.5, 4, 400))}"
    if mentioned and rng.random() < 0.6:
        asked += f" in {mentioned[0]}"
    if status == "interrupted":
        answered = ""
    else:
        answered = _words(rng, _length(rng, 144, 0.45, 10, 1500))
        if rng.random() < 0.3:
            answered += "\n\n```" + _CODE_EXT.get(project.lang, "") + "\n"
            answered += "\n".join(_code_line(rng) for _ in range(rng.randint(3, 9)))
            answered += "\n```\n"
        edited = [c.path for c in calls if c.name == "Edit"]
        if edited:
            answered += f"\n\nChanged `{edited[0][len(project.cwd) + 1 :]}`."
        if status == "failed":
            answered += " The command still fails; see the error above."
    terms: list[str] = []
    for term, rate in COMMON_RATES.items():
        if rng.random() < rate:
            terms.append(term)
            if answered and rng.random() < 0.5:
                answered = _plant(rng, answered, term)
            else:
                asked = _plant(rng, asked, term)
    for term in rare_at.get(index, ()):
        terms.append(term)
        if answered and rng.random() < 0.5:
            answered = _plant(rng, answered, term)
        else:
            asked = _plant(rng, asked, term)
    turn_model = model if rng.random() < 0.97 else rng.choice(MODELS)
    duration = (4 * len(calls) + 8) * 9_000
    return _Turn(
        _uuid(rng), t, duration, asked, answered, calls, status, tainted, turn_model, terms
    )


def _code_line(rng: Random) -> str:
    v = _VOCAB
    c = rng.randrange(7)
    ident = v.idents[rng.randrange(len(v.idents))]
    name = v.pseudo[rng.randrange(300)]
    if c == 0:
        return f"def {ident}({name}, {rng.choice(NOUNS)}):"
    if c == 1:
        return f"    {name} = {ident}({rng.choice(NOUNS)})"
    if c == 2:
        return f"    return {ident}({name})"
    if c == 3:
        return f"class {v.classes[rng.randrange(len(v.classes))]}:"
    if c == 4:
        return f"    # {_words(rng, rng.randint(4, 10))}"
    if c == 5:
        return f"    if {name} is None:"
    return ""


# ---------------------------------------------------------------------------
# Output.


@dataclass
class Stats:
    """What a writer produced."""

    format: str
    turns: int = 0
    sessions: int = 0
    projects: int = 0
    bytes: int = 0
    files: int = 0
    lines: int = 0
    median_line_bytes: int = 0
    paths: list[Path] = field(default_factory=list)
    rare: dict[str, list[str]] = field(default_factory=dict)  # term -> turn ids
    common: dict[str, int] = field(default_factory=dict)  # term -> turns containing it
    #: with steps: term -> turn ids whose tool outputs (only) hold it
    step_rare: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "turns": self.turns,
            "sessions": self.sessions,
            "projects": self.projects,
            "bytes": self.bytes,
            "files": self.files,
            "lines": self.lines,
            "median_line_bytes": self.median_line_bytes,
            "rare": {k: len(v) for k, v in self.rare.items()},
            "common": self.common,
        }


class _Sizes:
    """Line count, byte count and exact median line size without keeping the lines."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.lines = 0
        self.bytes = 0

    def add(self, n: int) -> None:
        self.counts[n] = self.counts.get(n, 0) + 1
        self.lines += 1
        self.bytes += n + 1

    def median(self) -> int:
        half = (self.lines + 1) // 2
        seen = 0
        for n in sorted(self.counts):
            seen += self.counts[n]
            if seen >= half:
                return n
        return 0


def _tally(stats: Stats, turn: _Turn) -> None:
    for term in turn.terms:
        if term in stats.common:
            stats.common[term] += 1
        else:
            stats.rare[term].append(turn.turn_id)


def _new_stats(fmt: str) -> Stats:
    return Stats(
        format=fmt,
        rare={t: [] for t in RARE_TERMS},
        common=dict.fromkeys(COMMON_TERMS, 0),
    )


_DUMPS = json.JSONEncoder(separators=(",", ":")).encode
_DUMPS_UTF8 = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def write_turns_jsonl(
    path: str | Path, n_turns: int, seed: int = 0, projects: int = 20, *, steps: bool = False
) -> Stats:
    """Write ``n_turns`` turns as turn JSONL (one object per line) to ``path``.

    ``steps``: each record also gets ``steps``, the exchange in the stored step
    form (the prompt, thinking, intermediate text, every tool call with its
    input and output, the answer), drawn from a random stream of its own, so
    the other fields are the same with or without them. :data:`STEP_TERMS`
    are planted in tool outputs only (:attr:`Stats.step_rare`)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    stats = _new_stats("turns")
    sizes = _Sizes()
    used: set[str] = set()
    srng = Random(f"steps:{seed}")
    state = _FileState(srng)
    step_at: dict[int, list[str]] = {}
    if steps:
        for term in STEP_TERMS:
            for i in srng.sample(range(n_turns), min(n_turns, rare_count(n_turns))):
                step_at.setdefault(i, []).append(term)
        stats.step_rare = {t: [] for t in STEP_TERMS}
    index = 0
    with out.open("wb", buffering=1 << 20) as fh:
        for session in _plan(n_turns, seed, projects):
            stats.sessions += 1
            used.add(session.project.cwd)
            for turn in session.turns:
                files: dict[str, None] = {}
                edited: dict[str, None] = {}
                tools: dict[str, int] = {}
                for c in turn.calls:
                    tools[c.name] = tools.get(c.name, 0) + 1
                    if c.name == "Read":
                        files[c.path] = None
                    elif c.name == "Edit":
                        edited[c.path] = None
                record = {
                    "turn_id": turn.turn_id,
                    "session_id": session.session_id,
                    "project": session.project.cwd,
                    "asked_at": fmt_ms(turn.asked_at),
                    "asked": turn.asked,
                    "answered": turn.answered,
                    "files": list(files),
                    "edited": list(edited),
                    "tools": tools,
                    "tainted": turn.tainted,
                    "model": turn.model,
                    "agent": AGENT,
                    "status": turn.status,
                }
                if steps:
                    planted = step_at.get(index, [])
                    record["steps"] = _turn_steps(srng, state, session, turn, planted)
                    for term in planted:
                        stats.step_rare[term].append(turn.turn_id)
                index += 1
                line = _DUMPS(record).encode()
                fh.write(line + b"\n")
                sizes.add(len(line))
                stats.turns += 1
                _tally(stats, turn)
    stats.projects = len(used)
    stats.bytes = sizes.bytes
    stats.lines = sizes.lines
    stats.median_line_bytes = sizes.median()
    stats.files = 1
    stats.paths = [out]
    return stats


def _turn_steps(
    rng: Random, files: _FileState, session: _Session, turn: _Turn, planted: list[str]
) -> list[dict[str, Any]]:
    """A turn's exchange in the stored step form (format.md, "Turns")."""
    project = session.project
    at = fmt_ms(turn.asked_at)
    out: list[dict[str, Any]] = [{"type": "user", "text": turn.asked, "at": at}]
    if rng.random() < 0.35:
        out.append(
            {"type": "thinking", "text": _words(rng, _length(rng, 50, 0.6, 5, 400)), "at": at}
        )
    planted = list(planted)
    for call in turn.calls:
        if rng.random() < 0.5:
            text = _words(rng, _length(rng, 20, 0.5, 3, 120))
            out.append({"type": "assistant", "text": text, "at": at, "model": turn.model})
        if call.name == "Edit":
            inp, _line = _edit_input(rng, files, call.path)
        else:
            inp = _call_input(rng, call, project)
        error = call.error or call.rejected
        output: str
        if call.rejected:
            output = "The user doesn't want to proceed with this tool use."
        elif call.name == "Read":
            output = files.get_numbered(call.path)
        elif call.name == "Edit":
            output = f"The file {call.path} has been updated."
        elif call.name == "Bash":
            output = "\n".join(_words(rng, rng.randint(4, 14)) for _ in range(rng.randint(1, 12)))
            if call.error:
                output = f"Exit code 1\n{output}\nFAILED tests/test_{rng.choice(NOUNS)}.py"
        elif call.name == "Grep":
            found = rng.sample(project.files, min(len(project.files), rng.randint(0, 6)))
            output = "\n".join(found) if found else "No files found"
        else:
            output = _words(rng, _length(rng, 60, 0.5, 10, 300))
        if planted and call.name == "Bash" and not call.rejected:
            term = planted.pop()
            output += f"\nE   {term}: raised in {rng.choice(_VOCAB.idents)}"
            error = True
        out.append(
            {
                "type": "tool",
                "id": f"toolu_01{_b62(rng, 22)}",
                "name": call.name,
                "input": inp,
                "output": output,
                "is_error": error,
                "at": at,
            }
        )
    for term in planted:  # no Bash call to carry it: a failing one of its own
        out.append(
            {
                "type": "tool",
                "id": f"toolu_01{_b62(rng, 22)}",
                "name": "Bash",
                "input": {"command": "make test", "description": "Run the tests"},
                "output": f"Exit code 1\nE   {term}: raised in {rng.choice(_VOCAB.idents)}",
                "is_error": True,
                "at": at,
            }
        )
    if turn.answered:
        out.append({"type": "assistant", "text": turn.answered, "at": at, "model": turn.model})
    return out


# ---------------------------------------------------------------------------
# Claude Code session files.


class _FileState:
    """The current content of every file of every project (bounded: a few MB)."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.content: dict[str, str] = {}
        self.numbered: dict[str, str] = {}

    def get(self, path: str) -> str:
        text = self.content.get(path)
        if text is None:
            rng = self.rng
            lines = [_code_line(rng) for _ in range(_length(rng, 40, 0.5, 8, 200))]
            text = "\n".join(lines) + "\n"
            self.content[path] = text
        return text

    def get_numbered(self, path: str) -> str:
        text = self.numbered.get(path)
        if text is None:
            text = _number(self.get(path).split("\n")[:-1], 1)
            self.numbered[path] = text
        return text

    def set(self, path: str, text: str) -> None:
        self.content[path] = text
        self.numbered.pop(path, None)


def _number(lines: list[str], start: int) -> str:
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(lines, start))


class _ClaudeSession:
    """Writes one session file, line by line."""

    def __init__(self, fh: Any, rng: Random, session: _Session, sizes: _Sizes) -> None:
        self.fh = fh
        self.rng = rng
        self.session = session
        self.sizes = sizes
        self.parent: str | None = None
        self.t = 0
        self.step = 1000
        p = session.project
        self.envelope = {
            "isSidechain": False,
            "userType": "external",
            "cwd": p.cwd,
            "sessionId": session.session_id,
            "version": session.version,
            "gitBranch": session.branch,
        }

    def emit(self, obj: dict[str, Any]) -> None:
        line = _DUMPS_UTF8(obj).encode()
        self.fh.write(line + b"\n")
        self.sizes.add(len(line))

    def tick(self) -> str:
        self.t += self.rng.randint(max(1, self.step // 4), self.step)
        return fmt_ms(self.t)

    def record(self, kind: str, body: dict[str, Any]) -> str:
        uid = _uuid(self.rng)
        obj: dict[str, Any] = {"parentUuid": self.parent, **self.envelope, "type": kind}
        obj.update(body)
        obj["uuid"] = uid
        obj["timestamp"] = self.tick()
        self.emit(obj)
        self.parent = uid
        return uid

    def assistant(self, blocks: list[dict[str, Any]], model: str, final: bool) -> str:
        rng = self.rng
        msg_id = f"msg_01{_b62(rng, 22)}"
        req = f"req_011C{_b62(rng, 20)}"
        cache = rng.randint(2_000, 60_000)
        usage = {
            "input_tokens": rng.randint(3, 40),
            "cache_creation_input_tokens": cache // 10,
            "cache_read_input_tokens": cache,
            "cache_creation": {
                "ephemeral_5m_input_tokens": cache // 10,
                "ephemeral_1h_input_tokens": 0,
            },
            "output_tokens": rng.randint(1, 900),
            "service_tier": "standard",
        }
        last = ""
        for k, block in enumerate(blocks):
            end = k == len(blocks) - 1
            message = {
                "model": model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": ("end_turn" if final else "tool_use") if end else None,
                "stop_sequence": None,
                "usage": usage,
            }
            last = self.record("assistant", {"message": message, "requestId": req})
        return last

    def tool_result(
        self,
        tool_id: str,
        content: Any,
        result: Any,
        source: str,
        is_error: bool = False,
    ) -> None:
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        body: dict[str, Any] = {
            "message": {"role": "user", "content": [block]},
            "toolUseResult": result,
        }
        if self.session.version >= "2":
            body["sourceToolAssistantUUID"] = source
        self.record("user", body)


def _call_input(rng: Random, call: _Call, project: _Project) -> dict[str, Any]:
    cwd = project.cwd
    if call.name == "Read":
        return {"file_path": call.path}
    if call.name == "Bash":
        cmd = rng.choice(
            (
                f"python -m pytest -q tests/test_{rng.choice(NOUNS)}.py",
                "git status --short",
                f"rg -n {rng.choice(_VOCAB.idents)} src",
                "git diff --stat",
                f"ls {rng.choice(('src', 'tests', 'scripts'))}",
                "make lint",
            )
        )
        return {"command": cmd, "description": _words(rng, rng.randint(3, 7)).capitalize()}
    if call.name == "Grep":
        return {"pattern": rng.choice(_VOCAB.idents), "output_mode": "files_with_matches"}
    if call.name == "Glob":
        return {"pattern": f"**/*.{project.lang}", "path": cwd}
    if call.name == "WebFetch":
        return {
            "url": f"https://docs.example.org/{rng.choice(_VOCAB.pseudo)}/{rng.choice(NOUNS)}",
            "prompt": _words(rng, rng.randint(6, 14)),
        }
    if call.name == "WebSearch":
        return {"query": _words(rng, rng.randint(3, 8))}
    return {
        "owner": "dev",
        "repo": project.cwd.rsplit("/", 1)[-1],
        "issue_number": rng.randint(1, 900),
    }


def _write_claude_turn(w: _ClaudeSession, rng: Random, turn: _Turn, files: _FileState) -> None:
    session = w.session
    project = session.project
    w.t = turn.asked_at
    w.step = max(2, turn.duration // (4 * len(turn.calls) + 8))
    # the prompt line: its uuid is the turn id; the timestamp is asked_at exactly
    obj: dict[str, Any] = {"parentUuid": w.parent, **w.envelope, "type": "user"}
    obj["message"] = {"role": "user", "content": turn.asked}
    obj["uuid"] = turn.turn_id
    obj["timestamp"] = fmt_ms(turn.asked_at)
    w.emit(obj)
    w.parent = turn.turn_id

    calls = turn.calls
    i = 0
    first = True
    while i < len(calls):
        group = calls[i : i + (2 if rng.random() < 0.2 else 1)]
        if any(c.name == "Edit" for c in group):
            group = group[:1]  # an edit is computed against the current content
        i += len(group)
        blocks: list[dict[str, Any]] = []
        if first and rng.random() < 0.35:
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": _words(rng, _length(rng, 50, 0.6, 5, 400)),
                    "signature": base64.b64encode(rng.randbytes(rng.randint(120, 500))).decode(),
                }
            )
        first = False
        if rng.random() < 0.7:
            blocks.append({"type": "text", "text": _words(rng, _length(rng, 20, 0.5, 3, 120))})
        ids: list[str] = []
        edit_line = -1
        for call in group:
            tid = f"toolu_01{_b62(rng, 22)}"
            ids.append(tid)
            if call.name == "Edit":
                inp, edit_line = _edit_input(rng, files, call.path)
            else:
                inp = _call_input(rng, call, project)
            blocks.append({"type": "tool_use", "id": tid, "name": call.name, "input": inp})
        source = w.assistant(blocks, turn.model, final=False)
        for call, tid, block in zip(group, ids, blocks[-len(group) :], strict=True):
            _run_call(w, rng, call, tid, block["input"], edit_line, files, project, source)
            if call.rejected:
                w.record(
                    "user",
                    {
                        "message": {
                            "role": "user",
                            "content": [
                                {
                                    "type": "text",
                                    "text": "[Request interrupted by user for tool use]",
                                }
                            ],
                        }
                    },
                )
                return
    blocks = []
    if rng.random() < 0.2:
        blocks.append(
            {
                "type": "thinking",
                "thinking": _words(rng, _length(rng, 40, 0.6, 5, 300)),
                "signature": base64.b64encode(rng.randbytes(rng.randint(120, 400))).decode(),
            }
        )
    blocks.append({"type": "text", "text": turn.answered})
    w.assistant(blocks, turn.model, final=True)


def _edit_input(rng: Random, files: _FileState, path: str) -> tuple[dict[str, Any], int]:
    """An Edit call's input (one line replaced) and the index of that line."""
    lines = files.get(path).split("\n")[:-1]
    k = rng.randrange(len(lines))
    for _ in range(8):  # prefer a non-blank line, as a real old_string would be
        if lines[k].strip():
            break
        k = rng.randrange(len(lines))
    old = lines[k]
    if "  # " in old:  # undo an earlier edit: files stay about the same size
        new = old.split("  # ", 1)[0]
    elif old:
        new = f"{old}  # {_words(rng, rng.randint(2, 6))}"
    else:
        new = _code_line(rng) or "    pass"
    return {"file_path": path, "old_string": old, "new_string": new}, k


def _run_call(
    w: _ClaudeSession,
    rng: Random,
    call: _Call,
    tid: str,
    inp: dict[str, Any],
    edit_line: int,
    files: _FileState,
    project: _Project,
    source: str,
) -> None:
    name = call.name
    result: dict[str, Any]
    if call.rejected:
        msg = (
            "The user doesn't want to proceed with this tool use. The tool use was rejected "
            "(eg. if it was a file edit, the new_string was NOT written to the file). "
            "STOP what you are doing and wait for the user to tell you how to proceed."
        )
        w.tool_result(tid, msg, f"Error: {msg}", source, is_error=True)
        return
    if name == "Read":
        text = files.get(call.path)
        n = text.count("\n")
        result = {
            "type": "text",
            "file": {
                "filePath": call.path,
                "content": text,
                "numLines": n,
                "startLine": 1,
                "totalLines": n,
            },
        }
        w.tool_result(tid, files.get_numbered(call.path), result, source)
    elif name == "Edit":
        k = edit_line
        original = files.get(call.path)
        lines = original.split("\n")[:-1]
        old, new = inp["old_string"], inp["new_string"]
        lines[k] = new
        files.set(call.path, "\n".join(lines) + "\n")
        lo, hi = max(0, k - 3), min(len(lines), k + 4)
        before = [f" {x}" for x in lines[lo:k]]
        after = [f" {x}" for x in lines[k + 1 : hi]]
        patch = {
            "oldStart": lo + 1,
            "oldLines": hi - lo,
            "newStart": lo + 1,
            "newLines": hi - lo,
            "lines": [*before, f"-{old}", f"+{new}", *after],
        }
        result = {
            "filePath": call.path,
            "oldString": old,
            "newString": new,
            "originalFile": original,
            "structuredPatch": [patch],
            "userModified": False,
            "replaceAll": False,
        }
        content = (
            f"The file {call.path} has been updated. Here's the result of running "
            f"`cat -n` on a snippet of the edited file:\n{_number(lines[lo:hi], lo + 1)}"
        )
        w.tool_result(tid, content, result, source)
    elif name == "Bash":
        out = "\n".join(_words(rng, rng.randint(4, 14)) for _ in range(rng.randint(1, 12)))
        if call.error:
            out = f"Exit code 1\n{out}\nFAILED tests/test_{rng.choice(NOUNS)}.py"
            w.tool_result(tid, out, f"Error: {out}", source, is_error=True)
        else:
            result = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
            w.tool_result(tid, out, result, source)
    elif name == "Grep":
        found = rng.sample(project.files, min(len(project.files), rng.randint(0, 6)))
        result = {"mode": "files_with_matches", "filenames": found, "numFiles": len(found)}
        content = f"Found {len(found)} files\n" + "\n".join(found) if found else "No files found"
        w.tool_result(tid, content, result, source)
    elif name == "Glob":
        found = [f"{project.cwd}/{f}" for f in project.files if f.endswith(project.lang)][:20]
        result = {
            "filenames": found,
            "durationMs": rng.randint(5, 300),
            "numFiles": len(found),
            "truncated": False,
        }
        w.tool_result(tid, "\n".join(found) or "No files found", result, source)
    elif name == "WebFetch":
        text = _words(rng, _length(rng, 150, 0.5, 20, 800))
        result = {
            "bytes": len(text) * 7,
            "code": 200,
            "codeText": "OK",
            "result": text,
            "durationMs": rng.randint(300, 9000),
            "url": inp["url"],
        }
        w.tool_result(tid, text, result, source)
    elif name == "WebSearch":
        hits = [
            {"title": _words(rng, 5), "url": f"https://example.org/{rng.choice(_VOCAB.pseudo)}"}
            for _ in range(rng.randint(2, 6))
        ]
        summary = _words(rng, _length(rng, 80, 0.5, 10, 400))
        text = f'Web search results for query: "{inp["query"]}"\n\n{summary}'
        result = {
            "query": inp["query"],
            "results": [{"tool_use_id": f"srvtoolu_01{_b62(rng, 22)}", "content": hits}, summary],
            "durationSeconds": round(rng.uniform(1, 12), 3),
        }
        w.tool_result(tid, text, result, source)
    else:
        text = json.dumps({"title": _words(rng, 6), "body": _words(rng, rng.randint(20, 120))})
        blocks = [{"type": "text", "text": text}]
        w.tool_result(tid, blocks, blocks, source)


def slug(cwd: str) -> str:
    """Claude Code's project folder name for a cwd."""
    return cwd.replace("/", "-")


def write_claude_projects(
    root: str | Path, n_turns: int, seed: int = 0, projects: int = 20
) -> Stats:
    """Write ``n_turns`` turns as Claude Code session files under ``root``."""
    base = Path(root)
    stats = _new_stats("claude")
    sizes = _Sizes()
    rng = Random(f"claude:{seed}")
    files = _FileState(rng)
    used: set[str] = set()
    for session in _plan(n_turns, seed, projects):
        folder = base / slug(session.project.cwd)
        if session.project.cwd not in used:
            folder.mkdir(parents=True, exist_ok=True)
            used.add(session.project.cwd)
        path = folder / f"{session.session_id}.jsonl"
        with path.open("wb", buffering=1 << 20) as fh:
            w = _ClaudeSession(fh, rng, session, sizes)
            if session.title is not None:
                w.emit({"type": "summary", "summary": session.title, "leafUuid": _uuid(rng)})
            for turn in session.turns:
                _write_claude_turn(w, rng, turn, files)
                stats.turns += 1
                _tally(stats, turn)
        stats.sessions += 1
        stats.paths.append(path)
    stats.projects = len(used)
    stats.files = len(stats.paths)
    stats.bytes = sizes.bytes
    stats.lines = sizes.lines
    stats.median_line_bytes = sizes.median()
    return stats


# ---------------------------------------------------------------------------
# Codex CLI rollouts.

#: the Codex models standing in for the plan's, index for index
CODEX_MODELS = ("gpt-5.5", "gpt-5.4", "gpt-5.1-codex-max", "gpt-5.6-luna")
CODEX_VERSION = "0.128.0"


class _CodexRollout:
    """Writes one rollout file (0.12x generation), line by line."""

    def __init__(self, fh: Any, rng: Random, session: _Session, sizes: _Sizes) -> None:
        self.fh = fh
        self.rng = rng
        self.session = session
        self.sizes = sizes
        self.t = 0
        self.step = 1000
        self.tokens = 0

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.t += self.rng.randint(max(1, self.step // 4), self.step)
        line = _DUMPS_UTF8({"timestamp": fmt_ms(self.t), "type": kind, "payload": payload})
        data = line.encode()
        self.fh.write(data + b"\n")
        self.sizes.add(len(data))

    def event(self, etype: str, **fields: Any) -> None:
        self.emit("event_msg", {"type": etype, **fields})

    def item(self, itype: str, **fields: Any) -> None:
        self.emit("response_item", {"type": itype, **fields})

    def message(self, role: str, text: str, phase: str | None = None) -> None:
        part = "output_text" if role == "assistant" else "input_text"
        fields: dict[str, Any] = {"role": role, "content": [{"type": part, "text": text}]}
        if phase is not None:
            fields["phase"] = phase
        self.item("message", **fields)

    def reasoning(self) -> None:
        rng = self.rng
        summary = _words(rng, _length(rng, 18, 0.5, 3, 80))
        blob = base64.b64encode(rng.randbytes(rng.randint(400, 2400))).decode()
        self.event("agent_reasoning", text=f"**{summary}**")
        self.item(
            "reasoning",
            summary=[{"type": "summary_text", "text": f"**{summary}**"}],
            content=None,
            encrypted_content=blob,
        )

    def token_count(self) -> None:
        rng = self.rng
        last = {
            "input_tokens": rng.randint(2_000, 60_000),
            "cached_input_tokens": rng.randint(0, 50_000),
            "output_tokens": rng.randint(10, 2_000),
            "reasoning_output_tokens": rng.randint(0, 900),
            "total_tokens": 0,
        }
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        self.tokens += last["total_tokens"]
        total = {k: v * 7 for k, v in last.items()}
        limits = {
            "primary": {"used_percent": rng.randint(0, 99), "window_minutes": 300},
            "secondary": {"used_percent": rng.randint(0, 99), "window_minutes": 10080},
        }
        info = {
            "total_token_usage": total,
            "last_token_usage": last,
            "model_context_window": 258400,
        }
        self.event("token_count", info=info, rate_limits=limits)


def _codex_instructions(rng: Random) -> str:
    return "\n\n".join(_words(rng, _length(rng, 120, 0.3, 40, 300)) for _ in range(12))


def _write_codex_turn(w: _CodexRollout, rng: Random, turn: _Turn, files: _FileState) -> None:
    session = w.session
    project = session.project
    cwd = project.cwd
    tid = turn.turn_id
    model = CODEX_MODELS[MODELS.index(turn.model)] if turn.model in MODELS else CODEX_MODELS[0]
    w.t = turn.asked_at - 3
    w.step = max(2, turn.duration // (6 * len(turn.calls) + 10))
    w.event("task_started", turn_id=tid, model_context_window=258400)
    if w.tokens == 0:  # the session's opening context, before its first prompt
        w.message(
            "developer",
            "<permissions instructions>\nsandbox: workspace-write\n</permissions instructions>",
        )
        w.message("user", f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>")
    w.emit(
        "turn_context",
        {
            "turn_id": tid,
            "cwd": cwd,
            "approval_policy": "on-request",
            "sandbox_policy": {"type": "workspace-write"},
            "model": model,
            "effort": "medium",
            "summary": "auto",
        },
    )
    w.message("user", turn.asked)
    w.event("user_message", message=turn.asked, images=[], local_images=[], text_elements=[])
    for call in turn.calls:
        w.reasoning()
        if rng.random() < 0.6:
            text = _words(rng, _length(rng, 20, 0.5, 3, 120))
            w.message("assistant", text, "commentary")
            w.event("agent_message", message=text, phase="commentary")
        w.token_count()
        cid = f"call_{_b62(rng, 24)}"
        _run_codex_call(w, rng, call, cid, files, project)
        if call.rejected:
            w.message("user", "<turn_aborted>\nThe user interrupted the turn.\n</turn_aborted>")
            w.event("turn_aborted", turn_id=tid, reason="interrupted")
            return
    w.reasoning()
    w.message("assistant", turn.answered, "final_answer")
    w.event("agent_message", message=turn.answered, phase="final_answer")
    w.token_count()
    if turn.status == "failed":
        w.event("error", message="stream disconnected before completion")
    w.event("task_complete", turn_id=tid, last_agent_message=turn.answered)


def _exec(
    w: _CodexRollout,
    cid: str,
    cmd: str,
    cwd: str,
    parsed: list[dict[str, Any]],
    out: str,
    code: int = 0,
) -> None:
    w.item(
        "function_call",
        name="exec_command",
        arguments=_DUMPS({"cmd": cmd, "workdir": cwd, "yield_time_ms": 10000}),
        call_id=cid,
    )
    w.event(
        "exec_command_end",
        call_id=cid,
        turn_id="",
        command=["/bin/bash", "-lc", cmd],
        cwd=cwd,
        parsed_cmd=parsed,
        exit_code=code,
        aggregated_output=out,
        duration={"secs": 0, "nanos": 31_000_000},
        status="completed" if code == 0 else "failed",
        source="agent",
    )
    head = f"Chunk ID: {cid[5:11]}\nWall time: 0.0312 seconds\nProcess exited with code {code}"
    w.item("function_call_output", call_id=cid, output=f"{head}\nOutput:\n{out}")


def _run_codex_call(
    w: _CodexRollout,
    rng: Random,
    call: _Call,
    cid: str,
    files: _FileState,
    project: _Project,
) -> None:
    cwd = project.cwd
    name = call.name
    if call.rejected:
        w.item(
            "function_call",
            name="exec_command",
            arguments=_DUMPS({"cmd": "make test", "workdir": cwd}),
            call_id=cid,
        )
        return
    if name == "Read":
        rel = call.path[len(cwd) + 1 :]
        cmd = f"sed -n '1,200p' {rel}"
        parsed = [{"type": "read", "cmd": cmd, "name": rel.rsplit("/", 1)[-1], "path": rel}]
        _exec(w, cid, cmd, cwd, parsed, files.get(call.path))
    elif name == "Edit":
        rel = call.path[len(cwd) + 1 :]
        inp, k = _edit_input(rng, files, call.path)
        lines = files.get(call.path).split("\n")[:-1]
        old, new = inp["old_string"], inp["new_string"]
        lines[k] = new
        files.set(call.path, "\n".join(lines) + "\n")
        diff = f"@@ -{k + 1} +{k + 1} @@\n-{old}\n+{new}\n"
        patch = f"*** Begin Patch\n*** Update File: {rel}\n{diff}*** End Patch\n"
        w.item("custom_tool_call", status="completed", call_id=cid, name="apply_patch", input=patch)
        w.event(
            "patch_apply_end",
            call_id=cid,
            turn_id="",
            stdout=f"Success. Updated the following files:\nM {rel}\n",
            stderr="",
            success=True,
            changes={call.path: {"type": "update", "unified_diff": diff, "move_path": None}},
        )
        output: dict[str, Any] = {
            "output": f"Success. Updated the following files:\nM {rel}\n",
            "metadata": {"exit_code": 0, "duration_seconds": 0.0},
        }
        w.item("custom_tool_call_output", call_id=cid, output=_DUMPS(output))
    elif name == "Bash":
        cmd = _call_input(rng, call, project)["command"]
        out = "\n".join(_words(rng, rng.randint(4, 14)) for _ in range(rng.randint(1, 12)))
        if call.error:
            out += f"\nFAILED tests/test_{rng.choice(NOUNS)}.py"
        _exec(w, cid, cmd, cwd, [{"type": "unknown", "cmd": cmd}], out, 1 if call.error else 0)
    elif name == "Grep":
        pattern = rng.choice(_VOCAB.idents)
        cmd = f"rg -n {pattern} src"
        found = rng.sample(project.files, min(len(project.files), rng.randint(0, 6)))
        parsed = [{"type": "search", "cmd": cmd, "query": pattern, "path": "src"}]
        _exec(w, cid, cmd, cwd, parsed, "\n".join(f"{f}:1:{pattern}" for f in found))
    elif name == "Glob":
        cmd = f"rg --files -g '*.{project.lang}'"
        found = [f for f in project.files if f.endswith(project.lang)][:20]
        _exec(w, cid, cmd, cwd, [{"type": "list_files", "cmd": cmd, "path": "."}], "\n".join(found))
    elif name in ("WebFetch", "WebSearch"):
        query = _words(rng, rng.randint(3, 8))
        action = {"type": "search", "query": query}
        w.item("web_search_call", id=f"ws_{_b62(rng, 24)}", status="completed", action=action)
        w.event("web_search_end", call_id=cid, query=query, action=action)
    else:  # an MCP tool
        text = _DUMPS({"title": _words(rng, 6), "body": _words(rng, rng.randint(20, 120))})
        args = {"owner": "dev", "repo": cwd.rsplit("/", 1)[-1], "issue_number": rng.randint(1, 900)}
        w.item(
            "function_call",
            name="get_issue",
            namespace="mcp__github",
            arguments=_DUMPS(args),
            call_id=cid,
        )
        w.event(
            "mcp_tool_call_end",
            call_id=cid,
            invocation={"server": "github", "tool": "get_issue", "arguments": args},
            duration={"secs": 0, "nanos": 220_000_000},
            result={"Ok": {"content": [{"type": "text", "text": text}], "isError": False}},
        )
        w.item("function_call_output", call_id=cid, output=text)


def write_codex_sessions(
    root: str | Path, n_turns: int, seed: int = 0, projects: int = 20, one_file: bool = False
) -> Stats:
    """Write ``n_turns`` turns as Codex CLI rollouts under ``root``
    (``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``, one per session; with
    ``one_file`` every turn in one session, one rollout)."""
    base = Path(root)
    stats = _new_stats("codex")
    sizes = _Sizes()
    rng = Random(f"codex:{seed}")
    files = _FileState(rng)
    instructions = _codex_instructions(rng)
    used: set[str] = set()
    fh: Any = None
    w: _CodexRollout | None = None
    try:
        for session in _plan(n_turns, seed, projects):
            used.add(session.project.cwd)
            if w is None or not one_file:
                if fh is not None:
                    fh.close()
                start = fmt_ms(session.turns[0].asked_at - 10)
                day = start[:10].replace("-", "/")
                stamp = start[:19].replace(":", "-")
                path = base / "sessions" / day / f"rollout-{stamp}-{session.session_id}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                fh = path.open("wb", buffering=1 << 20)
                w = _CodexRollout(fh, rng, session, sizes)
                w.t = session.turns[0].asked_at - 10
                meta = {
                    "id": session.session_id,
                    "timestamp": start,
                    "cwd": session.project.cwd,
                    "originator": "codex_cli_rs",
                    "cli_version": CODEX_VERSION,
                    "source": "cli",
                    "model_provider": "openai",
                    "base_instructions": {"text": instructions},
                    "git": {
                        "commit_hash": _b62(rng, 40).lower(),
                        "branch": session.branch,
                        "repository_url": f"git@example.org:dev/{session.project.cwd.rsplit('/', 1)[-1]}.git",
                    },
                }
                w.emit("session_meta", meta)
                stats.sessions += 1
                stats.paths.append(path)
            else:
                w.session = session  # the same rollout, going on with the next plan session
            for turn in session.turns:
                _write_codex_turn(w, rng, turn, files)
                stats.turns += 1
                _tally(stats, turn)
    finally:
        if fh is not None:
            fh.close()
    stats.projects = len(used)
    stats.files = len(stats.paths)
    stats.bytes = sizes.bytes
    stats.lines = sizes.lines
    stats.median_line_bytes = sizes.median()
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--format", choices=("turns", "claude", "codex"), default="turns")
    ap.add_argument("--one-file", action="store_true", help="codex: every turn in one rollout")
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--projects", type=int, default=20)
    ap.add_argument("--steps", action="store_true", help="turns: give each turn its steps")
    ap.add_argument("out", help="output file (turns) or root folder (claude)")
    args = ap.parse_args(argv)
    began = time.perf_counter()
    if args.format == "turns":
        stats = write_turns_jsonl(args.out, args.turns, args.seed, args.projects, steps=args.steps)
    elif args.format == "codex":
        stats = write_codex_sessions(args.out, args.turns, args.seed, args.projects, args.one_file)
    else:
        stats = write_claude_projects(args.out, args.turns, args.seed, args.projects)
    elapsed = time.perf_counter() - began
    report = stats.summary()
    report["seconds"] = round(elapsed, 3)
    report["turns_per_second"] = round(stats.turns / elapsed) if elapsed else None
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
