"""The rules of a memory directory (histstore.memrules): each rule passing and failing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histstore.errors import BadInput, NotFound
from histstore.memory import check as memcheck
from histstore.memory import index as memindex
from histstore.memory import models as memmodels
from histstore.memory import rules as mr
from histstore.memory.rules import Violation

WHY_HOW = "Indent Go with tabs.\n\n**Why:** gofmt insists.\n**How to apply:** every .go edit."


def note_text(
    type_: str = "feedback",
    name: str = "Use tabs",
    description: str = "Tabs, not spaces, in Go files",
    body: str = WHY_HOW,
) -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n"


def rules(violations: list[Violation]) -> list[str]:
    return [v.rule for v in violations]


def parse(
    text: str | bytes, file: str = "feedback_use-tabs.md"
) -> tuple[mr.Note | None, list[str]]:
    data = text.encode() if isinstance(text, str) else text
    note, violations = mr.parse_note(file, data)
    return note, rules(violations)


def entry(file: str, name: str = "A note", description: str = "what it holds") -> str:
    return f"- [{name}]({file}) — {description}\n"


def memdir(tmp_path: Path, notes: dict[str, str], index: str | None = None) -> Path:
    """A memory directory with these notes and an index (one entry per note by default)."""
    d = tmp_path / "memory"
    d.mkdir()
    for file, text in notes.items():
        (d / file).write_text(text)
    if index is None:
        index = "# Memory\n\n" + "".join(entry(f) for f in notes)
    if index != "<none>":
        (d / "MEMORY.md").write_text(index)
    return d


def good_notes() -> dict[str, str]:
    return {
        "feedback_use-tabs.md": note_text(),
        "user_role.md": note_text("user", "Role", "The user is a Go developer", "Writes Go."),
    }


# --- names ------------------------------------------------------------------------


def test_types() -> None:
    assert mr.TYPES == ("feedback", "project", "user", "reference")
    for t in mr.TYPES:
        assert mr.check_type(t) == t
    with pytest.raises(BadInput) as e:
        mr.check_type("Feedback")
    assert "Feedback" in e.value.message and e.value.hint and "reference" in e.value.hint


@pytest.mark.parametrize("slug", ["use-tabs", "a", "9lives", "x" * 40, "a-b-1", "a-"])
def test_slug_accepted(slug: str) -> None:
    assert mr.check_slug(slug) == slug


@pytest.mark.parametrize(
    ("slug", "says"),
    [
        ("", "empty"),
        ("x" * 41, "41 characters"),
        ("Use-Tabs", "'U'"),
        ("use_tabs", "'_'"),
        ("use tabs", "' '"),
        ("-tabs", "start with"),
        ("café", "'é'"),
        ("../x", "'.'"),
        ("a\nb", "'\\n'"),
    ],
)
def test_slug_refused(slug: str, says: str) -> None:
    with pytest.raises(BadInput) as e:
        mr.check_slug(slug)
    assert says in e.value.message
    assert "\n" not in e.value.message and e.value.hint


def test_slug_hint_suggests_a_valid_slug() -> None:
    with pytest.raises(BadInput) as e:
        mr.check_slug("Use Tabs!")
    assert e.value.hint is not None and "use-tabs" in e.value.hint


def test_note_file_name() -> None:
    assert mr.note_file_name("project", "login-flow") == "project_login-flow.md"
    with pytest.raises(BadInput):
        mr.note_file_name("projects", "login-flow")
    with pytest.raises(BadInput):
        mr.note_file_name("project", "Login")


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("feedback_use-tabs.md", ("feedback", "use-tabs")),
        ("reference_api-docs.md", ("reference", "api-docs")),
        ("user_x.md", ("user", "x")),
        ("project_" + "a" * 40 + ".md", ("project", "a" * 40)),
        ("project_" + "a" * 41 + ".md", None),
        ("feedback_.md", None),
        ("feedback_-x.md", None),
        ("feedback_Use.md", None),
        ("Feedback_use.md", None),
        ("notes_use.md", None),
        ("feedback_use.MD", None),
        ("feedback_use.md.bak", None),
        ("feedback_use.md\n", None),
        ("feedback_use_tabs.md", None),
        ("MEMORY.md", None),
    ],
)
def test_split_file_name(name: str, parts: tuple[str, str] | None) -> None:
    assert mr.split_file_name(name) == parts


def test_index_names_in_any_case() -> None:
    for name in ("MEMORY.md", "memory.md", "Memory.MD", "INDEX.md", "index.md"):
        assert mr.is_index_name(name)
    for name in ("MEMORY.txt", "user_memory.md", "MEMORY", "memories.md"):
        assert not mr.is_index_name(name)
    assert memindex.index_order(["index.md", "user_x.md", "memory.md", "MEMORY.md"]) == [
        "MEMORY.md",
        "memory.md",
        "index.md",
    ]


# --- frontmatter ------------------------------------------------------------------


def test_good_note_parses() -> None:
    note, found = parse(note_text())
    assert found == []
    assert note is not None
    assert (note.file, note.type, note.slug) == ("feedback_use-tabs.md", "feedback", "use-tabs")
    assert (note.name, note.description) == ("Use tabs", "Tabs, not spaces, in Go files")
    assert note.frontmatter == {
        "name": "Use tabs",
        "description": "Tabs, not spaces, in Go files",
        "type": "feedback",
    }
    assert note.body == WHY_HOW
    assert note.body_line == 7
    assert note.models is None


def test_real_yaml_quoting_block_scalars_and_comments() -> None:
    text = (
        "---\n"
        "# a comment line\n"
        "name: 'Tabs: always'  # trailing comment\n"
        "description: >\n"
        "  folded over\n"
        "  two lines\n"
        'type: "feedback"\n'
        "tags: [go, style]\n"
        "---\n"
        f"{WHY_HOW}\n"
    )
    note, found = parse(text)
    assert found == []
    assert note is not None
    assert note.name == "Tabs: always"
    assert note.description == "folded over two lines\n"
    assert note.frontmatter["tags"] == ["go", "style"]
    assert note.body_line == 10


@pytest.mark.parametrize(
    "text",
    [
        "name: x\ndescription: y\ntype: feedback\n",  # no fence at all
        "\n---\nname: x\ndescription: y\ntype: feedback\n---\n",  # not on line 1
        "",
    ],
)
def test_no_frontmatter(text: str) -> None:
    note, found = parse(text)
    assert note is None and found == ["frontmatter"]


def test_frontmatter_not_closed() -> None:
    note, found = parse("---\nname: x\ndescription: y\ntype: feedback\n\nbody\n")
    assert note is None and found == ["frontmatter"]


@pytest.mark.parametrize("inner", ["", "# only a comment\n", "- a list\n", "just text\n"])
def test_frontmatter_must_be_a_mapping(inner: str) -> None:
    note, found = parse(f"---\n{inner}---\n\nbody\n")
    assert note is None and found == ["frontmatter"]


@pytest.mark.parametrize(
    ("frontmatter", "line"),
    [
        ("name: x\ndescription: it is: broken\ntype: feedback\n", 3),
        ("name: x\ndescription: y\ntype: feedback\ntags: [a, b\n", 5),
        ("name: 'unclosed\ndescription: y\ntype: feedback\n", 2),
        ("name: x\n\tdescription: y\ntype: feedback\n", 3),
        ("name: x\ndescription: y\ntype: feedback\nbad: \x07\n", 5),
        ("name: x\nname2: &a [*a]\ndescription: y\ntype: feedback\nz: *b\n", 6),
    ],
)
def test_broken_yaml_names_the_real_line(frontmatter: str, line: int) -> None:
    note, violations = mr.parse_note("feedback_x.md", f"---\n{frontmatter}---\n\nbody\n".encode())
    assert note is None
    assert [(v.rule, v.line) for v in violations] == [("yaml", line)]
    assert "\n" not in violations[0].message


def test_broken_yaml_line_with_bom_and_crlf() -> None:
    text = "---\r\nname: x\r\ndescription: y\r\n# c\r\ntype: a: b\r\n---\r\n\r\nbody\r\n"
    _, violations = mr.parse_note("feedback_x.md", b"\xef\xbb\xbf" + text.encode())
    assert [(v.rule, v.line) for v in violations] == [("yaml", 5)]


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("name", None, "name"),
        ("name", "''", "name"),
        ("name", "'  '", "name"),
        ("name", "42", "name"),
        ("name", "[a, b]", "name"),
        ("name", "Tabs, always", "name"),
        ("description", None, "description"),
        ("description", "''", "description"),
        ("description", "2024-01-02", "description"),
        ("type", None, "type"),
        ("type", "notes", "type"),
        ("type", "Feedback", "type"),
        ("type", "''", "type"),
        ("type", "user", "type-mismatch"),
        ("type", "project", "type-mismatch"),
    ],
)
def test_frontmatter_fields(field: str, value: str | None, rule: str) -> None:
    fields = {"name": "Use tabs", "description": "Tabs in Go", "type": "feedback"}
    lines = "".join(f"{k}: {value if k == field else v}\n" for k, v in fields.items())
    if value is None:
        lines = "".join(f"{k}: {v}\n" for k, v in fields.items() if k != field)
    _, violations = mr.parse_note(
        "feedback_use-tabs.md", f"---\n{lines}---\n\n{WHY_HOW}\n".encode()
    )
    assert rules(violations) == [rule]
    want_line = 1 if value is None else 2 + list(fields).index(field)
    assert violations[0].line == want_line


def test_missing_required_fields_still_give_a_note() -> None:
    note, found = parse(f"---\nname: Use tabs\n---\n\n{WHY_HOW}\n")
    assert found == ["description", "type"]
    assert note is not None and note.type == "feedback" and note.description == ""


def test_bad_file_name_is_reported_by_parse_note() -> None:
    note, found = parse(note_text(), file="tabs.md")
    assert note is None and found == ["file-name"]


# --- body rules -------------------------------------------------------------------


@pytest.mark.parametrize("type_", ["feedback", "project"])
def test_why_and_how_to_apply_required(type_: str) -> None:
    file = f"{type_}_x.md"
    assert parse(note_text(type_, body=WHY_HOW), file)[1] == []
    _, found = parse(note_text(type_, body="**How to apply:** always."), file)
    assert found == ["why"]
    _, found = parse(note_text(type_, body="**Why:** because."), file)
    assert found == ["how-to-apply"]
    _, violations = mr.parse_note(file, note_text(type_, body="Just do it.").encode())
    assert [(v.rule, v.line) for v in violations] == [("why", 7), ("how-to-apply", 7)]
    _, found = parse(note_text(type_, body="**why:** lower case\n**How to apply**: x"), file)
    assert found == ["why", "how-to-apply"]


@pytest.mark.parametrize("type_", ["user", "reference"])
def test_user_and_reference_notes_need_no_why(type_: str) -> None:
    note, found = parse(note_text(type_, body="Plain facts."), f"{type_}_x.md")
    assert found == [] and note is not None and note.body == "Plain facts."


def test_body_line_and_empty_body() -> None:
    note, found = parse("---\nname: R\ndescription: d\ntype: user\n---\n", "user_r.md")
    assert found == [] and note is not None
    assert (note.body, note.body_line) == ("", 6)


# --- model notes ------------------------------------------------------------------


def model_note(first_line: str, type_: str = "reference") -> str:
    return note_text(type_, "model_notes_claude", "Notes for Claude", f"{first_line}\n\nUse XML.")


def test_model_note_with_globs() -> None:
    note, found = parse(model_note("models: claude-*|  GPT-5* "), "reference_claude.md")
    assert found == []
    assert note is not None and note.models == ["claude-*", "GPT-5*"]
    assert note.body.startswith("models:")


def test_model_note_small() -> None:
    note, found = parse(model_note("models: small"), "reference_claude.md")
    assert found == [] and note is not None and note.models == ["small"]


@pytest.mark.parametrize("first", ["Use XML everywhere.", "models:", "models: | ", "Models: x*"])
def test_model_note_without_models_line(first: str) -> None:
    note, violations = mr.parse_note("reference_claude.md", model_note(first).encode())
    assert [(v.rule, v.line) for v in violations] == [("model-line", 7)]
    assert note is not None and note.models is None


def test_model_line_must_be_the_first_body_line() -> None:
    text = note_text("user", "model_notes_x", "d", "Intro.\nmodels: claude-*")
    assert parse(text, "user_x.md")[1] == ["model-line"]


def test_only_model_notes_need_a_models_line() -> None:
    for name in ("Use tabs", "model_notes_", "model notes claude", "my_model_notes_x"):
        note, found = parse(note_text("user", name, "d", "Plain."), "user_x.md")
        assert found == [] and note is not None and note.models is None


@pytest.mark.parametrize(
    ("model", "bare"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic/Claude-Opus-4-1[1m]", "claude-opus-4-1"),
        ("claude-sonnet-4-5-20250929[1m]", "claude-sonnet-4-5"),
        ("openrouter/openai/gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("GPT-5", "gpt-5"),
        ("  o3  ", "o3"),
        ("gpt-4-0613", "gpt-4-0613"),
    ],
)
def test_bare_model_name(model: str, bare: str) -> None:
    assert memmodels.bare_model_name(model) == bare


@pytest.mark.parametrize(
    ("globs", "model", "matches"),
    [
        (["claude-*"], "anthropic/claude-sonnet-4-5-20250929", True),
        (["CLAUDE-SONNET-*"], "Claude-Sonnet-4-5", True),
        (["claude-sonnet-4-5"], "claude-sonnet-4-5-20250929[1m]", True),
        (["claude-sonnet-4-5-20250929"], "claude-sonnet-4-5-20250929", True),
        (["gpt-5*"], "claude-sonnet-4-5", False),
        (["gpt-5*", "claude-*"], "claude-haiku-4-5", True),
        ([], "claude-haiku-4-5", False),
        (["claude"], "claude-haiku-4-5", False),
        (["small"], "claude-haiku-4-5-20251001", True),
        (["small"], "openai/gpt-4o-mini", True),
        (["SMALL"], "gpt-5-nano", True),
        (["small"], "gemini-2.5-flash-lite", True),
        (["small"], "mistral-small-latest", True),
        (["small"], "claude-opus-4-1", False),
        (["small"], "gemini-2.5-pro", False),
        (["small"], "minimax-m1", False),
        (["small"], "smallville", False),
    ],
)
def test_model_matches(globs: list[str], model: str, matches: bool) -> None:
    assert memmodels.model_matches(globs, model) is matches


def test_estimate_tokens() -> None:
    assert [memmodels.estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


# --- bad bytes --------------------------------------------------------------------


def test_size_limit_and_no_parse_of_a_huge_file() -> None:
    fits = note_text("user", body="x" * (mr.MAX_NOTE_BYTES - 200)).encode()
    assert len(fits) <= mr.MAX_NOTE_BYTES
    assert parse(fits, "user_x.md")[1] == []
    huge = b"not even frontmatter\0" + b"\xff" * mr.MAX_NOTE_BYTES
    note, violations = mr.parse_note("user_x.md", huge)
    assert note is None and [(v.rule, v.line) for v in violations] == [("size", 1)]


def test_binary() -> None:
    note, violations = mr.parse_note("user_x.md", note_text("user", body="a\nb\0c").encode())
    assert note is None and [(v.rule, v.line) for v in violations] == [("binary", 8)]


def test_bad_utf8() -> None:
    data = note_text("user", body="caf\xe9").encode("latin-1")
    note, violations = mr.parse_note("user_x.md", data)
    assert note is None and [(v.rule, v.line) for v in violations] == [("encoding", 7)]
    assert parse(note_text("user", body="café ✓ 日本"), "user_x.md")[1] == []


def test_bom_and_crlf_are_accepted() -> None:
    data = b"\xef\xbb\xbf" + note_text(body=WHY_HOW).replace("\n", "\r\n").encode()
    note, found = parse(data)
    assert found == []
    assert note is not None and note.name == "Use tabs" and note.body == WHY_HOW
    assert "\r" not in note.description


# --- render -----------------------------------------------------------------------


def test_render_note_canonical_text() -> None:
    text = mr.render_note("feedback", "Use tabs", "Tabs in Go", "\n\n  " + WHY_HOW + "\n\n")
    assert text == (
        "---\nname: Use tabs\ndescription: Tabs in Go\ntype: feedback\n---\n\n" + WHY_HOW + "\n"
    )


@pytest.mark.parametrize(
    "name",
    [
        "Tabs: always",
        'it\'s "quoted"',
        "# not a comment",
        "a #hash",
        "- dash",
        "yes",
        "null",
        "123",
        "@at",
        "*star",
        "&amp",
        "{braces}",
        "[brackets]",
        "日本語 ✓",
        " padded ",
        "tab\there",
        "model_notes_claude",
        "ends with colon:",
        "%percent",
        "!tag",
        "|pipe",
        ">fold",
    ],
)
def test_render_parse_round_trip(name: str) -> None:
    body = "models: claude-*\n\n" + WHY_HOW
    text = mr.render_note("project", name, f"about {name}", body)
    note, found = parse(text, "project_x.md")
    assert found == []
    assert note is not None
    assert (note.name, note.description, note.type, note.body) == (
        name,
        f"about {name}",
        "project",
        body,
    )
    assert text.startswith("---\n") and text.count("\n---\n") == 1


def test_render_note_refuses_what_breaks_a_frontmatter_rule() -> None:
    with pytest.raises(BadInput):
        mr.render_note("notes", "n", "d", "b")
    with pytest.raises(BadInput):
        mr.render_note("user", "Tabs, always", "d", "b")
    with pytest.raises(BadInput):
        mr.render_note("user", " ", "d", "b")
    with pytest.raises(BadInput):
        mr.render_note("user", "n", "", "b")


_body_text = st.text(st.characters(blacklist_characters="\0\r", blacklist_categories=["Cs"]))


@settings(
    max_examples=1000 if os.environ.get("HS_HYPOTHESIS_PROFILE") == "deep" else 100,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.text(min_size=1).filter(lambda s: "," not in s and s.strip() and "\n" not in s),
    description=st.text(min_size=1).filter(lambda s: s.strip() and "\n" not in s),
    type_=st.sampled_from(mr.TYPES),
    body=_body_text,
)
def test_render_parse_round_trip_property(
    name: str, description: str, type_: str, body: str
) -> None:
    body = WHY_HOW + "\n" + body
    note, violations = mr.parse_note(
        f"{type_}_x.md", mr.render_note(type_, name, description, body).encode()
    )
    assert violations == []
    assert note is not None
    assert (note.name, note.description, note.type) == (name, description, type_)
    assert note.body == body.strip()


# --- the index --------------------------------------------------------------------


def test_index_line_canonical_and_parsed_back() -> None:
    line = memindex.index_line("Use tabs", "feedback_use-tabs.md", "Tabs, not spaces, in Go")
    assert line == "- [Use tabs](feedback_use-tabs.md) — Tabs, not spaces, in Go"
    entries, found = memindex.parse_index("MEMORY.md", (line + "\n").encode())
    assert found == []
    assert entries == [
        memindex.IndexEntry(1, "Use tabs", "feedback_use-tabs.md", "Tabs, not spaces, in Go", line)
    ]


def test_index_line_collapses_white_space() -> None:
    line = memindex.index_line(" Use\ttabs ", "user_x.md", "folded\n description\n")
    assert line == "- [Use tabs](user_x.md) — folded description"


def test_index_line_too_long_says_by_how_much() -> None:
    head = "- [n](user_x.md) — "
    assert len(memindex.index_line("n", "user_x.md", "d" * (150 - len(head)))) == 150
    with pytest.raises(BadInput) as e:
        memindex.index_line("n", "user_x.md", "d" * (150 - len(head) + 7))
    assert "7 over" in e.value.message
    assert e.value.hint is not None and f"{150 - len(head)} characters" in e.value.hint


def test_index_line_refuses_comma_bad_file_and_unreadable_names() -> None:
    with pytest.raises(BadInput, match="comma"):
        memindex.index_line("Tabs, always", "user_x.md", "d")
    with pytest.raises(BadInput):
        memindex.index_line("n", "../user_x.md", "d")
    with pytest.raises(BadInput):
        memindex.index_line("n", "user_x.md", " ")
    with pytest.raises(BadInput):
        memindex.index_line("a](user_y.md) — b", "user_x.md", "d")
    with pytest.raises(BadInput, match="control character"):
        memindex.index_line("n", "user_x.md", "bell\x07")
    line = memindex.index_line("[tag] name", "user_x.md", "has ](paren) inside")
    assert memindex.parse_index("MEMORY.md", line.encode())[0][0].name == "[tag] name"


def test_parse_index_allowed_lines() -> None:
    text = (
        "# Memory index\n"
        "\n"
        "<!-- written by hs -->\n"
        "## Feedback\n"
        "- [Use tabs](feedback_use-tabs.md) — Tabs in Go\n"
        "- [Role](user_role.md) - The user writes Go   \n"
    )
    entries, found = memindex.parse_index("MEMORY.md", text.encode())
    assert found == []
    assert [(e.line, e.name, e.file, e.description) for e in entries] == [
        (5, "Use tabs", "feedback_use-tabs.md", "Tabs in Go"),
        (6, "Role", "user_role.md", "The user writes Go"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "Some prose.",
        "* [x](user_x.md) — d",
        "  - [x](user_x.md) — d",
        "- [x](user_x.md)",
        "- [x](user_x.md) — ",
        "- [x](user_x.md) d",
        "- [](user_x.md) — d",
        "- plain bullet",
        "<!-- not closed",
        "- [x](notes/user_x.md) — d",
        "- [x](user_X.md) — d",
        "- [x](README.md) — d",
    ],
)
def test_parse_index_refuses_other_lines(line: str) -> None:
    entries, violations = memindex.parse_index("MEMORY.md", f"# M\n{line}\n".encode())
    assert entries == []
    assert [(v.rule, v.line) for v in violations] == [("index-entry", 2)]


def test_index_line_length_counts_characters_not_bytes() -> None:
    head = "- [n](user_x.md) — "
    ok = head + "é" * (150 - len(head))
    entries, found = memindex.parse_index("MEMORY.md", ok.encode())
    assert found == [] and len(entries) == 1
    entries, violations = memindex.parse_index("MEMORY.md", (ok + "é").encode())
    assert rules(violations) == ["index-line-length"] and len(entries) == 1
    assert "1 over" in violations[0].message


def test_index_name_comma() -> None:
    entries, violations = memindex.parse_index("MEMORY.md", b"- [Tabs, always](user_x.md) - d\n")
    assert [(v.rule, v.line) for v in violations] == [("index-name-comma", 1)]
    assert entries[0].name == "Tabs, always"


def test_index_bad_bytes_bom_and_crlf() -> None:
    text = "# M\r\n- [n](user_x.md) — d\r\n"
    entries, found = memindex.parse_index("MEMORY.md", b"\xef\xbb\xbf" + text.encode())
    assert found == [] and entries[0].text == "- [n](user_x.md) — d"
    assert rules(memindex.parse_index("MEMORY.md", b"# M\n\xff\n")[1]) == ["encoding"]
    assert rules(memindex.parse_index("MEMORY.md", b"# M\0\n")[1]) == ["binary"]
    assert rules(memindex.parse_index("MEMORY.md", b"#" * (mr.MAX_INDEX_BYTES + 1))[1]) == ["size"]


# --- a whole directory ------------------------------------------------------------


def test_clean_directory(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes())
    (d / "notes.txt").write_text("ignored")
    (d / ".draft.md").write_text("ignored")
    (d / "sub").mkdir()
    (d / "sub" / "README.md").write_text("ignored")
    (d / "archive.md").mkdir()
    assert memcheck.check_dir(d) == []


def test_other_markdown_files_break_file_name(tmp_path: Path) -> None:
    notes = good_notes()
    d = memdir(tmp_path, notes)
    (d / "README.md").write_text("# readme")
    (d / "Feedback_Use_Tabs.md").write_text(note_text())
    (d / "feedback_x.MD").write_text(note_text())
    found = memcheck.check_dir(d)
    assert [(v.file, v.rule) for v in found] == [
        ("Feedback_Use_Tabs.md", "file-name"),
        ("README.md", "file-name"),
        ("feedback_x.MD", "file-name"),
    ]
    assert "feedback_use-tabs.md" in found[0].message


def test_odd_file_names_are_escaped(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes())
    (d / "a\nb.md").write_text("x")
    [v] = memcheck.check_dir(d)
    assert v.rule == "file-name" and "\n" not in str(v)


def test_index_missing_for_a_note(tmp_path: Path) -> None:
    notes = good_notes()
    d = memdir(tmp_path, notes, index=entry("user_role.md"))
    [v] = memcheck.check_dir(d)
    assert (v.file, v.line, v.rule) == ("feedback_use-tabs.md", 1, "index-missing")
    assert "- [Use tabs](feedback_use-tabs.md) — Tabs, not spaces, in Go files" in v.message


def test_no_index_at_all(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes(), index="<none>")
    found = memcheck.check_dir(d)
    assert [(v.file, v.rule) for v in found] == [
        ("feedback_use-tabs.md", "index-missing"),
        ("user_role.md", "index-missing"),
    ]
    (tmp_path / "empty").mkdir()
    assert memcheck.check_dir(memdir(tmp_path / "empty", {}, index="<none>")) == []


def test_index_dangling(tmp_path: Path) -> None:
    index = "".join(entry(f) for f in good_notes()) + entry("project_gone.md")
    d = memdir(tmp_path, good_notes(), index=index)
    assert [(v.file, v.line, v.rule) for v in memcheck.check_dir(d)] == [
        ("MEMORY.md", 3, "index-dangling")
    ]


def test_index_duplicate(tmp_path: Path) -> None:
    index = "".join(entry(f) for f in good_notes()) + entry("user_role.md", "Again")
    d = memdir(tmp_path, good_notes(), index=index)
    [v] = memcheck.check_dir(d)
    assert (v.file, v.line, v.rule) == ("MEMORY.md", 3, "index-duplicate")
    assert "line 2" in v.message


def test_check_dir_collects_note_and_index_rules_sorted(tmp_path: Path) -> None:
    notes = good_notes()
    notes["project_login.md"] = note_text("project", "Login, again", "d", "No reasons.")
    index = "".join(entry(f) for f in notes) + "stray prose\n"
    d = memdir(tmp_path, notes, index=index)
    found = memcheck.check_dir(d)
    assert [(v.file, v.line, v.rule) for v in found] == [
        ("MEMORY.md", 4, "index-entry"),
        ("project_login.md", 2, "name"),
        ("project_login.md", 7, "how-to-apply"),
        ("project_login.md", 7, "why"),
    ]
    assert found == sorted(found, key=lambda v: (v.file, v.line))


def test_index_md_is_an_index_and_a_second_index_is_refused(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes(), index="<none>")
    (d / "index.md").write_text("".join(entry(f) for f in good_notes()))
    assert memcheck.check_dir(d) == []
    (d / "MEMORY.md").write_text("# empty\n")
    found = memcheck.check_dir(d)
    assert [(v.file, v.rule) for v in found] == [
        ("feedback_use-tabs.md", "index-missing"),
        ("index.md", "file-name"),
        ("user_role.md", "index-missing"),
    ]


def test_unreadable_index_is_not_taken_as_missing_entries(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes(), index="<none>")
    (d / "MEMORY.md").write_bytes(b"# M\n\xff\n")
    assert [(v.file, v.rule) for v in memcheck.check_dir(d)] == [("MEMORY.md", "encoding")]


def test_bad_note_bytes_in_a_directory(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes())
    (d / "feedback_use-tabs.md").write_bytes(b"x" * (mr.MAX_NOTE_BYTES + 1))
    (d / "user_role.md").write_bytes(b"---\0")
    assert [(v.file, v.rule) for v in memcheck.check_dir(d)] == [
        ("feedback_use-tabs.md", "size"),
        ("user_role.md", "binary"),
    ]


def test_symlink_escaping_the_directory(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text(note_text("user", "Secret", "outside", "do not read"))
    d = memdir(tmp_path, good_notes())
    os.symlink(secret, d / "user_secret.md")
    (d / "MEMORY.md").write_text("".join(entry(f) for f in [*good_notes(), "user_secret.md"]))
    found = memcheck.check_dir(d)
    assert [(v.file, v.rule) for v in found] == [("user_secret.md", "symlink")]
    assert "outside" in found[0].message


def test_symlink_inside_the_directory_is_followed(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes())
    (d / "sub").mkdir()
    (d / "sub" / "real.md").write_text(note_text("user", "Inner", "inside", "fine"))
    os.symlink("sub/real.md", d / "user_inner.md")
    (d / "MEMORY.md").write_text("".join(entry(f) for f in [*good_notes(), "user_inner.md"]))
    assert memcheck.check_dir(d) == []
    (d / "sub" / "real.md").write_text("no frontmatter")
    assert [(v.file, v.rule) for v in memcheck.check_dir(d)] == [("user_inner.md", "frontmatter")]


def test_broken_symlink_and_escaping_index(tmp_path: Path) -> None:
    d = memdir(tmp_path, good_notes(), index="<none>")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("".join(entry(f) for f in good_notes()))
    os.symlink(outside, d / "MEMORY.md")
    os.symlink(d / "nowhere.md", d / "user_gone.md")
    found = memcheck.check_dir(d)
    assert [(v.file, v.rule) for v in found] == [
        ("MEMORY.md", "symlink"),
        ("user_gone.md", "symlink"),
    ]


def test_missing_directory_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as e:
        memcheck.check_dir(tmp_path / "nope")
    assert e.value.hint
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotFound):
        memcheck.check_dir(tmp_path / "file")


def test_violation_forms() -> None:
    v = Violation("feedback_tabs.md", 3, "why", "a feedback note needs **Why:**")
    assert str(v) == "feedback_tabs.md:3: a feedback note needs **Why:** [why]"
    assert v.as_json() == {
        "file": "feedback_tabs.md",
        "line": 3,
        "rule": "why",
        "message": "a feedback note needs **Why:**",
    }


def test_every_message_is_one_line(tmp_path: Path) -> None:
    notes = {
        "feedback_a.md": "---\nname: 'a\nb'\ndescription: x: y\n---\n",
        "project_b.md": note_text("project", "x,\n y", "d", "b"),
        "user_c.md": "---\n- a\n---\n",
    }
    d = memdir(tmp_path, notes, index="- bad\n- [a\n")
    found = memcheck.check_dir(d)
    assert found
    assert all("\n" not in str(v) for v in found)


def test_merge_index_keeps_entries_added_on_both_sides_and_names_a_clash() -> None:
    from histstore.memory.index import merge_index

    base = b"# Memory\n- [A](user_a.md) \xe2\x80\x94 a\n"
    won = base + b"- [B](user_b.md) \xe2\x80\x94 b\n"
    lost = base + b"- [C](user_c.md) \xe2\x80\x94 c\n"
    merged = merge_index("MEMORY.md", won, lost, base)
    assert merged is not None
    text, clash = merged
    assert text.decode().splitlines()[1:] == [
        "- [A](user_a.md) — a",
        "- [B](user_b.md) — b",
        "- [C](user_c.md) — c",
    ]
    assert not clash
    changed_a = base.replace(b"\xe2\x80\x94 a", b"\xe2\x80\x94 a1")
    changed_b = base.replace(b"\xe2\x80\x94 a", b"\xe2\x80\x94 a2")
    text2, clash2 = merge_index("MEMORY.md", changed_a, changed_b, base) or (b"", False)
    assert clash2 and b"a1" in text2 and b"a2" not in text2
    assert merge_index("MEMORY.md", b"\0", lost, base) is None


def test_flow_nesting_past_the_limit_is_refused_before_yaml_reads_it() -> None:
    from histstore.memory.rules import MAX_FLOW_DEPTH, too_deep

    at_limit = "[" * MAX_FLOW_DEPTH + "]" * MAX_FLOW_DEPTH
    assert not too_deep(at_limit)
    assert too_deep("[" + at_limit + "]")
    assert not too_deep("[]" * (MAX_FLOW_DEPTH * 3))  # many, side by side
