"""Memory folders on two machines kept in step through sync: a folder records
against the revision it last matched (its base), so nothing a sync brought is
undone by a later snapshot or write, and an excluded note never reaches a
folder (docs/memory.md, "Sync")."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import HS

from histstore.store.store import Store
from histstore.sync.engine import sync


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
            "--description", f"about {slug}", "--body", text, "--yes", "--create", *extra,
        )  # fmt: skip

    def revise(self, body: str, description: str = "about note") -> str:
        return self.ok("memory", "write", "--revise", "note", "--name", "Note",
                       "--description", description, "--body", body, "--yes")  # fmt: skip

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


# ---------------------------------------------- found by review: withheld notes

T = "memory@system@user@note"


def test_lifting_an_exclusion_deletes_the_note_nowhere(two: tuple[Machine, Machine]) -> None:
    a, b = two
    a.write("keep", "Keep.")
    a.write("note", "Important.")
    a.ok("forget", T, "--exclude", "--confirm", T)
    b.ok("pull", "a")
    assert "user_note.md" not in b.files()
    a.ok("unforget", T, "--confirm", T)
    b.ok("pull", "a")
    b.write("other", "Other.")
    b.ok("push", "a")
    a.ok("memory", "snapshot")
    assert (a.mem / "user_note.md").read_text().endswith("Important.\n")
    assert "user_note.md" in a.ok("memory", "show", "MEMORY.md")
    # the lifted note reaches b's folder once b records its folder again
    b.ok("memory", "snapshot")
    assert b.files()["user_note.md"].endswith("Important.\n")
    assert "every rule holds" in b.ok("memory", "check")


def test_an_excluded_notes_new_text_never_reaches_a_folder_with_an_old_copy(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("note", "Old text.")
    b.ok("pull", "a")
    a.ok("forget", T, "--exclude", "--confirm", T)
    a.revise("NEW SECRET")
    b.ok("pull", "a")
    assert "NEW SECRET" not in "".join(b.files().values())
    b.ok("memory", "snapshot")  # b's old copy is not recorded over the new text
    b.ok("sync", "a")
    a.ok("memory", "snapshot")
    assert "NEW SECRET" in (a.mem / "user_note.md").read_text()


def test_undo_of_a_write_works_where_an_excluded_note_is_withheld(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("keep", "Keep.")
    a.write("note", "Secret.")
    a.ok("forget", T, "--exclude", "--confirm", T)
    b.ok("pull", "a")
    before = b.files()
    b.write("mine", "Mine.")
    b.ok("undo")
    assert b.files() == before


def test_a_deleted_note_that_the_other_side_changed_keeps_its_index_line(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("keep", "Keep.")
    a.write("note", "v1")
    b.ok("pull", "a")
    (a.mem / "user_note.md").unlink()
    index = (a.mem / "MEMORY.md").read_text()
    (a.mem / "MEMORY.md").write_text(
        "".join(ln for ln in index.splitlines(True) if "note" not in ln)
    )
    a.ok("memory", "snapshot")
    b.revise("v2")
    b.ok("sync", "a")
    b.ok("memory", "snapshot")
    assert "every rule holds" in b.ok("memory", "check")
    assert "v2" in b.ok("memory", "show", "note")


def test_a_snapshot_that_settles_a_conflict_says_so_and_records_it(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("note", "v1")
    b.ok("pull", "a")
    a.revise("v2 from a")
    (b.mem / "user_note.md").write_text(b.files()["user_note.md"] + "edit\n")
    b.ok("pull", "a")
    r = b.hs("-C", str(b.store), "memory", "snapshot")
    assert r.exit_code == 0 and "memory conflict: system user_note.md" in r.stderr
    log = b.hs.json_lines("-C", str(b.store), "memory", "log", "--json")
    assert log[0]["conflicts"][0]["file"] == "user_note.md"
    assert "edit" in b.files()["user_note.md"]


def test_a_folder_left_behind_by_a_push_catches_up_on_the_next_pull(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.ok("remote", "add", "b", str(b.store))
    a.write("note", "v1")
    b.ok("pull", "a")
    b.revise("v2")
    b.ok("push", "a")
    r = a.hs("-C", str(a.store), "memory", "write", "--type", "user", "--slug", "x",
             "--name", "X", "--description", "x", "--body", "x", "--yes")  # fmt: skip
    assert r.exit_code == 5 and "brings it up to date" in r.stderr
    out = a.ok("pull", "b")
    assert "updated" in out and "v2" in a.files()["user_note.md"]
    a.write("other", "Other.")


def test_undo_of_a_pull_that_created_the_scope_empties_the_folder(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("keep", "Keep.")
    b.ok("pull", "a")
    assert b.files()
    b.ok("undo")
    assert b.files() == {}
    assert b.ok("memory", "snapshot")
    assert "no revision" in b.ok("memory", "log")


def test_a_merging_snapshot_never_writes_an_excluded_note_the_folder_never_held(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("keep", "Keep.")
    b.ok("pull", "a")
    (b.mem / "user_keep.md").write_text(b.files()["user_keep.md"] + "edit\n")
    a.write("note", "SECRET-Y")
    a.ok("forget", T, "--exclude", "--confirm", T)
    out = b.ok("pull", "a")
    assert "edits not recorded" in out
    b.ok("memory", "snapshot")
    assert "SECRET-Y" not in "".join(b.files().values())
    assert "edit" in b.files()["user_keep.md"]
    b.ok("sync", "a")
    a.ok("memory", "snapshot")
    assert (a.mem / "user_note.md").read_text().endswith("SECRET-Y\n")


def test_a_conflict_records_both_versions(two: tuple[Machine, Machine]) -> None:
    a, b = two
    a.write("note", "v1")
    b.ok("pull", "a")
    a.revise("v2 from a")
    (b.mem / "user_note.md").write_text(b.files()["user_note.md"] + "edit\n")
    b.ok("pull", "a")
    b.ok("memory", "snapshot")
    log = b.hs.json_lines("-C", str(b.store), "memory", "log", "--json")
    assert len(log[0]["conflicts"][0]["versions"]) == 2


# ------------------------------------------------- found by fuzzing, reduced


def test_a_folder_that_never_received_a_pushed_scope_deletes_nothing(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.ok("remote", "add", "b", str(b.store))
    a.write("x", "hi")
    a.ok("push", "b")
    b.ok("memory", "snapshot")
    assert "user_x.md" in b.files()  # it came in, nothing was deleted
    a.ok("pull", "b")
    assert "user_x.md" in a.files()


def test_a_note_withheld_here_cannot_be_written_here(two: tuple[Machine, Machine]) -> None:
    a, b = two
    a.write("x", "first")
    tx = "memory@system@user@x"
    a.ok("forget", tx, "--exclude", "--confirm", tx)
    b.ok("pull", "a")
    r = b.hs("-C", str(b.store), "memory", "write", "--type", "user", "--slug", "x",
             "--name", "X", "--description", "tiger", "--body", "SECOND", "--create", "--yes")  # fmt: skip
    assert r.exit_code == 5 and "not given" in r.stderr
    assert "user_x.md" not in b.files()


def test_a_note_removed_on_one_side_leaves_no_dangling_index_line(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.ok("remote", "add", "b", str(b.store))
    a.write("x", "hi")
    b.ok("pull", "a")
    for p in b.mem.iterdir():
        p.unlink()
    b.ok("memory", "snapshot")
    a.write("z", "zed")
    a.ok("pull", "b")
    assert "every rule holds" in a.ok("memory", "check")
    assert set(a.files()) == {"MEMORY.md", "user_z.md"}


def test_following_keeps_an_excluded_notes_index_line_in_place(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.ok("remote", "add", "b", str(b.store))
    a.write("x", "hi")
    a.write("y", "why")
    b.ok("pull", "a")
    tx = "memory@system@user@x"
    a.ok("forget", tx, "--exclude", "--confirm", tx)
    b.write("z", "zed")
    b.ok("push", "a")
    index_before = a.files()["MEMORY.md"]
    a.ok("pull", "b")
    assert a.files()["MEMORY.md"].startswith(index_before)
    out = a.ok("memory", "snapshot")
    assert "unchanged" in out


def test_a_note_deleted_elsewhere_does_not_come_back_from_a_folder_excluding_it(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("x", "hi")
    b.ok("pull", "a")
    tx = "memory@system@user@x"
    b.ok("forget", tx, "--exclude", "--confirm", tx)
    (a.mem / "user_x.md").unlink()
    index = (a.mem / "MEMORY.md").read_text()
    (a.mem / "MEMORY.md").write_text(
        "".join(ln for ln in index.splitlines(True) if "user_x" not in ln)
    )
    a.ok("memory", "snapshot")
    b.ok("pull", "a")
    assert "user_x.md" not in b.files()
    assert "unchanged" in b.ok("memory", "snapshot")


def test_a_reworded_index_line_reaches_a_folder_that_excluded_the_note(
    two: tuple[Machine, Machine],
) -> None:
    a, b = two
    a.write("x", "hi")
    b.ok("pull", "a")
    tx = "memory@system@user@x"
    b.ok("forget", tx, "--exclude", "--confirm", tx)
    index = (a.mem / "MEMORY.md").read_text()
    (a.mem / "MEMORY.md").write_text(index.replace("about x\n", "about x, reworded\n"))
    a.ok("memory", "snapshot")
    b.ok("pull", "a")
    assert "reworded" in b.files()["MEMORY.md"]
    assert "unchanged" in b.ok("memory", "snapshot")


def test_a_library_pull_brings_the_folder_along(two: tuple[Machine, Machine]) -> None:
    """Following a sync is the library's (histstore.sync.engine.sync), not the
    CLI's: a pull made by a library caller (the MCP server, a hook) moves the
    folder as `hs pull` does."""
    a, b = two
    a.write("editor", "Uses vim.")
    with Store.open(a.store) as sa, Store.open(b.store) as sb:
        report = sync(sb, sa, "a", push=False)
    assert report.memory_dirs and "updated" in report.memory_dirs[0]
    assert b.files()["user_editor.md"].endswith("Uses vim.\n")
    assert "user_editor.md" in b.files()["MEMORY.md"]
