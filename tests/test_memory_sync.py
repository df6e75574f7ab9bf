"""Memory folders on two machines kept in step through sync: a folder records
against the revision it last matched (its base), so nothing a sync brought is
undone by a later snapshot or write, and an excluded note never reaches a
folder (docs/memory.md, "Sync")."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import HS


class Machine:
    def __init__(self, hs: HS, root: Path, name: str) -> None:
        self.hs = hs
        self.store = root / f"store-{name}"
        self.mem = root / f"mem-{name}"
        self.mem.mkdir()
        assert hs("-C", str(self.store), "init").exit_code == 0
        assert self("memory", "dir", "--set", str(self.mem)).exit_code == 0

    def __call__(self, *args: str) -> object:
        return self.hs("-C", str(self.store), *args)

    def ok(self, *args: str) -> str:
        r = self.hs("-C", str(self.store), *args)
        assert r.exit_code == 0, (args, r.stdout, r.stderr)
        return str(r.stdout)

    def write(self, slug: str, text: str, *extra: str) -> str:
        return self.ok(
            "memory", "write", "--type", "user", "--slug", slug, "--name", slug.title(),
            "--description", f"about {slug}", "--body", text, "--yes", *extra,
        )  # fmt: skip

    def files(self) -> dict[str, str]:
        return {p.name: p.read_text() for p in sorted(self.mem.iterdir())}


@pytest.fixture
def two(hs: HS, tmp_path: Path) -> tuple[Machine, Machine]:
    a, b = Machine(hs, tmp_path, "a"), Machine(hs, tmp_path, "b")
    b.ok("remote", "add", "a", str(a.store))
    return a, b


def test_a_snapshot_after_a_pull_it_could_not_follow_keeps_what_arrived(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("editor", "Uses vim.")
    b.ok("pull", "a")
    assert "user_editor.md" in b.files()
    a.write("shell", "Uses zsh.")
    (b.mem / "user_editor.md").write_text(b.files()["user_editor.md"] + "Also nano.\n")
    out = b.ok("pull", "a")
    assert "has edits not recorded" in out and "user_shell.md" not in b.files()
    # a write now would start from a folder behind the scope: refused, nothing written
    r = b("memory", "write", "--type", "user", "--slug", "x", "--name", "X",
          "--description", "x", "--body", "x", "--yes")  # fmt: skip
    assert r.exit_code == 5 and "is behind revision" in r.stderr
    # the snapshot merges: the edit stays, what arrived comes in
    b.ok("memory", "snapshot")
    files = b.files()
    assert "Also nano." in files["user_editor.md"] and files["user_shell.md"].endswith(
        "Uses zsh.\n"
    )
    assert "user_shell.md" in files["MEMORY.md"] and "user_editor.md" in files["MEMORY.md"]
    b.ok("sync", "a")
    a.ok("memory", "snapshot")  # a's folder followed nothing (a push never writes it)
    b.ok("sync", "a")
    assert b.ok("memory", "show", "shell").endswith("Uses zsh.\n")
    assert "Also nano." in a.ok("memory", "show", "editor")
    assert b.ok("memory", "check")


def test_notes_written_on_both_machines_both_survive(two: tuple[Machine, Machine]) -> None:
    a, b = two
    a.write("editor", "Uses vim.")
    b.ok("pull", "a")
    a.write("shell", "Uses zsh.")
    b.write("desk", "Standing desk.")
    out = b.ok("sync", "a")
    assert "conflict" not in out
    index = b.ok("memory", "show", "MEMORY.md")
    assert all(f"user_{s}.md" in index for s in ("editor", "shell", "desk"))
    b.ok("memory", "snapshot")
    assert set(b.files()) == {"MEMORY.md", "user_editor.md", "user_shell.md", "user_desk.md"}
    assert "every rule holds" in b.ok("memory", "check")


def test_an_excluded_note_never_reaches_another_folder_and_is_not_deleted(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("editor", "Uses vim.")
    a.write("secret-host", "PRIVATE-TEXT")
    target = "memory@system@user@secret-host"
    a.ok("forget", target, "--exclude", "--confirm", target)
    out = b.ok("pull", "a")
    assert "updated" in out
    files = b.files()
    assert "user_secret-host.md" not in files and "secret-host" not in files["MEMORY.md"]
    assert "PRIVATE-TEXT" not in "".join(files.values())
    # b's folder lacks it, yet b records no deletion of it
    b.ok("memory", "snapshot")
    b.write("desk", "Standing desk.")
    b.ok("sync", "a")
    a.ok("memory", "snapshot")
    assert (a.mem / "user_secret-host.md").read_text().endswith("PRIVATE-TEXT\n")
    assert "every rule holds" in a.ok("memory", "check")
    assert "every rule holds" in b.ok("memory", "check")


def test_undo_of_a_pull_moves_a_folder_that_followed_it_back(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("editor", "Uses vim.")
    b.ok("pull", "a")
    a.write("shell", "Uses zsh.")
    b.ok("pull", "a")
    assert "user_shell.md" in b.files()
    b.ok("undo")
    assert "user_shell.md" not in b.files()
    b.ok("memory", "snapshot")  # the undo sticks: nothing to record
    assert "user_shell.md" not in b.ok("memory", "show", "MEMORY.md")


def test_undo_of_a_snapshot_leaves_the_folder_ahead(two: tuple[Machine, Machine]) -> None:
    a, _ = two
    a.write("editor", "Uses vim.")
    (a.mem / "user_editor.md").write_text(a.files()["user_editor.md"] + "edit\n")
    a.ok("memory", "snapshot")
    a.ok("undo")
    assert "edit" in a.files()["user_editor.md"]
    a.ok("memory", "snapshot")  # recorded again, not reverted
    assert "edit" in a.ok("memory", "show", "editor")
