"""How stored text is shown to a person: every control character made visible.

Stored text is whatever an agent, a tool, a file or a command line held. It may
carry terminal escape sequences (``ESC [2J`` clears the screen, ``ESC ]0;… BEL``
retitles the window, ``ESC ]52;…`` writes the clipboard), a carriage return or
backspaces that print over what came before, or bidirectional-text controls
that reorder what is shown. Printed as it is, it acts on the terminal of
whoever reads it. Every human view — ``hs log``, ``show``, ``recall``,
``forgotten``, ``ops``, the memory views, ``export --format markdown``, error
messages — prints stored text through :func:`visible`; ``--json`` and
``--raw`` hand out the exact text (JSON escapes C0 controls itself).

What becomes what (``docs/cli.md``, "Stored text on a terminal"):

* C0 controls and DEL in caret notation, as ``cat -v`` and ``less`` show them:
  ESC is ``^[``, CR ``^M``, BEL ``^G``, NUL ``^@``, DEL ``^?``. A line feed
  and a tab stay, except in a one-line field (``lines=False``), where they are
  ``^J`` and ``^I``; CR LF is a line end and becomes LF;
* C1 controls (U+0080 to U+009F, which some terminals obey as escapes: U+009B
  is CSI) as ``\\x9b``;
* the bidirectional-text controls (U+061C, U+200E, U+200F, U+202A to U+202E,
  U+2066 to U+2069) and the line and paragraph separators (U+2028, U+2029) as
  ``\\u202e``.

The result holds none of these characters, so :func:`visible` applied twice
gives what it gave once.
"""

from __future__ import annotations

import re

__all__ = ["visible"]


def _table(lines: bool) -> dict[int, str]:
    table: dict[int, str] = {c: "^" + chr(c ^ 0x40) for c in (*range(0x20), 0x7F)}
    table.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})
    for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)):
        table[c] = f"\\u{c:04x}"
    table[0x2028] = "\\u2028"
    table[0x2029] = "\\u2029"
    if lines:
        del table[ord("\n")], table[ord("\t")]
    return table


_LINES = _table(lines=True)
_ONE_LINE = _table(lines=False)
_ANY = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_ONE_LINE)) + "]")


def visible(text: str, *, lines: bool = True) -> str:
    """``text`` with every control character shown as printable text (above);
    ``lines=False`` for a one-line field (a file name, a title, a reason),
    where a line break is shown too rather than starting a line."""
    if _ANY.search(text) is None:
        return text
    if lines:
        return text.replace("\r\n", "\n").translate(_LINES)
    return text.translate(_ONE_LINE)


def text_lines(text: str) -> list[str]:
    """``text``'s lines as a view prints them: split at line feeds only (a CR
    before one is part of the line end), so a CR, a form feed, U+2028 or any
    other separator str.splitlines would break at stays inside its line and
    shows as :func:`visible` makes it."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]
