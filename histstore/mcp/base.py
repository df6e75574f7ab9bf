"""What every tool shares: the call's environment, a tool's definition, and
checking arguments against its JSON schema (the SDK's low-level server checks
none): an unknown argument, a missing required one, a wrong type, a number out
of range, a value not in its enum and an empty string are refused, each with a
line that says what to give."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histstore.errors import BadInput


@dataclass(frozen=True)
class Env:
    """What a call runs against: the store, the project the call is about (a
    directory), where drafts go."""

    store: Path
    project: str
    drafts: Path
    #: how the project was decided: "meta", "roots" or "cwd"
    project_from: str = "cwd"


@dataclass(frozen=True)
class Tool:
    """An MCP tool: its name, description, input schema and the function it runs."""

    name: str
    title: str
    description: str
    schema: dict[str, Any]
    run: Callable[[Env, dict[str, Any]], str] = field(repr=False)


def check(tool: Tool, args: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments checked against the tool's schema, defaults filled in.
    Refused: an unknown argument, a missing required one, a wrong type, a
    number out of range, a value not in its enum, an empty string."""
    given = dict(args or {})
    props: dict[str, Any] = tool.schema["properties"]
    for name in given:
        if name not in props:
            raise BadInput(
                f"{tool.name}: unknown argument {name!r}",
                hint=f"its arguments are {', '.join(props)}",
            )
    out: dict[str, Any] = {}
    for name, spec in props.items():
        value = given.get(name)
        if value is None:
            if name in tool.schema.get("required", ()):
                raise BadInput(f"{tool.name}: {name} is missing", hint=_hint(spec))
            out[name] = spec.get("default")
            continue
        out[name] = _value(tool.name, name, spec, value)
    return out


def _hint(spec: dict[str, Any]) -> str:
    text = str(spec["description"])
    return text[:1].lower() + text[1:]


def _value(tool: str, name: str, spec: dict[str, Any], value: Any) -> Any:
    kind = spec["type"]
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadInput(f"{tool}: {name} must be a whole number, not {json.dumps(value)}")
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            span = f"from {lo} to {hi}" if hi is not None else f"of {lo} or more"
            raise BadInput(f"{tool}: {name} {value} is out of range: give a number {span}")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise BadInput(f"{tool}: {name} must be true or false, not {json.dumps(value)}")
        return value
    if not isinstance(value, str):
        raise BadInput(f"{tool}: {name} must be text, not {json.dumps(value)}")
    if "enum" in spec and value not in spec["enum"]:
        raise BadInput(f"{tool}: {name} {value!r} is not one of {', '.join(spec['enum'])}")
    if spec.get("minLength") and not value.strip():
        raise BadInput(f"{tool}: {name} is empty", hint=_hint(spec))
    return value
