"""Codex rollouts: one turn while it is read (the format and the rules: the package's docstring)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from histstore.history.importers import (
    Problem,
    line_runs,
)
from histstore.history.importers.codex.lines import (
    _END_EVENTS,
    _PATCH_HEADER,
    _SUBAGENT_EVENTS,
    AGENT,
    FORMAT,
    _dict,
    _event,
    _image_step,
    _images,
    _input_texts,
    _json_object,
    _Line,
    _output,
    _output_text,
    _parts,
    _patch_text,
    _resolve,
    _same_prompt,
    _str,
    _tool,
    _turn_id_of,
    _valid_id,
)
from histstore.history.importers.codex.session import _Session
from histstore.history.turn import is_untrusted_tool


@dataclass
class _Turn:
    """One turn while it is read. ``light`` turns (the first pass of a file with a
    rollback) keep only what cutting needs."""

    session: _Session
    light: bool
    ordinal: int = 0
    started: bool = False  # has its prompt
    has_e: bool = False
    has_r: bool = False
    e_text: str = ""
    r_text: str = ""
    activity: bool = False  # model activity since the prompt
    saw_task: bool = False
    task_ended: bool = False
    in_foreign: bool = False  # inside a prompt-less task appended to this turn
    codex_id: str | None = None
    #: where the turn's first line starts and what the lines before said
    #: (None: the turn starts the file)
    start_mark: dict[str, Any] | None = None
    assigned_id: str | None = None
    #: the Codex turn id known when the prompt came (what the turn id is made of:
    #: lines after the prompt never change it, so a grown file keeps the id)
    prompt_codex_id: str | None = None

    def running(self) -> str | None:
        """The Codex turn id of this turn's task while it runs (not ended)."""
        return self.codex_id if self.started and self.saw_task and not self.task_ended else None

    # content (not kept by light turns)
    raw: list[str] = field(default_factory=list)
    raw_lines: list[int] = field(default_factory=list)
    first_line: int = 0
    last_line: int = 0
    prompt_line: int = 0
    prompt_offset: int = 0
    asked: str = ""
    asked_at: str | None = None
    earlier_time: tuple[str, int] | None = None
    first_time: str | None = None
    last_time: str | None = None
    user_step: dict[str, Any] | None = None
    model: str | None = None
    inherited_model: str | None = None
    open_cwd: str | None = None
    own_cwd: str | None = None
    inherited_cwd: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, None] = field(default_factory=dict)
    edit_hints: dict[str, None] = field(default_factory=dict)
    taint_hint: bool = False
    final_answer: str | None = None
    last_assistant: str | None = None
    last_agent_event: str | None = None
    task_message: str | None = None
    task_error: bool = False
    error_pending: bool = False
    interrupted: bool = False
    primary: set[str] = field(default_factory=set)  # categories with a primary source

    # ---------------------------------------------------------------- cutting state

    def mode(self) -> str:
        if self.in_foreign:
            return "foreign"
        return "own" if self.started else "open"

    def pairs(self, kind: str, text: str) -> bool:
        """Whether a prompt line is the partner of this turn's prompt."""
        if not self.started or self.activity:
            return False
        if kind == "E":
            return self.has_r and not self.has_e and _same_prompt(text, self.r_text)
        return self.has_e and not self.has_r and _same_prompt(text, self.e_text)

    def owns_task_start(self, line: _Line) -> bool:
        """A ``task_started`` written just after this turn's prompt is its own."""
        if not self.started or self.saw_task or self.activity:
            return False
        tid = _turn_id_of(line.obj)
        return self.codex_id is None or tid is None or tid == self.codex_id

    def _cut_state(self, line: _Line, role: str, kind: str, text: str, sig: str | None) -> None:
        obj = line.obj
        if sig is not None:
            if sig == "E":
                self.has_e, self.e_text = True, text
            else:
                self.has_r, self.r_text = True, text
            self.started = True
            return
        if role == "foreign":
            if kind == "activity" and self.started:
                self.activity = True
            return
        if kind == "activity" and self.started:
            self.activity = True
        ptype = _dict((obj or {}).get("payload")).get("type")
        if kind == "task_started":
            self.saw_task = True
        tid = _turn_id_of(obj)
        id_line = kind in ("task_started", "turn_context", "end")
        if tid and id_line and self.codex_id is None and not self.task_ended:
            self.codex_id = tid
        if kind == "end" and ptype in _END_EVENTS and self._is_mine(obj):
            self.task_ended = True

    def _is_mine(self, obj: dict[str, Any] | None) -> bool:
        tid = _turn_id_of(obj)
        return tid is None or self.codex_id is None or tid == self.codex_id

    # ---------------------------------------------------------------- reading a line

    def add(self, line: _Line, role: str, sig: str | None = None) -> None:
        """Take one line: ``role`` is ``open`` (before the prompt), ``own`` or
        ``foreign`` (a prompt-less task appended to this turn); ``sig`` says the
        line is this turn's prompt (``E``) or its partner (``R``), or the other way."""
        kind, text = line.classified()
        self._cut_state(line, role, kind, text, sig)
        if self.light:
            return
        if not self.first_line:
            self.first_line = line.lineno
        self.last_line = line.lineno
        self.raw.append(line.text)
        self.raw_lines.append(line.lineno)
        obj = line.obj
        if obj is None:
            return
        at = line.at
        if at is not None:
            self.last_time = at
            self.first_time = self.first_time or at
        payload = _dict(obj.get("payload"))
        ltype = obj.get("type")
        # what only the turn's own task may change: its model, answer and status
        own = role != "foreign"
        if sig is not None:
            self._prompt(line, sig, payload, at)
        elif ltype == "turn_context":
            if own:
                self._turn_context(payload)
        elif ltype == "compacted":
            self.primary.add("compact")
            self.steps.append(_event("compact", _str(payload.get("message")) or "", at))
        elif ltype == "response_item":
            self._response_item(payload, at, own)
        elif ltype == "event_msg":
            self._event_msg(payload, at, own and self._is_mine(obj))

    def _prompt(self, line: _Line, sig: str, payload: dict[str, Any], at: str | None) -> None:
        text = self.e_text if sig == "E" else self.r_text
        if self.user_step is None:
            self.prompt_line = line.lineno
            self.prompt_offset = line.offset
            self.asked = text
            self.asked_at = at
            self.earlier_time = self.session.last_time
            self.inherited_model = self.session.model
            self.inherited_cwd = self.session.cwd
            self.user_step = {"type": "user", "text": text, "at": at}
            self.steps.append(self.user_step)
            urls = (
                _images(payload.get("content"))
                if sig == "R"
                else [u for u in payload.get("images") or [] if isinstance(u, str) and u]
            )
            self.steps.extend(_image_step(u, at) for u in urls)
            return
        # the partner line: the typed prompt is the clean text
        if sig == "E":
            self.asked = text
            self.user_step["text"] = text
        if self.asked_at is None:
            self.asked_at = at
            self.user_step["at"] = at

    def _turn_context(self, payload: dict[str, Any]) -> None:
        model, cwd = _str(payload.get("model")), _str(payload.get("cwd"))
        if model:
            self.model = model
        if cwd:
            if not self.started:
                self.open_cwd = cwd
            elif self.own_cwd is None:
                self.own_cwd = cwd

    def cwd(self) -> str | None:
        return self.open_cwd or self.own_cwd or self.inherited_cwd or self.session.meta_cwd()

    def _model_now(self) -> str | None:
        return self.model or self.inherited_model or self.session.model

    def _step_for(self, call_id: str, name: str, at: str | None) -> dict[str, Any]:
        """The tool step of ``call_id``, made (with ``name``) when there is none yet."""
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = _tool(call_id, name, {}, at)
            self.steps.append(step)
            if call_id:
                self.calls[call_id] = step
        return step

    def _call(self, call_id: str, name: str, tool_input: dict[str, Any], at: str | None) -> None:
        step = self.calls.get(call_id) if call_id else None
        if step is not None and step["name"] and step.get("_called"):
            return  # the same call written twice
        if step is None:
            step = self._step_for(call_id, name, at)
        step["name"] = name
        step["input"] = tool_input
        step["_called"] = True
        if name == "view_image" and isinstance(tool_input.get("path"), str):
            self.files.setdefault(_resolve(tool_input["path"], self.cwd()), None)

    def _result(self, call_id: str, value: Any, at: str | None) -> None:
        step = self._step_for(call_id, "", at)
        text, failed = _output(value)
        step["output"] = text
        step["is_error"] = bool(step["is_error"]) or failed

    # ---------------------------------------------------------------- response items

    def _response_item(self, p: dict[str, Any], at: str | None, own: bool) -> None:
        ptype = p.get("type")
        call_id = _str(p.get("call_id")) or ""
        if ptype == "message":
            role = p.get("role")
            content = p.get("content")
            if role == "assistant":
                text = _output_text(content)
                step: dict[str, Any] = {
                    "type": "assistant",
                    "text": text,
                    "at": at,
                    "model": self._model_now(),
                }
                phase = _str(p.get("phase"))
                if phase:
                    step["phase"] = phase
                self.steps.append(step)
                self.primary.add("assistant")
                if own:
                    self.last_assistant = text
                    self.error_pending = False
                    if phase == "final_answer":
                        self.final_answer = text
            else:
                text = "\n".join(_input_texts(content))
                self.steps.append(_event("context", text, at))
        elif ptype == "reasoning":
            texts = [
                *_parts(p.get("summary"), ("summary_text",)),
                *_parts(p.get("content"), ("reasoning_text", "text")),
            ]
            text = "\n\n".join(t for t in texts if t)
            if text:
                self.primary.add("thinking")
                self.steps.append({"type": "thinking", "text": text, "at": at})
        elif ptype == "function_call":
            name = _str(p.get("name")) or ""
            namespace = _str(p.get("namespace"))
            if namespace and not name.startswith(namespace):
                name = f"{namespace}__{name}"
            args = p.get("arguments")
            parsed = _json_object(args)
            tool_input = parsed if parsed is not None else {"arguments": args}
            self._call(call_id, name, tool_input, at)
        elif ptype == "custom_tool_call":
            self._call(call_id, _str(p.get("name")) or "", {"input": p.get("input")}, at)
        elif ptype == "local_shell_call":
            cid = call_id or _str(p.get("id")) or ""
            self._call(cid, "local_shell", _dict(p.get("action")), at)
        elif ptype == "web_search_call":
            self.primary.add("web_search")
            self._call(_str(p.get("id")) or "", "web_search", _dict(p.get("action")), at)
        elif ptype == "tool_search_call":
            self._call(call_id, "tool_search", _dict(p.get("arguments")), at)
        elif ptype == "image_generation_call":
            prompt = _str(p.get("revised_prompt"))
            tool_input = {"revised_prompt": prompt} if prompt else {}
            self._call(_str(p.get("id")) or "", "image_generation", tool_input, at)
        elif ptype in (
            "function_call_output",
            "custom_tool_call_output",
            "local_shell_call_output",
        ):
            self._result(call_id, p.get("output"), at)
        elif ptype == "tool_search_output":
            self._result(call_id, p.get("tools"), at)
        elif ptype == "agent_message":
            text = "\n".join(_parts(p.get("content"), ("input_text", "output_text", "text")))
            self.steps.append(_event("inter_agent", text, at))
        elif ptype == "ghost_snapshot":
            # 0.60's undo checkpoint: a commit of the work tree before the turn
            commit = _str(_dict(p.get("ghost_commit")).get("id")) or ""
            self.steps.append(_event("snapshot", commit, at))
        elif ptype in ("compaction", "context_compaction"):
            self.primary.add("compact")
            self.steps.append(_event("compact", "", at))

    # ---------------------------------------------------------------- events

    def _event_msg(self, p: dict[str, Any], at: str | None, own: bool) -> None:
        ptype = p.get("type")
        call_id = _str(p.get("call_id")) or ""
        if ptype == "user_message":  # not a prompt (injected kind)
            self.steps.append(_event("context", _str(p.get("message")) or "", at))
        elif ptype == "agent_message":
            text = _str(p.get("message")) or ""
            self.steps.append(
                {"type": "assistant", "text": text, "at": at, "model": self._model_now()}
                | {"_mirror": "assistant"}
            )
            if own:
                self.last_agent_event = text
                self.error_pending = False
        elif ptype in ("agent_reasoning", "agent_reasoning_raw_content"):
            text = _str(p.get("text")) or ""
            if text:
                self.steps.append(
                    {"type": "thinking", "text": text, "at": at, "_mirror": "thinking"}
                )
        elif ptype == "task_complete":
            if own:
                message = _str(p.get("last_agent_message"))
                if message:
                    self.task_message = message
                error = p.get("error")
                if error:
                    self.task_error = True
                    self.steps.append(_event("error", _error_text(error), at))
        elif ptype == "turn_aborted":
            reason = _str(p.get("reason")) or "interrupted"
            self.steps.append(_event("interrupted", reason, at))
            if own:
                self.interrupted = True
        elif ptype == "thread_rolled_back":
            n = p.get("num_turns")
            self.steps.append(_event("rollback", f"{n} turn(s) rolled back", at))
        elif ptype == "error":
            self.steps.append(_event("error", _str(p.get("message")) or "", at))
            if own:
                self.error_pending = True
        elif ptype == "exec_command_end":
            self._exec_end(p, call_id, at)
        elif ptype == "patch_apply_end":
            self._patch_end(p, call_id, at)
        elif ptype == "mcp_tool_call_end":
            self._mcp_end(p, call_id, at)
        elif ptype == "web_search_end":
            step = _tool(
                call_id, "web_search", {"query": p.get("query"), "action": p.get("action")}, at
            )
            step["_mirror"] = "web_search"
            self.steps.append(step)
        elif ptype == "view_image_tool_call":
            path = _str(p.get("path"))
            if path:
                self.files.setdefault(_resolve(path, self.cwd()), None)
        elif ptype == "context_compacted":
            self.steps.append(_event("compact", "", at) | {"_mirror": "compact"})
        elif ptype in ("entered_review_mode", "exited_review_mode"):
            self.steps.append(_event("review", _review_text(p), at))
        elif ptype == "undo_completed":
            self.steps.append(_event("undo", _str(p.get("message")) or "", at))
        elif ptype in _SUBAGENT_EVENTS:
            self.steps.append(_event("subagent", _subagent_text(p), at))
        elif ptype == "item_completed":
            self._item_completed(_dict(p.get("item")), at)

    def _exec_end(self, p: dict[str, Any], call_id: str, at: str | None) -> None:
        cwd = _str(p.get("cwd")) or self.cwd()
        self._reads(p.get("parsed_cmd"), cwd)
        command = p.get("command")
        if p.get("source") == "user_shell" and call_id not in self.calls:
            shown = (
                " ".join(c for c in command if isinstance(c, str))
                if isinstance(command, list)
                else ""
            )
            self.steps.append(_event("user_shell", shown, at))
            return
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = self._step_for(call_id, "exec_command", at)
            step["input"] = {"command": command, "cwd": p.get("cwd")}
        code = p.get("exit_code")
        if (isinstance(code, int) and not isinstance(code, bool) and code != 0) or p.get(
            "status"
        ) in ("failed", "declined"):
            step["is_error"] = True
        if step["output"] is None:
            out = _str(p.get("aggregated_output")) or _str(p.get("formatted_output"))
            if out is not None:
                step["output"] = out

    def _reads(self, parsed: Any, cwd: str | None) -> None:
        if not isinstance(parsed, list):
            return
        for entry in parsed:
            if isinstance(entry, dict) and entry.get("type") == "read":
                path = _str(entry.get("path"))
                if path:
                    self.files.setdefault(_resolve(path, cwd), None)

    def _patch_end(self, p: dict[str, Any], call_id: str, at: str | None) -> None:
        ok = p.get("success") is not False
        paths: list[str] = []
        for path, change in _dict(p.get("changes")).items():
            paths.append(path)
            move = _str(_dict(change).get("move_path"))
            if move:
                paths.append(move)
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = self._step_for(call_id, "apply_patch", at)
            step["input"] = {"changes": sorted(_dict(p.get("changes")))}
        step["_edits"] = paths if ok else []
        if not ok:
            step["is_error"] = True
        if step["output"] is None:
            out = "\n".join(s for s in (_str(p.get("stdout")), _str(p.get("stderr"))) if s)
            step["output"] = out

    def _mcp_end(self, p: dict[str, Any], call_id: str, at: str | None) -> None:
        inv = _dict(p.get("invocation"))
        server, tool = _str(inv.get("server")) or "", _str(inv.get("tool")) or ""
        name = f"mcp__{server}__{tool}"
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = self._step_for(call_id, name, at)
            args = inv.get("arguments")
            step["input"] = args if isinstance(args, dict) else {"arguments": args}
        elif not step["name"].startswith("mcp__"):
            step["name"] = name
        self.taint_hint = True
        result = _dict(p.get("result"))
        if "Err" in result:
            step["is_error"] = True
            text = _error_text(result["Err"])
        else:
            ok = _dict(result.get("Ok")) or result
            if ok.get("isError") is True:
                step["is_error"] = True
            text, _ = _output(ok.get("content"))
        if step["output"] is None or not step["output"]:
            step["output"] = text

    def _item_completed(self, item: dict[str, Any], at: str | None) -> None:
        itype = item.get("type")
        if itype == "Plan":
            self.steps.append(_event("plan", _str(item.get("text")) or "", at))
        elif itype == "CommandExecution":
            self._reads(item.get("parsed_cmd"), _str(item.get("cwd")) or self.cwd())
        elif itype == "FileChange":
            for path in _dict(item.get("changes")):
                self.edit_hints.setdefault(path, None)
        elif itype == "McpToolCall" or (
            itype == "Extension" and _dict(item.get("action")).get("type") is not None
        ):
            self.taint_hint = True

    # ---------------------------------------------------------------- the record

    def record(self, rolled_back: bool, problems: list[Problem]) -> dict[str, Any] | None:
        session = self.session
        path = session.path
        asked_at = self.asked_at
        if asked_at is None:
            if self.earlier_time is not None:
                asked_at, where = self.earlier_time
                problems.append(
                    Problem(
                        str(path),
                        self.prompt_line,
                        f"prompt has no usable timestamp; asked_at taken from line {where}",
                        kept=True,
                    )
                )
            elif self.first_time is not None:
                asked_at = self.first_time
                problems.append(
                    Problem(
                        str(path),
                        self.prompt_line,
                        "prompt has no usable timestamp; asked_at taken from a later line",
                        kept=True,
                    )
                )
            else:
                problems.append(
                    Problem(str(path), self.prompt_line, "turn has no usable timestamp; skipped")
                )
                return None

        cwd = self.cwd()
        steps = [s for s in self.steps if "_mirror" not in s or s["_mirror"] not in self.primary]
        edited: dict[str, None] = {}
        tools: dict[str, int] = {}
        tainted = self.taint_hint
        for step in steps:
            if step["type"] != "tool":
                continue
            name = step["name"]
            if name:
                tools[name] = tools.get(name, 0) + 1
                tainted = tainted or is_untrusted_tool(name)
            edits = step.get("_edits")
            if isinstance(edits, list):
                for p in edits:
                    edited.setdefault(p, None)
            elif not step["is_error"] and (patch := _patch_text(step)):
                base = _str(_dict(step["input"]).get("workdir"))
                base = _resolve(base, cwd) if base else cwd
                for m in _PATCH_HEADER.finditer(patch):
                    edited.setdefault(_resolve(m.group(1), base), None)
        for p in self.edit_hints:
            edited.setdefault(p, None)
        if rolled_back:
            steps.append(_event("rolled_back", "undone by a later thread_rolled_back", None))
        steps = [{k: v for k, v in s.items() if not k.startswith("_")} for s in steps]

        if self.interrupted:
            status = "interrupted"
        elif self.task_error or self.error_pending:
            status = "failed"
        else:
            status = "completed"
        answered = (
            self.final_answer
            or self.task_message
            or self.last_assistant
            or self.last_agent_event
            or ""
        )

        extra = session.extra()
        if rolled_back:
            extra["rolled_back"] = True
        if self.saw_task and not self.task_ended:
            extra["unfinished"] = True

        turn: dict[str, Any] = {
            "turn_id": self._turn_id(),
            "session_id": session.session_id,
            "project": session.project,
            "asked_at": asked_at,
            "asked": self.asked,
            "answered": answered,
            "files": list(self.files),
            "edited": list(edited),
            "tools": tools,
            "tainted": tainted,
            "model": self.model or self.inherited_model,
            "agent": AGENT,
            "status": status,
            "answered_at": self.last_time,
            "cwd": cwd,
            "subagent": session.session_id if session.is_subagent() else None,
            "source": {
                "format": FORMAT,
                "file": str(path),
                "line": self.prompt_line,
                "end_line": self.last_line,
                "offset": self.prompt_offset,
                "lines": line_runs(self.raw_lines),
            },
            "steps": steps,
            "raw": self.raw,
        }
        if extra:
            turn["extra"] = extra
        return turn

    def _turn_id(self) -> str:
        session = self.session
        fallback = f"{session.session_id}-{self.ordinal}"
        tid = self.prompt_codex_id if _valid_id(self.prompt_codex_id) else None
        tid = tid or fallback
        if tid in session.used_ids:
            tid = f"{tid}-{self.ordinal}"
        if not _valid_id(tid) or tid in session.used_ids:
            tid = fallback
        session.used_ids.add(tid)
        self.assigned_id = tid
        return tid


def _error_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _review_text(p: dict[str, Any]) -> str:
    out = _dict(p.get("review_output"))
    for value in (
        out.get("overall_explanation"),
        p.get("user_facing_hint"),
        p.get("prompt"),
    ):
        if isinstance(value, str) and value:
            return value
    return str(p.get("type"))


def _subagent_text(p: dict[str, Any]) -> str:
    text = str(p.get("type"))
    nickname = _str(p.get("new_agent_nickname")) or _str(p.get("receiver_agent_nickname"))
    if nickname:
        text += f": {nickname}"
    prompt = _str(p.get("prompt"))
    return f"{text}\n{prompt}" if prompt else text
