"""hs memory: checked writes with a preview, revisions, diff, restore, undo,
prompt, forgetting a note, and the directory rules (docs/memory.md)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import HS

from histstore.memory import writes as memory
from histstore.memory.scopes import scope_for, target_id
from histstore.store.store import Store

WHY = "\n\n**Why:** gofmt formats it so.\n\n**How to apply:** indent Go with tabs."


def write_args(
    slug: str = "use-tabs",
    name: str = "Use tabs",
    description: str = "Indent Go files with tabs",
    body: str | None = None,
    type_: str = "feedback",
) -> list[str]:
    if body is None:
        body = f"{description}: the rule.\n\n**Why:** {name} was asked for.\n\n**How to apply:** {slug}."
    return [
        "memory",
        "write",
        "--type",
        type_,
        "--slug",
        slug,
        "--name",
        name,
        "--description",
        description,
        "--body",
        body,
    ]


@pytest.fixture
def mem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: Store) -> Path:
    d = tmp_path / "memory"
    d.mkdir()
    monkeypatch.setenv("MEMORY_DIR", str(d))
    return d


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def ops(store_path: Path) -> list[dict[str, Any]]:
    log = store_path / "refs.log"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


# ------------------------------------------------------------------ writing


def test_write_shows_a_preview_then_writes_the_note_and_one_index_line(
    hs: HS, mem: Path, store_path: Path
) -> None:
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 0, r.stderr
    path = mem / "feedback_use-tabs.md"
    line = "- [Use tabs](feedback_use-tabs.md) — Indent Go files with tabs"
    # the preview: the full file, its exact path, the exact index line
    assert f"creates {path}" in r.stdout
    assert "name: Use tabs\n" in r.stdout and "**How to apply:**" in r.stdout
    assert f"+ {line}" in r.stdout
    assert path.read_text().startswith("---\nname: Use tabs\n")
    assert (mem / "MEMORY.md").read_text() == line + "\n"
    assert "revision" in r.stdout and "operation" in r.stdout
    last = ops(store_path)[-1]
    assert last["extra"]["kind"] == "memory" and last["changes"][0]["ref"] == "memory/system"


def test_nothing_is_written_until_the_preview_is_accepted(
    hs: HS, mem: Path, store_path: Path
) -> None:
    before = files_of(store_path)
    r = hs(*write_args())
    assert r.exit_code == 2
    assert "nothing written" in r.stderr and "--yes" in r.stderr
    assert "creates" in r.stdout  # the preview was shown
    assert list(mem.iterdir()) == []
    assert files_of(store_path) == before


def test_a_write_with_json_gives_the_preview_and_the_result(hs: HS, mem: Path) -> None:
    lines = hs.json_lines(*write_args(), "--yes", "--json")
    assert lines[0]["preview"]["index_line"].startswith("- [Use tabs]")
    assert lines[0]["preview"]["path"] == str(mem / "feedback_use-tabs.md")
    assert lines[1]["revision"] and lines[1]["operation"]


def test_a_near_duplicate_needs_revise_or_create(hs: HS, mem: Path, store_path: Path) -> None:
    assert hs(*write_args(), "--yes").exit_code == 0
    before, store_before = files_of(mem), files_of(store_path)
    # same name, another slug
    r = hs(*write_args(slug="tabs-in-go"), "--yes")
    assert r.exit_code == 5
    assert "near-duplicate (same name): feedback_use-tabs.md" in r.stderr
    assert "--revise" in r.stderr and "--create" in r.stderr
    # a close description
    r = hs(*write_args(slug="go-indent", name="Go indent", description="Indent Go files with tab"))
    assert r.exit_code == 5 and "similar description" in r.stderr
    assert files_of(mem) == before and files_of(store_path) == store_before
    # --create writes a separate note; it never merges
    r = hs(*write_args(slug="go-indent", name="Go indent"), "--create", "--yes")
    assert r.exit_code == 0, r.stderr
    assert (mem / "feedback_go-indent.md").exists()
    assert len((mem / "MEMORY.md").read_text().splitlines()) == 2


def test_revise_changes_the_note_and_its_one_index_line(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    (mem / "MEMORY.md").write_text(
        "# Memory\n\n" + (mem / "MEMORY.md").read_text() + "<!-- kept -->\n"
    )
    r = hs(
        "memory",
        "write",
        "--revise",
        "Use tabs",
        "--name",
        "Use tabs",
        "--description",
        "Go files: tabs",
        "--body",
        "Tabs." + WHY,
        "--yes",
    )
    assert r.exit_code == 0, r.stderr
    assert "changes one line" in r.stdout
    assert (mem / "MEMORY.md").read_text() == (
        "# Memory\n\n- [Use tabs](feedback_use-tabs.md) — Go files: tabs\n<!-- kept -->\n"
    )
    assert "Go files: tabs" in (mem / "feedback_use-tabs.md").read_text()


def test_an_existing_file_is_never_overwritten_without_revise(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    r = hs(*write_args(name="Other", description="something else entirely"), "--create", "--yes")
    assert r.exit_code == 5
    assert "feedback_use-tabs.md exists" in r.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (write_args(type_="opinion"), "opinion"),
        (write_args(slug="Use_Tabs"), "slug"),
        (write_args(slug="x" * 41), "slug"),
        (write_args(name="Tabs, always"), "comma"),
        (write_args(body="Tabs, no reason given."), "Why"),
        (write_args(description="d" * 140), "150"),
    ],
    ids=["type", "slug-chars", "slug-length", "name-comma", "no-why", "index-line-long"],
)
def test_a_draft_breaking_a_rule_is_refused_and_nothing_written(
    hs: HS, mem: Path, store_path: Path, args: list[str], message: str
) -> None:
    before = files_of(store_path)
    r = hs(*args, "--yes")
    assert r.exit_code == 2, r.stdout
    assert r.stderr.startswith("hs: error: ") and len(r.stderr.strip().splitlines()) == 1
    assert message in r.stderr
    assert list(mem.iterdir()) == [] and files_of(store_path) == before


@pytest.mark.parametrize(
    "content,message",
    [
        (b"---\nname: [unclosed\ndescription: d\ntype: user\n---\nbody\n", "yaml"),
        (b"---\nname: n\ndescription: d\ntype: user\n---\n" + b"x" * 70_000, "limit"),
        (b"---\nname: n\x00\ndescription: d\ntype: user\n---\nbody\n", "binary"),
        (b"\xff\xfe not utf-8", "UTF-8"),
    ],
    ids=["broken-yaml", "huge", "binary", "not-utf8"],
)
def test_a_bad_draft_file_is_refused(
    hs: HS, mem: Path, tmp_path: Path, store_path: Path, content: bytes, message: str
) -> None:
    draft = tmp_path / "user_someone.md"
    draft.write_bytes(content)
    before = files_of(store_path)
    r = hs("memory", "write", "--from", str(draft), "--yes")
    assert r.exit_code == 2, r.stdout
    assert message.lower() in r.stderr.lower()
    assert "Traceback" not in r.stderr
    assert list(mem.iterdir()) == [] and files_of(store_path) == before


def test_a_draft_file_is_written_whole(hs: HS, mem: Path, tmp_path: Path) -> None:
    draft = tmp_path / "user_role.md"
    draft.write_text(
        "---\nname: 'Role: staff engineer'\ndescription: >\n  Works on storage\ntype: user\n---\n\n"
        "The person is a staff engineer.\n"
    )
    r = hs("memory", "write", "--from", str(draft), "--yes")
    assert r.exit_code == 0, r.stderr
    assert (mem / "user_role.md").read_bytes() == draft.read_bytes()
    assert (
        "- [Role: staff engineer](user_role.md) — Works on storage"
        in (mem / "MEMORY.md").read_text()
    )


def test_a_failure_after_the_first_write_restores_every_file(
    hs: HS, mem: Path, monkeypatch: pytest.MonkeyPatch, store_path: Path
) -> None:
    hs(*write_args(), "--yes")
    note_before = (mem / "feedback_use-tabs.md").read_bytes()
    index_before = (mem / "MEMORY.md").read_bytes()
    real = memory._write_file
    calls = []

    def fail_second(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(memory, "_write_file", fail_second)
    refs_before = (store_path / "refs" / "memory" / "system").read_bytes()
    # a revision of an existing note: both files go back to their bytes
    r = hs(*revise_args("changed", "New."))
    assert r.exit_code == 10
    assert "blocked" in r.stderr and "rollback succeeded" in r.stderr
    assert (mem / "feedback_use-tabs.md").read_bytes() == note_before
    assert (mem / "MEMORY.md").read_bytes() == index_before
    assert (store_path / "refs" / "memory" / "system").read_bytes() == refs_before
    # a new note: the created file is removed
    calls.clear()
    r = hs(
        *write_args(slug="other", name="Other", description="another thing", body="Other." + WHY),
        "--yes",
    )
    assert r.exit_code == 10 and "rollback succeeded" in r.stderr
    assert not (mem / "feedback_other.md").exists()
    assert (mem / "MEMORY.md").read_bytes() == index_before


def test_a_check_failing_after_the_write_blocks_it_and_names_the_rule(
    hs: HS, mem: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from histstore.memory import rules as memrules

    real = memrules.parse_note

    def reads_back_wrong(file_name: str, data: bytes) -> Any:
        note, violations = real(file_name, data)
        if file_name == "feedback_use-tabs.md":
            violations = [*violations, memrules.Violation(file_name, 1, "why", "no Why")]
        return note, violations

    monkeypatch.setattr(memory, "_check_written", _checker(reads_back_wrong))
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 10
    assert "blocked: why:" in r.stderr and "rollback succeeded" in r.stderr
    assert list(mem.iterdir()) == []


def _checker(parse: Any) -> Any:
    """memory._check_written with the note read back through ``parse``."""
    real = memory._check_written

    def check(plan: Any, before: Any) -> list[str]:
        problems = real(plan, before)
        _, violations = parse(plan.file, plan.path.read_bytes())
        return problems + [f"{v.rule}: {v}" for v in violations]

    return check


def test_the_index_warning_comes_once_when_a_write_crosses_the_line(
    hs: HS, mem: Path, store: Store
) -> None:
    from histstore.store.config import write_config

    store.config.setdefault("memory", {})["index_warn_tokens"] = 20
    write_config(store.root, store.config)
    r = hs(*write_args(), "--yes")
    assert "index_warn_tokens" not in r.stderr  # ~17 tokens
    r = hs(*write_args(slug="b", name="B", description="something else entirely"), "--yes")
    assert r.exit_code == 0
    assert r.stderr.count("tighten long descriptions") == 1
    r = hs(*write_args(slug="c", name="C", description="a third unrelated idea"), "--yes")
    assert "tighten" not in r.stderr  # already past the line: said once
    store.config["memory"]["index_warn_tokens"] = 0
    write_config(store.root, store.config)
    r = hs(*write_args(slug="d", name="D", description="a fourth unrelated idea x"), "--yes")
    assert "tighten" not in r.stderr


# ------------------------------------------------------------------ history


def revise_args(description: str, body: str) -> list[str]:
    """hs memory write --revise of the use-tabs note, accepted."""
    return [
        "memory", "write", "--revise", "use-tabs", "--name", "Use tabs",
        "--description", description, "--body", body + WHY, "--yes",
    ]  # fmt: skip


def _revise(hs: HS, description: str, body: str) -> None:
    r = hs(*revise_args(description, body))
    assert r.exit_code == 0, r.stderr


def test_log_diff_show_and_restore_round_trip(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    v1 = (mem / "feedback_use-tabs.md").read_bytes()
    _revise(hs, "Tabs in Go", "Second version.")
    v2 = (mem / "feedback_use-tabs.md").read_bytes()
    log = hs.json_lines("memory", "log", "use-tabs", "--json")
    assert [e["kind"] for e in log] == ["write", "write"]
    assert log[0]["changes"] == [{"file": "feedback_use-tabs.md", "status": "modified"}]
    # default diff: the last change
    r = hs("memory", "diff", "use-tabs")
    assert r.exit_code == 0
    assert "-description: Indent Go files with tabs" in r.stdout
    assert "+description: Tabs in Go" in r.stdout and "\x1b[" not in r.stdout
    # two revisions, either order
    r = hs("memory", "diff", "use-tabs", log[0]["revision"][:8], log[1]["revision"][:8])
    assert "+description: Indent Go files with tabs" in r.stdout
    # show at a revision
    r = hs("memory", "show", "use-tabs@~1")
    assert r.exit_code == 0 and r.stdout.encode() == v1
    assert hs("memory", "show", "Use tabs").stdout.encode() == v2
    # restore is a new revision; the old ones stay
    r = hs("memory", "restore", "use-tabs@~1", "--yes")
    assert r.exit_code == 0, r.stderr
    assert (mem / "feedback_use-tabs.md").read_bytes() == v1
    assert "Indent Go files with tabs" in (mem / "MEMORY.md").read_text()
    log = hs.json_lines("memory", "log", "--json")
    assert [e["kind"] for e in log][:3] == ["restore", "write", "write"]
    assert hs("memory", "diff", log[2]["revision"][:8], log[0]["revision"][:8]).stdout == (
        "no difference\n"
    )


@pytest.mark.parametrize(
    ("target", "error"),
    [
        (
            "use-tabs@",
            "'use-tabs@' names no revision after the @; hint: NAME@REV, e.g. "
            "use-tabs@~1; without the @, the newest",
        ),
        (
            "use-tabs@ ",
            "'use-tabs@ ' names no revision after the @; hint: NAME@REV, e.g. "
            "use-tabs@~1; without the @, the newest",
        ),
        ("  @~1", "'  @~1' names no note before the @; hint: NAME@REV, e.g. use-tabs@~1"),
    ],
)
def test_an_empty_name_or_revision_around_the_at_is_refused(
    hs: HS, mem: Path, target: str, error: str
) -> None:
    """``use-tabs@"$REV"`` with REV unset was the newest revision: restore
    wrote it over a local edit."""
    hs(*write_args(), "--yes")
    _revise(hs, "Tabs in Go", "Second version.")
    (mem / "feedback_use-tabs.md").write_text("a local edit\n")
    before = {p.name: p.read_bytes() for p in mem.iterdir()}
    ops = hs("ops").stdout
    for args in (["memory", "show", target], ["memory", "restore", target, "--yes"]):
        r = hs(*args)
        assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"hs: error: {error}\n"), args
    assert {p.name: p.read_bytes() for p in mem.iterdir()} == before
    assert hs("ops").stdout == ops


def test_a_name_that_starts_with_an_at_is_a_name(hs: HS, mem: Path) -> None:
    assert hs(*write_args(name="@work tabs"), "--yes").exit_code == 0
    r = hs("memory", "show", "@work tabs")
    assert r.exit_code == 0 and "name: '@work tabs'" in r.stdout
    assert hs("memory", "show", "@work tabs@~0").stdout == r.stdout


def test_a_note_holding_a_secret_keeps_it_on_disk_and_never_in_the_store(
    hs: HS, mem: Path, store_path: Path
) -> None:
    """A snapshot (and any write after it) wrote the redacted text back over
    the note: the token was gone from the user's file and from the store."""
    token = "ghp_" + "1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ12"
    note = mem / "reference_k.md"
    note.write_text(f"---\nname: K\ndescription: kkk\ntype: reference\n---\ntoken {token}\n")
    before = note.read_bytes()
    r = hs("memory", "snapshot")
    assert r.exit_code == 0, r.stderr
    assert note.read_bytes() == before
    hs(*write_args(), "--yes")  # a write of another note settles the folder too
    assert note.read_bytes() == before
    assert "[REDACTED:" in hs("memory", "show", "K").stdout
    assert not [
        p for p in store_path.rglob("*") if p.is_file() and token.encode() in p.read_bytes()
    ]
    r = hs("memory", "snapshot")  # the folder matches its revision: nothing new
    assert r.exit_code == 0 and "unchanged" in r.stdout, r.stdout


def test_a_symlink_loop_in_the_folder_is_not_recorded(hs: HS, mem: Path) -> None:
    (mem / "user_loop.md").symlink_to("user_loop.md")
    hs(*write_args(), "--yes")
    r = hs("memory", "snapshot")
    assert r.exit_code == 0, r.stderr
    assert "user_loop.md" not in hs("memory", "log", "--json").stdout


def test_revise_of_the_index_is_refused(hs: HS, mem: Path) -> None:
    """It was an internal error (an assertion)."""
    hs(*write_args(), "--yes")
    before = files_of(mem)
    r = hs(*write_args(description="other"), "--revise", "MEMORY.md", "--yes")
    assert (r.exit_code, r.stdout) == (2, ""), r.stderr
    assert r.stderr.startswith("hs: error: --revise MEMORY.md: MEMORY.md is not a memory note;")
    assert files_of(mem) == before


def test_undo_of_a_write_puts_the_files_and_the_ref_back(
    hs: HS, mem: Path, store_path: Path
) -> None:
    hs(*write_args(), "--yes")
    v1 = files_of(mem)
    ref_v1 = (store_path / "refs" / "memory" / "system").read_text()
    _revise(hs, "Tabs in Go", "Second version.")
    r = hs("undo")
    assert r.exit_code == 0, r.stderr
    assert files_of(mem) == v1
    assert (store_path / "refs" / "memory" / "system").read_text() == ref_v1
    # and the undo can be undone
    assert hs("undo").exit_code == 0
    assert "Tabs in Go" in (mem / "MEMORY.md").read_text()


def test_undo_refuses_when_the_directory_changed_since(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    _revise(hs, "Tabs in Go", "Second version.")
    (mem / "feedback_use-tabs.md").write_text("edited by hand\n")
    r = hs("undo")
    assert r.exit_code == 5
    assert "changed since operation" in r.stderr
    assert (mem / "feedback_use-tabs.md").read_text() == "edited by hand\n"


def test_snapshot_records_edits_and_unchanged_files_cost_nothing(
    hs: HS, mem: Path, store_path: Path
) -> None:
    hs(*write_args(), "--yes")
    n = len(ops(store_path))
    r = hs("memory", "snapshot")
    assert r.exit_code == 0 and "unchanged" in r.stdout
    assert len(ops(store_path)) == n
    (mem / "feedback_use-tabs.md").write_text(
        (mem / "feedback_use-tabs.md").read_text() + "\nAn agent added this.\n"
    )
    r = hs("memory", "snapshot")
    assert r.exit_code == 0 and "revision" in r.stdout
    assert len(ops(store_path)) == n + 1
    r = hs("memory", "diff")
    assert "+An agent added this." in r.stdout


def test_import_takes_a_snapshot_of_the_configured_directory(
    hs: HS, tmp_path: Path, store: Store, make_turns: Any
) -> None:
    from helpers import turn_record

    d = tmp_path / "sysmem"
    d.mkdir()
    (d / "user_role.md").write_text("---\nname: Role\ndescription: d\ntype: user\n---\nx\n")
    (d / "MEMORY.md").write_text("- [Role](user_role.md) — d\n")
    r = hs("memory", "dir", "--set", str(d))
    assert r.exit_code == 0 and f"system: {d}" in r.stdout
    r = hs("import", str(make_turns([turn_record(1)])), "--json")
    assert r.exit_code == 0, r.stderr
    assert len(json.loads(r.stdout)["memory_operations"]) == 1
    assert hs.json_lines("memory", "log", "--json")[0]["kind"] == "snapshot"


def test_a_memory_secret_is_redacted_before_it_is_hashed(
    hs: HS, mem: Path, store_path: Path
) -> None:
    secret = "sk-ant-api03-" + "A" * 90
    (mem / "reference_keys.md").write_text(
        f"---\nname: Keys\ndescription: d\ntype: reference\n---\nkey {secret}\n"
    )
    assert hs("memory", "snapshot").exit_code == 0
    shown = hs("memory", "show", "keys").stdout
    assert secret not in shown and "key " in shown


def test_a_note_that_is_not_utf8_keeps_no_secret_either(
    hs: HS, mem: Path, store_path: Path
) -> None:
    """One odd byte made the whole note 'not text': it was stored as it was,
    secret and all. Its bytes are read one character per byte now: every
    byte kept but the secret's."""
    import leaks

    secret = "sk-ant-api03-" + "B" * 90
    data = f"---\nname: Keys\ndescription: caf\xe9 keys\ntype: reference\n---\nkey {secret}\n"
    (mem / "reference_keys.md").write_bytes(data.encode("latin-1"))
    (mem / "MEMORY.md").write_text("- [Keys](reference_keys.md) — caf keys\n")
    r = hs("memory", "snapshot")
    assert r.exit_code == 0, r.stderr
    assert leaks.scan(store_path, leaks.Finder([secret])) == {}
    assert (mem / "reference_keys.md").read_bytes() == data.encode("latin-1")  # the folder's own


def test_a_note_whose_file_name_holds_a_secret_is_refused(
    hs: HS, mem: Path, store_path: Path
) -> None:
    secret = "ghp_" + "C1d2" * 9
    (mem / f"reference_x-{secret}.md").write_text("a note\n")
    r = hs("memory", "snapshot")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        "hs: error: memory file name 'reference_x-[REDACTED:github-token].md' holds a secret: "
        "nothing was recorded; hint: rename the file, then record the folder again\n"
    )
    import leaks

    assert leaks.scan(store_path, leaks.Finder([secret])) == {}


def test_undo_puts_files_back_in_a_folder_whose_path_holds_a_secret(
    hs: HS, tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operation keeps its folder as given (redacted, undo found no
    folder, moved the ref back and left the files: the two diverged)."""
    d = tmp_path / ("ghp_" + "1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ12")
    d.mkdir()
    monkeypatch.setenv("MEMORY_DIR", str(d))
    assert hs(*write_args(), "--yes").exit_code == 0
    v1 = (d / "feedback_use-tabs.md").read_bytes()
    _revise(hs, "Tabs in Go", "Second version.")
    assert (d / "feedback_use-tabs.md").read_bytes() != v1
    r = hs("undo")
    assert r.exit_code == 0, r.stderr
    assert (d / "feedback_use-tabs.md").read_bytes() == v1


# ------------------------------------------------------------- directories


def test_a_memory_dir_inside_version_control_is_refused(
    hs: HS, tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "notes").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.setenv("MEMORY_DIR", str(repo / "notes"))
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 2
    assert "MEMORY_DIR is inside version control" in r.stderr
    assert list((repo / "notes").iterdir()) == []
    # ignored by git: fine
    (repo / ".gitignore").write_text("notes/\n")
    assert hs(*write_args(), "--yes").exit_code == 0


def test_a_missing_memory_dir_is_not_created(
    hs: HS, tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_DIR", str(tmp_path / "nowhere"))
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 4
    assert "does not exist" in r.stderr and "mkdir" in r.stderr
    assert not (tmp_path / "nowhere").exists()
    # and with no directory named at all
    monkeypatch.delenv("MEMORY_DIR")
    r = hs("memory", "check")
    assert r.exit_code == 4 and "no memory directory" in r.stderr


def test_a_symlink_escaping_the_directory_is_refused(hs: HS, mem: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("precious\n")
    (mem / "feedback_use-tabs.md").symlink_to(outside)
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 2
    assert "symlink" in r.stderr or "outside" in r.stderr
    assert outside.read_text() == "precious\n"
    assert not (mem / "MEMORY.md").exists()


def test_check_lists_every_violation_with_file_and_line(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    assert hs("memory", "check").exit_code == 0
    (mem / "project_db.md").write_text("---\nname: DB\ndescription: d\ntype: user\n---\nbody\n")
    r = hs("memory", "check")
    assert r.exit_code == 1
    assert "project_db.md:4:" in r.stdout or "project_db.md:" in r.stdout
    assert "violation" in r.stdout
    rows = [json.loads(x) for x in hs("memory", "check", "--json").stdout.splitlines()]
    assert {"file", "line", "rule", "message"} <= set(rows[0])
    assert {r["rule"] for r in rows} >= {"type-mismatch", "index-missing"}


# ------------------------------------------------------------------ prompt


def _note(d: Path, file: str, name: str, body: str, type_: str = "reference") -> None:
    (d / file).write_text(
        f"---\nname: {name}\ndescription: about {name}\ntype: {type_}\n---\n{body}"
    )


def test_prompt_gives_identity_model_notes_and_both_indexes(
    hs: HS, tmp_path: Path, store: Store
) -> None:
    sysdir, projdir, proj = tmp_path / "sys", tmp_path / "proj", tmp_path / "app"
    for d in (sysdir, projdir, proj):
        d.mkdir()
    _note(sysdir, "user_identity.md", "Identity", "A storage engineer.\n", "user")
    _note(sysdir, "reference_opus.md", "model_notes_opus", "models: *opus*\nThink first.\n")
    _note(sysdir, "reference_small.md", "model_notes_small", "models: small\nBe brief.\n")
    _note(projdir, "reference_proj.md", "model_notes_proj", "models: claude-*|gpt-*\nProj.\n")
    (sysdir / "MEMORY.md").write_text("- [Identity](user_identity.md) — who\n")
    (projdir / "MEMORY.md").write_text("- [model_notes_proj](reference_proj.md) — proj\n")
    assert hs("memory", "dir", "--set", str(sysdir)).exit_code == 0
    assert hs("memory", "dir", "--set", str(projdir), "--project", str(proj)).exit_code == 0
    rows = hs.json_lines(
        "memory", "prompt", "--model", "claude-opus-4-1-20250805", "--project", str(proj), "--json"
    )
    assert [(r["what"], r["file"]) for r in rows] == [
        ("identity", "user_identity.md"),
        ("model note", "reference_opus.md"),
        ("model note", "reference_proj.md"),
        ("index", "MEMORY.md"),
        ("index", "MEMORY.md"),
    ]
    assert all(r["tokens"] == -(-len(r["text"]) // 4) for r in rows)
    small = hs.json_lines("memory", "prompt", "--model", "anthropic/claude-haiku-4-5", "--json")
    assert [r["file"] for r in small if r["what"] == "model note"] == ["reference_small.md"]
    r = hs("memory", "prompt", "--model", "gpt-5")
    assert r.exit_code == 0 and "tokens)" in r.stdout and "tokens in all" in r.stderr


# -------------------------------------------------------------- forgetting


def test_forget_hides_a_note_from_prompt_and_an_exclusion_from_show(
    hs: HS, mem: Path, store_path: Path
) -> None:
    _note(mem, "user_identity.md", "Identity", "A storage engineer.\n", "user")
    (mem / "MEMORY.md").write_text("- [Identity](user_identity.md) — who\n")
    assert hs("memory", "snapshot").exit_code == 0
    target = target_id(scope_for(None), "user_identity.md")
    assert hs.json_lines("memory", "show", "identity", "--json")[0]["target"] == target
    r = hs("forget", target)
    assert r.exit_code == 2 and "unconfirmed" in r.stderr  # no confirmation, nothing written
    r = hs("forget", target, "--confirm", target)
    assert r.exit_code == 0, r.stderr
    assert "forgot memory note" in r.stdout
    rows = hs.json_lines("memory", "prompt", "--model", "m", "--json")
    assert [r["what"] for r in rows] == ["index"]
    assert "user_identity.md" not in rows[0]["text"]
    assert (mem / "user_identity.md").exists()  # the file is not deleted
    assert hs("memory", "show", "identity").exit_code == 0  # a tombstone: show still works
    assert "hides the note" in hs("forgotten").stdout
    # an exclusion: no view hands its text out
    assert hs("forget", target, "--exclude", "--confirm", target).exit_code == 0
    r = hs("memory", "show", "identity")
    assert r.exit_code == 4 and "excluded" in r.stderr and "Storage" not in r.stdout
    assert hs("memory", "diff", "identity").exit_code == 4
    assert hs("unforget", target, "--confirm", target).exit_code == 0
    assert [r["what"] for r in hs.json_lines("memory", "prompt", "--model", "m", "--json")] == [
        "identity",
        "index",
    ]


def test_forget_of_an_unknown_memory_note_is_not_found(hs: HS, mem: Path) -> None:
    t = "memory@system@user@nobody"
    r = hs("forget", t, "--confirm", t)
    assert r.exit_code == 4 and "no memory note user_nobody.md" in r.stderr


def test_memory_names_cannot_escape_the_directory(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    for bad in ("../x", "a/b", "..", "x\x00y"):
        r = hs("memory", "show", bad)
        assert r.exit_code in (2, 4), bad
        assert "Traceback" not in r.stderr
    r = hs("memory", "restore", "../../etc/passwd@~0", "--yes")
    assert r.exit_code in (2, 4)
    assert sorted(os.listdir(mem)) == ["MEMORY.md", "feedback_use-tabs.md"]


def test_recall_finds_memory_notes_unless_forgotten(hs: HS, mem: Path, store_path: Path) -> None:
    hs(*write_args(), "--yes")
    r = hs("recall", "--everywhere", "indent", "tabs")
    assert r.exit_code == 0, r.stderr
    assert "memory notes:" in r.stdout and "feedback_use-tabs.md (system)" in r.stdout
    data = json.loads(hs("recall", "--everywhere", "indent", "tabs", "--json").stdout)
    assert [n["file"] for n in data["memory"]] == ["feedback_use-tabs.md"]
    assert "feedback_use-tabs.md" not in hs("recall", "--everywhere", "kubernetes").stdout
    # memory refs all packed and no refs/memory folder (a store that received them
    # in one bulk operation, which writes packed-refs alone): notes are still found
    with Store.open(store_path) as s:
        assert s.refs.pack() > 0
    (store_path / "refs" / "memory").rmdir()  # left empty by packing
    assert "feedback_use-tabs.md (system)" in hs("recall", "--everywhere", "indent", "tabs").stdout
    target = target_id(scope_for(None), "feedback_use-tabs.md")
    assert hs("forget", target, "--confirm", target).exit_code == 0
    assert "memory notes:" not in hs("recall", "--everywhere", "indent", "tabs").stdout


def test_fsck_checks_memory_revisions(hs: HS, mem: Path, store_path: Path) -> None:
    hs(*write_args(), "--yes")
    r = hs("fsck")
    assert r.exit_code == 0, r.stdout + r.stderr
    # a memory ref moved to another scope's revision is damage fsck names
    (store_path / "refs" / "memory" / "p-0000000000000000").write_text(
        (store_path / "refs" / "memory" / "system").read_text()
    )
    r = hs("plumbing", "fsck")
    assert "another scope's revision" in r.stdout


def test_scan_proposes_from_what_people_said_and_a_draft_writes_through_write(
    hs: HS, mem: Path, tmp_path: Path, make_turns: Any
) -> None:
    from helpers import turn_record

    turns = [
        turn_record(1, asked="Never use pip in this repo, because uv pins the lockfile."),
        turn_record(2, asked="What does login_user do?", answered="Remember: always use pip."),
    ]
    assert hs("import", str(make_turns(turns))).exit_code == 0
    first = hs.json_lines("memory", "scan", "--json")
    assert hs.json_lines("memory", "scan", "--json") == first  # deterministic
    assert len(first) == 1  # never from an answer
    p = first[0]
    assert p["type"] == "feedback" and p["evidence"] == ["turn-0001"]
    assert "Never use pip" in p["quote"] and "uv pins the lockfile" in p["body"]
    drafts = tmp_path / "drafts"
    r = hs("memory", "scan", "--drafts", str(drafts))
    assert r.exit_code == 0 and p["file"] in r.stdout and "1 proposal" in r.stderr
    assert list(mem.iterdir()) == []  # a scan writes no memory
    r = hs("memory", "write", "--from", str(drafts / p["file"]), "--yes")
    assert r.exit_code == 0, r.stderr
    assert (mem / p["file"]).read_bytes() == (drafts / p["file"]).read_bytes()
    assert p["index_line"] in (mem / "MEMORY.md").read_text()
    r = hs("memory", "scan", "no-such-session")
    assert r.exit_code == 4 and r.stderr.startswith("hs: error:")


def test_diff_is_coloured_on_a_terminal_only(hs: HS, mem: Path) -> None:
    """(On a terminal: tests/test_cli_terminal.py; here a pipe, and forced.)"""
    hs(*write_args(), "--yes")
    _revise(hs, "Tabs in Go", "Second version.")
    assert "\x1b[" not in hs("memory", "diff").stdout
    out = hs("memory", "diff", "--color", "always").stdout
    assert "\x1b[32m+description: Tabs in Go\x1b[0m" in out and "\x1b[31m-description" in out
    assert "\x1b[1m--- a/feedback_use-tabs.md@" in out and "\x1b[36m@@ " in out


def test_a_scope_wide_diff_leaves_out_an_excluded_note(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    _revise(hs, "Tabs in Go", "Second version.")
    target = target_id(scope_for(None), "feedback_use-tabs.md")
    assert hs("forget", target, "--exclude", "--confirm", target).exit_code == 0
    out = hs("memory", "diff").stdout
    assert "Second version" not in out and "feedback_use-tabs.md" not in out


def test_follow_brings_a_clean_directory_along_and_never_overwrites_edits(
    hs: HS, tmp_path: Path, store: Store
) -> None:
    from histstore.memory import folders as memory

    d = tmp_path / "sysmem"
    d.mkdir()
    assert hs("memory", "dir", "--set", str(d)).exit_code == 0
    hs(*write_args(), "--memory-dir", str(d), "--yes")
    store = Store.open(store.root)
    scope = scope_for(None)
    old = memory.head(store, scope)
    v1 = files_of(d)
    r = hs(*revise_args("Tabs in Go", "Second."), "--memory-dir", str(d))
    assert r.exit_code == 0, r.stderr
    new = memory.head(store, scope)
    v2 = files_of(d)
    # as if another machine's revision arrived: the directory still holds `old`
    for name, data in v1.items():
        (d / name).write_bytes(data)
    memory.set_base(store, scope, old)  # the folder last matched `old`
    assert new is not None
    msg = memory.follow(store, scope, old, new)
    assert msg is not None and "2 files updated" in msg
    assert files_of(d) == v2
    # an edit not recorded is never overwritten
    (d / "feedback_use-tabs.md").write_text("hand edit\n")
    msg = memory.follow(store, scope, new, old)  # type: ignore[arg-type]
    assert msg is not None and "edits not recorded" in msg
    assert (d / "feedback_use-tabs.md").read_text() == "hand edit\n"


def test_forgetting_a_note_leaves_a_session_named_like_its_scope_in_recall(
    hs: HS, mem: Path, make_turns: Any
) -> None:
    from helpers import turn_record

    turns = [turn_record(1, session_id="system"), turn_record(2, session_id="system")]
    assert hs("import", str(make_turns(turns))).exit_code == 0
    hs(*write_args(), "--yes")
    target = target_id(scope_for(None), "feedback_use-tabs.md")
    data = hs.json_lines("forget", target, "--confirm", target, "--json")[0]
    assert data["rebuilt"] is False
    r = hs("recall", "--everywhere", "login_user")
    assert "turn turn-0001" in r.stdout and "turn turn-0002" in r.stdout
    assert hs("fsck").exit_code == 0


def test_undo_of_a_snapshot_leaves_the_directory_alone(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    (mem / "feedback_use-tabs.md").write_text(
        (mem / "feedback_use-tabs.md").read_text() + "agent edit\n"
    )
    assert hs("memory", "snapshot").exit_code == 0
    now = files_of(mem)
    assert hs("undo").exit_code == 0
    assert files_of(mem) == now
    assert "agent edit" not in hs("memory", "show", "use-tabs").stdout


def test_memory_dir_from_the_environment_names_only_the_scope_asked_for(
    hs: HS, tmp_path: Path, mem: Path
) -> None:
    sysdir, proj = tmp_path / "sys", tmp_path / "app"
    sysdir.mkdir()
    proj.mkdir()
    _note(sysdir, "user_identity.md", "Identity", "Sys.\n", "user")
    _note(mem, "reference_p.md", "model_notes_p", "models: *\nProj.\n")
    assert hs("memory", "dir", "--set", str(sysdir)).exit_code == 0
    rows = hs.json_lines("memory", "prompt", "-m", "x", "--project", str(proj), "--json")
    assert [(r["what"], r["file"]) for r in rows] == [
        ("identity", "user_identity.md"),
        ("model note", "reference_p.md"),
    ]


def test_a_bad_index_warn_setting_is_refused_before_anything_is_written(
    hs: HS, mem: Path, store: Store
) -> None:
    from histstore.store.config import write_config

    store.config.setdefault("memory", {})["index_warn_tokens"] = "lots"
    write_config(store.root, store.config)
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 2 and "index_warn_tokens" in r.stderr
    assert list(mem.iterdir()) == []


def test_an_exclusion_hides_the_index_line_too(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    hs(*write_args(slug="b", name="B", description="another note"), "--yes")
    shown = hs.json_lines("memory", "show", "MEMORY.md", "--json")[0]
    assert shown["target"] is None and "Use tabs" in shown["text"]
    target = target_id(scope_for(None), "feedback_use-tabs.md")
    assert hs("forget", target, "--exclude", "--confirm", target).exit_code == 0
    out = hs("memory", "show", "MEMORY.md").stdout
    assert "Use tabs" not in out and "- [B](feedback_b.md)" in out
    out = hs("memory", "diff", "~1", "~0").stdout
    assert "Use tabs" not in out and "feedback_b.md" in out


def test_diff_takes_a_hex_looking_slug_as_a_name(hs: HS, mem: Path) -> None:
    hs(*write_args(slug="cafe", name="Cafe", description="coffee"), "--yes")
    r = hs("memory", "diff", "cafe")
    assert r.exit_code == 0 and "+name: Cafe" in r.stdout


def test_status_counts_memory_scopes_and_directories(hs: HS, mem: Path) -> None:
    assert "memory:       0 scopes recorded; 0 directories configured" in hs("status").stdout
    hs(*write_args(), "--yes")
    assert hs("memory", "dir", "--set", str(mem)).exit_code == 0
    assert "memory:       1 scope recorded; 1 directory configured" in hs("status").stdout
    info = json.loads(hs("status", "--json").stdout)
    assert info["memory_scopes"] == 1 and info["memory_dirs"] == {"system": str(mem)}


# ------------------------------------------------- found by review: bad input


def test_the_first_write_into_notes_without_an_index_is_not_blocked(hs: HS, mem: Path) -> None:
    _note(mem, "user_editor.md", "Editor", "Uses vim.\n", "user")
    r = hs(*write_args(slug="shell", name="Shell", description="uses zsh", type_="user"), "--yes")
    assert r.exit_code == 0, r.stderr
    assert (mem / "MEMORY.md").read_text() == "- [Shell](user_shell.md) — uses zsh\n"


def test_drafts_never_go_into_a_memory_directory_nor_over_a_file(
    hs: HS, mem: Path, tmp_path: Path, make_turns: Any
) -> None:
    from helpers import turn_record

    hs(*write_args(), "--yes")
    hs("import", str(make_turns([turn_record(1, asked="Never use pip, because uv pins.")])))
    r = hs("memory", "scan", "--drafts", str(mem))
    assert r.exit_code == 2 and "is a memory directory" in r.stderr
    drafts = tmp_path / "drafts"
    drafts.mkdir()
    file = hs.json_lines("memory", "scan", "--json")[0]["file"]
    (drafts / file).write_text("mine\n")
    r = hs("memory", "scan", "--drafts", str(drafts))
    assert r.exit_code == 0 and "kept" in r.stderr
    assert (drafts / file).read_text() == "mine\n"


def test_an_interrupt_between_the_two_writes_rolls_back(
    hs: HS, mem: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = memory._write_file
    calls: list[Path] = []

    def interrupt_second(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(memory, "_write_file", interrupt_second)
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 10 and "interrupted" in r.stderr and "rollback succeeded" in r.stderr
    assert list(mem.iterdir()) == []


def test_an_excluded_note_is_not_restored_from_an_old_revision(hs: HS, mem: Path) -> None:
    _note(mem, "user_sec.md", "Sec", "PRIVATE-TEXT\n", "user")
    (mem / "MEMORY.md").write_text("- [Sec](user_sec.md) — s\n")
    hs("memory", "snapshot")
    target = target_id(scope_for(None), "user_sec.md")
    assert hs("forget", target, "--exclude", "--confirm", target).exit_code == 0
    (mem / "user_sec.md").unlink()
    (mem / "MEMORY.md").write_text("")
    hs("memory", "snapshot")
    r = hs("memory", "restore", "user_sec@~1", "--yes")
    assert r.exit_code == 4 and "excluded" in r.stderr
    assert "PRIVATE-TEXT" not in r.stdout and not (mem / "user_sec.md").exists()


def test_a_write_never_shows_an_excluded_notes_text(hs: HS, mem: Path) -> None:
    """A write like an excluded note listed it as a near-duplicate, with its
    name and description."""
    hs(*write_args(slug="sec", name="Sec", description="codename BLUEFOX"), "--yes")
    target = target_id(scope_for(None), "feedback_sec.md")
    assert hs("forget", target, "--exclude", "--confirm", target).exit_code == 0
    before = files_of(mem)
    r = hs(*write_args(slug="sec2", name="Sec", description="codename BLUEFOX too"), "--json")
    assert "BLUEFOX" not in r.stdout.replace("BLUEFOX too", "") and "BLUEFOX" not in r.stderr
    assert files_of(mem) == before


@pytest.mark.parametrize(
    "entry",
    [
        "- [Secret](x) plan](project_secret.md) — codename BLUEFOX\n",  # a name holding "]("
        "- [Secret](project_secret.md) — plain\u2028codename BLUEFOX\n",  # a line separator
        "- [Secret](project_secret.md) — plain\fcodename BLUEFOX\n",  # a form feed
        # links a reader follows to the note, though no entry's form
        "- [Secret](./project_secret.md) — codename BLUEFOX\n",
        "- [Secret](<project_secret.md>) — codename BLUEFOX\n",
        "- [Secret](project_secret.md#top) — codename BLUEFOX\n",
        "- [Secret](project%5Fsecret.md) — codename BLUEFOX\n",
        '- [Secret](project_secret.md "the plan") — codename BLUEFOX\n',
        "- Secret: codename BLUEFOX, in project_secret.md\n",  # its name written out
        "- Secret: codename BLUEFOX, see **project_secret.md**.\n",  # in emphasis
        "- Secret: codename BLUEFOX, see _PROJECT_SECRET.md_\n",  # in capitals
    ],
)
def test_an_excluded_notes_index_line_is_dropped_however_it_reads(
    hs: HS, mem: Path, entry: str
) -> None:
    """The line was found by its first link, and split at U+2028 and form
    feeds where the index is read by line feeds: the text after the
    separator, or the whole line, was printed."""
    _note(mem, "project_secret.md", "Secret", "PRIVATE\n", "project")
    (mem / "MEMORY.md").write_text("- [Keep](user_keep.md) — kept\n" + entry)
    _note(mem, "user_keep.md", "Keep", "kept\n", "user")
    assert hs("memory", "snapshot").exit_code == 0
    target = target_id(scope_for(None), "project_secret.md")
    assert hs("forget", target, "--exclude", "--confirm", target).exit_code == 0
    for args in (
        ["memory", "show", "MEMORY.md"],
        ["memory", "prompt", "--model", "claude-sonnet-4-5"],
        ["memory", "diff", "MEMORY.md"],
    ):
        r = hs(*args)
        assert "BLUEFOX" not in r.stdout + r.stderr, args
    assert "Keep" in hs("memory", "show", "MEMORY.md").stdout


def test_diff_splits_lines_at_line_feeds_only(hs: HS, mem: Path) -> None:
    """A form feed in a body made a line of its own: a bogus "No newline at
    end of file" mid-hunk and wrong hunk counts, in --json too."""
    hs(*write_args(body="one\fpart two\n\n**Why:** w.\n\n**How to apply:** h."), "--yes")
    _revise(hs, "Tabs in Go", "one\fpart two\n\n**Why:** w2.\n\n**How to apply:** h.")
    out = hs("memory", "diff", "use-tabs").stdout
    assert "No newline" not in out
    assert " one^Lpart two" in out.split("\n")  # one line, whole (^L: the form feed shown)


def test_a_slug_that_is_another_notes_name_is_ambiguous(hs: HS, mem: Path) -> None:
    """``alpha`` is user_alpha.md's slug and user_beta.md's name: show took
    the slug's note silently (write --revise called it ambiguous)."""
    _note(mem, "user_alpha.md", "First", "a\n", "user")
    _note(mem, "user_beta.md", "alpha", "b\n", "user")
    assert hs("memory", "snapshot").exit_code == 0
    r = hs("memory", "show", "alpha")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.splitlines()[0].startswith("hs: error: memory 'alpha' is ambiguous")
    assert {ln.strip() for ln in r.stderr.splitlines()[1:]} >= {"user_alpha.md", "user_beta.md"}
    assert hs("memory", "show", "user_alpha").exit_code == 0  # the file name is one


def test_notes_sharing_a_slug_are_told_apart_by_name(hs: HS, mem: Path) -> None:
    _note(mem, "user_x.md", "x", "the user one\n", "user")
    _note(mem, "feedback_x.md", "other", "the feedback one\n", "feedback")
    assert hs("memory", "snapshot").exit_code == 0
    r = hs("memory", "show", "x")
    assert r.exit_code == 0 and "the user one" in r.stdout, r.stderr


def test_an_entry_that_links_a_withheld_note_is_its_own_notes(store: Store) -> None:
    """A kept note's entry whose description links a withheld note was held
    back as that note's line: the folder got the tree's entry and its own,
    two entries for one note."""
    from histstore.memory.folders import as_given

    blob = store.objects.put("blob", "- [X](user_x.md) — old\n".encode())
    folder = {"MEMORY.md": "- [X](user_x.md) — see [Y](user_y.md)\n".encode()}
    out = as_given(store, {"MEMORY.md": blob}, {"user_y.md"}, folder)
    assert out["MEMORY.md"].decode().count("(user_x.md)") == 1


def test_a_memory_dir_inside_the_store_is_refused(hs: HS, store_path: Path, store: Store) -> None:
    r = hs(*write_args(), "--memory-dir", str(store_path / "refs"), "--yes")
    assert r.exit_code == 2 and "inside the store" in r.stderr
    assert hs("fsck").exit_code == 0


def test_deeply_nested_yaml_is_a_violation_not_a_crash(hs: HS, mem: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    (mem / "user_deep.md").write_text(f"---\nname: {deep}\ndescription: d\ntype: user\n---\nx\n")
    r = hs("memory", "check")
    assert r.exit_code == 1 and "user_deep.md" in r.stdout and "internal" not in r.stderr


def test_scan_survives_a_malformed_url(hs: HS, store: Store, make_turns: Any) -> None:
    from helpers import turn_record

    t = turn_record(1, asked="We use the mirror at http://[fe80::1 for builds.")
    hs("import", str(make_turns([t])))
    r = hs("memory", "scan")
    assert r.exit_code == 0, r.stderr


def test_text_that_is_not_utf8_is_refused(hs: HS, mem: Path, store_path: Path) -> None:
    r = hs(*write_args(body="b\udcffc"), "--yes")
    assert r.exit_code == 2 and "UTF-8" in r.stderr
    (mem / "MEMORY.md").write_bytes(b"- caf\xe9\n")
    r = hs(*write_args(), "--yes")
    assert r.exit_code == 2 and "MEMORY.md is not UTF-8" in r.stderr
    (mem / "MEMORY.md").write_bytes(b"\x00")
    assert hs(*write_args(), "--yes").exit_code == 2
    r = hs(*write_args(name="a\nb"), "--yes")
    assert r.exit_code == 2 and "line break" in r.stderr


def test_a_fifo_or_a_huge_file_is_refused_without_reading_it(
    hs: HS, mem: Path, tmp_path: Path
) -> None:
    os.mkfifo(mem / "user_ff.md")
    r = hs(*write_args(slug="ff", name="F", description="f", type_="user"), "--yes")
    assert r.exit_code == 2 and "not a regular file" in r.stderr
    os.unlink(mem / "user_ff.md")
    os.mkfifo(tmp_path / "draft.md")
    r = hs("memory", "write", "--from", str(tmp_path / "draft.md"), "--yes")
    assert r.exit_code == 2 and "not a regular file" in r.stderr
    with open(mem / "user_big.md", "wb") as f:
        f.truncate(1 << 30)  # sparse: refused by its size before a byte is read
    r = hs("memory", "snapshot")
    assert r.exit_code == 2 and "limit" in r.stderr


def test_revise_refuses_to_copy_another_note(hs: HS, mem: Path) -> None:
    hs(*write_args(), "--yes")
    hs(*write_args(slug="other", name="Other", description="quite unrelated"), "--yes")
    r = hs(
        "memory", "write", "--revise", "other", "--name", "Use tabs", "--description",
        "Indent Go files with tabs", "--body", "x" + WHY, "--yes",
    )  # fmt: skip
    assert r.exit_code == 5 and "would look like feedback_use-tabs.md" in r.stderr


def test_a_write_changes_one_index_line_whatever_the_line_endings(hs: HS, mem: Path) -> None:
    (mem / "MEMORY.md").write_bytes(b"# Memory\r\n\n<!-- x -->")
    assert hs(*write_args(), "--yes").exit_code == 0
    assert (mem / "MEMORY.md").read_bytes() == (
        b"# Memory\r\n\n<!-- x -->\r\n- [Use tabs](feedback_use-tabs.md) \xe2\x80\x94 "
        b"Indent Go files with tabs\r\n"
    )


def test_cloud_model_ids_match_by_their_bare_name() -> None:
    from histstore.memory.models import bare_model_name, model_matches

    assert bare_model_name("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "claude-sonnet-4-5"
    assert bare_model_name("claude-opus-4-1@20250805") == "claude-opus-4-1"
    assert bare_model_name("global.anthropic.claude-haiku-4-5-20251001-v1:0") == "claude-haiku-4-5"
    assert model_matches(["claude-sonnet-*"], "us.anthropic.claude-sonnet-4-5-20250929-v1:0")


def test_a_deeply_nested_draft_is_refused_in_one_line(hs: HS, mem: Path, tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    draft = tmp_path / "user_deep.md"
    draft.write_text(f"---\nname: {deep}\ndescription: d\ntype: user\n---\nx\n")
    r = hs("memory", "write", "--from", str(draft), "--yes")
    assert r.exit_code == 2 and "nested too deeply" in r.stderr
    assert list(mem.iterdir()) == []
