"""The layering of DESIGN.md: histstore/ never imports typer or the layers above it,
never prints or exits; plumbing/ never imports porcelain/; the installed
distribution claims no generic top-level import names."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports(folder: str) -> list[tuple[str, str]]:
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out += [(path.name, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                out.append((path.name, node.module))
    return out


def test_library_imports_only_stdlib_and_its_dependencies() -> None:
    allowed_third_party = {"blake3", "filelock", "tomli_w", "zstandard", "yaml"}
    for name, mod in imports("histstore"):
        top = mod.split(".")[0]
        assert top not in {"typer", "click", "rich"}, f"{name} imports {mod}"
        assert not mod.startswith(("histstore.plumbing", "histstore.porcelain")), f"{name}: {mod}"
        if top != "histstore":
            assert top in sys.stdlib_module_names or top in allowed_third_party, f"{name}: {mod}"


def test_library_never_prints_or_exits() -> None:
    for path in (ROOT / "histstore").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                assert name not in {"print", "exit", "_exit"}, f"{path.name} calls {name}"


def test_plumbing_does_not_import_porcelain() -> None:
    for name, mod in imports("plumbing"):
        assert not mod.startswith("histstore.porcelain"), f"plumbing/{name} imports {mod}"


def test_packages_live_under_the_histstore_namespace() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pkgs = cfg["tool"]["setuptools"]["packages"]
    assert all(p == "histstore" or p.startswith("histstore.") for p in pkgs)
    mapping = cfg["tool"]["setuptools"]["package-dir"]
    assert mapping["histstore.plumbing"] == "plumbing"
    assert mapping["histstore.porcelain"] == "porcelain"


@pytest.mark.skipif(
    subprocess.run(
        [sys.executable, "-c", "import setuptools.command.bdist_wheel"], capture_output=True
    ).returncode,
    reason="setuptools is not installed in this environment",
)
def test_built_wheel_claims_only_histstore(tmp_path: Path) -> None:
    # build from a copy: a build writes build/ and egg-info beside its sources
    src = tmp_path / "src"
    for name in ("histstore", "plumbing", "porcelain"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("histstore-*.whl"))
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"histstore"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "histstore/plumbing/cli.py" in names and "histstore/porcelain/cli.py" in names
