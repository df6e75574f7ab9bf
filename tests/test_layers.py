"""The layering (docs/architecture.md): every import goes down the layers, lowest
first errors <- display <- store <- agents <- history <- overlay <- recall <- memory
<- ops <- capture <- sync <- mcp <- plumbing <- porcelain, at module and at function level;
the library imports inside functions only what LAZY lists, for start-up time; it
never imports a CLI framework, prints or exits; a dependency only one command
needs is imported by that command's modules alone (the MCP SDK by the server);
the installed distribution claims no generic top-level import names."""

from __future__ import annotations

import ast
import functools
import importlib.util
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


#: the layers, lowest first: a module may import only its own layer and those below
LAYERS = [
    "histstore.errors",
    "histstore.display",
    "histstore.store",
    "histstore.agents",
    "histstore.history",
    "histstore.overlay",
    "histstore.recall",
    "histstore.memory",
    "histstore.ops",
    "histstore.capture",
    "histstore.sync",
    "histstore.mcp",
    "histstore.plumbing",
    "histstore.porcelain",
]
THIRD_PARTY = {
    "blake3",
    "filelock",
    "tomli_w",
    "zstandard",
    "yaml",
    "rfc8785",
    "tomlkit",
    "mcp",
    "anyio",
    "re2",
    "watchdog",
    "tantivy",
}
#: dependencies only one command needs, and the only modules that may import
#: each: the MCP SDK (and anyio, which it runs on) costs ~1 s of start-up and
#: is for `hs mcp` alone; tomlkit is for the installers that edit an agent's TOML
ONLY_IN = {
    "mcp": {"histstore.mcp.server"},
    "anyio": {"histstore.mcp.server"},
    "tomlkit": {"histstore.agents.settings"},
    "watchdog": {"histstore.capture.watch"},
}

#: The library's imports inside functions: each only downward (or sideways)
#: and only to keep start-up lean (an agent hook or a recall pays for every
#: module a process loads). (importing module, imported module) -> why.
#: The CLI (plumbing/, porcelain/) imports each command's library modules
#: inside that command, as one rule, so those are not listed here.
LAZY = {
    ("histstore.store.store", "histstore.store.objectstore"): "hs recall never opens objects",
    ("histstore.store.store", "histstore.store.refs"): "made on first use, with the refs",
    ("histstore.store.store", "histstore.store.redact"): "only writers redact",
    ("histstore.store.store", "filelock"): "readers never lock",
    ("histstore.store.store", "histstore.store.locking"): "readers never lock",
    ("histstore.store.locking", "filelock"): "readers never lock",
    ("histstore.recall.generations", "filelock"): "searching never takes the index lock",
    ("histstore.recall.index", "histstore.recall.engine"): (
        "without the engine (Tantivy missing) recall scans the objects"
    ),
    ("histstore.recall.index", "histstore.recall.replay"): "it loads the engine (above)",
    ("histstore.porcelain.render", "histstore.recall.query"): (
        "only a recall's answer is marked with its terms"
    ),
    ("histstore.recall.query", "tantivy"): (
        "tokens are the index analyzer's; without Tantivy the scan approximates them"
    ),
    ("histstore.recall.index", "histstore.recall.search"): "it loads the engine (above)",
    ("histstore.store.config", "uuid"): "only hs init makes a store id",
    ("histstore.store.config", "tomli_w"): "only a config change writes config.toml",
    ("histstore.store.config", "histstore.store.ruleset"): "only hs init names the rule set",
    ("histstore.store.fsutil", "ctypes"): "only bulk writers flush the filesystem",
    ("histstore.store.upgrading", "shutil"): "only an upgrade removes what it left (hs log, "
    "show, status open the store through it)",
    ("histstore.history.reading", "difflib"): "only an --agent no store holds is matched",
    ("histstore.overlay.reads", "histstore.history.sources"): "hs log never reads where a "
    "turn came from",
    ("histstore.store.codec", "rfc8785"): "only a value with a float needs the reference encoder",
    ("histstore.ops.recall", "histstore.memory.prompt"): "hs recall reads memory (and yaml) "
    "only once some was recorded",
    ("histstore.ops.recall", "histstore.history.reading"): "hs recall loads the summary (and "
    "sqlite3) only to check an --agent's name",
    ("histstore.recall.generations", "shutil"): "only writers remove a generation (shutil "
    "loads zlib, bz2 and lzma)",
    ("histstore.recall.index", "shutil"): "the same: only a failed build removes what it left",
    ("histstore.history.sources", "tempfile"): "only an import of more than 20,000 turns "
    "spills where they came from to disk (tempfile loads shutil and random)",
    ("histstore.history.importing", "histstore.history.importers.turns_jsonl"): "hs record "
    "alone parses a turn given as text",
    ("histstore.history.importers.detect", "histstore.history.importers.claude_code"): "each "
    "importer loads only for its own files, or to tell a new file's format",
    ("histstore.history.importers.detect", "histstore.history.importers.codex"): "the same",
    ("histstore.history.importers.detect", "histstore.history.importers.turns_jsonl"): "the same",
    ("histstore.store", "histstore.store.store"): "a capture that finds the store locked "
    "needs the write helpers, not the codec and object kinds",
    ("histstore.sync.purges", "histstore.ops.purge"): "a sync loads the purge machinery "
    "(~180 ms: rewriting, memory rules) only when a purge entry is to be carried",
    ("histstore.capture.run", "histstore.capture.apply"): "a capture that finds the store "
    "locked returns before the store and importers load",
    ("histstore.capture.run", "histstore.store.store"): "the same",
    ("histstore.capture.run", "sqlite3"): "the same",
    ("histstore.capture.fastspool", "fcntl"): "the lock probe is POSIX only (none on Windows)",
    ("histstore.capture.apply", "histstore.recall.index"): "a capture that adds no turn "
    "never opens the index",
    ("histstore.capture.apply", "histstore.ops.gc"): "asked only once turns were committed",
    ("histstore.capture.apply", "histstore.ops.importing"): "hs capture never loads memory "
    "(yaml): only hs import's path does",
    ("histstore.ops.gc", "histstore.memory.folders"): "hs capture asks whether gc is due "
    "without loading memory (and yaml)",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] in ("plumbing", "porcelain"):
        parts = ["histstore", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(module: str) -> int | None:
    """The layer of a histstore module (the package root is the lowest)."""
    if module == "histstore":
        return 0
    for i, prefix in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return None


def imports_of(path: Path, source: str | None = None) -> list[tuple[str, bool, int]]:
    """(imported module, inside a function, line) for every import of a file,
    relative imports resolved; ``from pkg import mod`` counts as ``pkg.mod``."""
    if source is None:
        return _imports_of_file(path)
    return _imports(path, ast.parse(source, str(path)))


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A source file parsed once per test process (four tests read them all)."""
    return ast.parse(path.read_text(), str(path))


@functools.cache
def _imports_of_file(path: Path) -> list[tuple[str, bool, int]]:
    return _imports(path, _tree(path))


def _imports(path: Path, tree: ast.Module) -> list[tuple[str, bool, int]]:
    me = module_name(path).split(".")
    package = me if path.name == "__init__.py" else me[:-1]
    out: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        if isinstance(node, ast.Import):
            out.extend((a.name, lazy, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                full = f"{mod}.{a.name}"
                # a submodule imported by name is an import of that submodule
                out.append((full if _is_module(full) else mod, lazy, node.lineno))
        else:
            inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for child in ast.iter_child_nodes(node):
                visit(child, inner)

    visit(tree, False)
    return out


@functools.cache
def _is_module(name: str) -> bool:
    parts = name.split(".")
    if parts[0] != "histstore":
        return False
    rest = parts[1:]
    if rest and rest[0] in ("plumbing", "porcelain"):
        base = ROOT.joinpath(*rest)
    else:
        base = ROOT.joinpath("histstore", *rest)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def violations(path: Path, source: str | None = None) -> list[str]:
    """What breaks the layering in one file: an upward import (module or
    function level), a lazy library import not listed in LAZY, a library
    import of a CLI framework or of anything but the stdlib and the chosen
    dependencies."""
    me = module_name(path)
    mine = layer(me)
    assert mine is not None, me
    library = mine < LAYERS.index("histstore.plumbing")
    out = []
    for mod, lazy, line in imports_of(path, source):
        top = mod.split(".")[0]
        where = f"{path.relative_to(ROOT)}:{line} imports {mod}"
        if top == "histstore":
            theirs = layer(mod)
            if theirs is None or theirs > mine:
                out.append(f"{where}: upward (layer {theirs} above {mine})")
            elif lazy and library and (me, mod) not in LAZY and theirs < mine:
                out.append(f"{where} inside a function: not listed in LAZY")
            continue
        if library:
            if top in {"typer", "click", "rich"}:
                out.append(f"{where}: the library never imports a CLI framework")
            elif top not in sys.stdlib_module_names and top not in THIRD_PARTY:
                out.append(f"{where}: not the stdlib or a chosen dependency")
            elif top in ONLY_IN and me not in ONLY_IN[top]:
                out.append(f"{where}: only {', '.join(sorted(ONLY_IN[top]))} may import {top}")
            elif lazy and (me, mod) not in LAZY:
                out.append(f"{where} inside a function: not listed in LAZY")
    return out


def all_files() -> list[Path]:
    return sorted(
        p for d in ("histstore", "plumbing", "porcelain") for p in (ROOT / d).rglob("*.py")
    )


def test_every_import_goes_down_the_layers() -> None:
    found = [v for p in all_files() for v in violations(p)]
    assert not found, "\n".join(found)


def test_lazy_imports_listed_are_still_there() -> None:
    seen = {(module_name(p), mod) for p in all_files() for mod, lazy, _ in imports_of(p) if lazy}
    assert set(LAZY) <= seen, set(LAZY) - seen


@pytest.mark.parametrize(
    ("file", "source", "wanted"),
    [
        ("histstore/store/store.py", "from histstore.sync.engine import sync\n", "upward"),
        (
            "histstore/history/reading.py",
            "def f():\n    from histstore.recall import index\n",
            "upward",
        ),
        ("histstore/overlay/reads.py", "from ..memory import scopes\n", "upward"),
        ("histstore/memory/scopes.py", "def f():\n    from histstore.store import codec\n", "LAZY"),
        ("histstore/recall/index.py", "import typer\n", "CLI framework"),
        ("histstore/mcp/tools.py", "import mcp.server\n", "may import mcp"),
        ("histstore/agents/__init__.py", "from histstore.mcp import tools\n", "upward"),
        ("plumbing/cli.py", "from histstore.porcelain import cli\n", "upward"),
    ],
)
def test_the_layering_check_catches_what_breaks_it(file: str, source: str, wanted: str) -> None:
    found = violations(ROOT / file, source)
    assert any(wanted in v for v in found), found


def test_every_subpackage_says_what_it_owns() -> None:
    for name in LAYERS[LAYERS.index("histstore.store") : LAYERS.index("histstore.plumbing")]:
        init = ROOT.joinpath(*name.split(".")) / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "Owns" in doc, f"{init} has no docstring saying what it owns"


def test_no_other_command_loads_the_mcp_sdk(tmp_path: Path) -> None:
    """`hs recall` (any command but `hs mcp`) starts without the SDK, pydantic,
    anyio or tomlkit, and without yaml while no memory is recorded: an agent
    pays for every module a command loads."""
    from histstore.store.store import Store

    Store.init(tmp_path / "store")[0].close()
    code = (
        "import sys\n"
        "from histstore.porcelain.cli import main\n"
        f"sys.argv = ['hs', '--store', {str(tmp_path / 'store')!r}, 'recall', 'login']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('mcp', 'mcp_types', 'pydantic', 'anyio', 'tomlkit', 'starlette', 'yaml')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_every_dataclass_has_a_docstring() -> None:
    """dataclasses runs inspect (ast, dis, tokenize: ~10 ms of a quick
    command's start-up) only to make a docstring for a class without one;
    porcelain/entry.py imports dataclasses without it, so none may lack one."""
    missing = []
    for path in all_files():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None:
                for d in node.decorator_list:
                    f = d.func if isinstance(d, ast.Call) else d
                    named = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                    if named == "dataclass":
                        missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not missing, missing


def test_library_never_prints_or_exits() -> None:
    for path in (ROOT / "histstore").rglob("*.py"):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                assert name not in {"print", "exit", "_exit"}, f"{path.name} calls {name}"


def test_packages_live_under_the_histstore_namespace() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pkgs = cfg["tool"]["setuptools"]["packages"]
    assert all(p == "histstore" or p.startswith("histstore.") for p in pkgs)
    mapping = cfg["tool"]["setuptools"]["package-dir"]
    assert mapping["histstore.plumbing"] == "plumbing"
    assert mapping["histstore.porcelain"] == "porcelain"


def _setuptools_builds_wheels() -> bool:
    """setuptools with its own bdist_wheel (70.1 and later), found without
    importing it (it patches distutils on import)."""
    spec = importlib.util.find_spec("setuptools")
    if spec is None or spec.origin is None:
        return False
    return (Path(spec.origin).parent / "command" / "bdist_wheel.py").is_file()


@pytest.mark.skipif(
    not _setuptools_builds_wheels(),
    reason="setuptools (70.1 or later) is not installed in this environment",
)
def test_built_wheel_claims_only_histstore(tmp_path: Path) -> None:
    # build from a copy: a build writes build/ and egg-info beside its sources
    src = tmp_path / "src"
    for name in ("histstore", "plumbing", "porcelain"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    # the build backend pip would call (PEP 517), without pip's own start-up
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])",
            str(tmp_path),
        ],
        cwd=src,
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("histstore-*.whl"))
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"histstore"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "histstore/plumbing/cli.py" in names and "histstore/porcelain/cli.py" in names
    # the secret rules and the licence of the ones derived from gitleaks ship with the code
    for data in ("gitleaks.json", "LICENSE.gitleaks", "NOTICE"):
        assert f"histstore/store/rules/{data}" in names


#: the long pieces docs/architecture.md ("Long pieces, and why") gives a reason for
LONG_PIECES = {
    "histstore/history/importers/codex/turn.py",
    "histstore/history/importers/codex/turn.py:record",
    "histstore/history/importers/claude_turn.py",
    "histstore/history/importers/claude_code.py:parse_file",
    "histstore/history/importing.py",
    "histstore/memory/writes.py:apply_write",
    "histstore/sync/engine.py:sync",
}


def test_no_long_piece_without_a_reason() -> None:
    """No library module over ~600 lines and no function over 80 unless
    docs/architecture.md says why (and names it, so the list stays true)."""
    found = set()
    for path in sorted((ROOT / "histstore").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        if text.count("\n") > 620:
            found.add(rel)
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > 80:
                    found.add(f"{rel}:{node.name}")
    assert found <= LONG_PIECES, f"long and not explained: {sorted(found - LONG_PIECES)}"
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("### Long pieces, and why", 1)[1].split("\n### ", 1)[0]
    for piece in LONG_PIECES:
        module, _, func = piece.partition(":")
        named = f"{Path(module).stem}.{func}" if func else module.removeprefix("histstore/")
        if func:
            assert f"`{func}`" in section or named in section, f"{piece} is not explained"
        else:
            assert named in section, f"{piece} is not explained"
