"""OpenAI Codex CLI rollout files -> turn records.

Codex writes one JSONL file per session (a *thread*) under
``~/.codex/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl``. Every
line is an envelope ``{timestamp, type, payload}`` with ``type`` one of
``session_meta``, ``turn_context``, ``response_item`` (what the model saw and
said), ``event_msg`` (UI events, many of them mirrors of response items),
``compacted``, ``world_state``, ... See FORMATS.md section 2 (shared notes) for the
observed format of every generation (0.60 ... 0.14x).

This is a pure parser: :func:`parse_file` reads one file and yields turn records
(see :mod:`histstore.history.turn`), :class:`~histstore.history.importers.Problem`
for lines it cannot read, one :class:`~histstore.history.importers.SessionMeta`
after the turns (the title is often written late in the file), and last a
:class:`~histstore.history.importers.Resume`.

Reading
-------
* The file is read line by line and never held whole: only the lines of the turn
  being built (and, before the first prompt, the lines before it) are kept. Every
  raw line is passed through ``redact`` first, then parsed, so every string that
  reaches a turn is already redacted.
* A line that is not JSON, not an object or not a ``{type, payload}`` envelope is a
  Problem naming the line; its (redacted) text still goes into the raw lines of
  the turn it falls in, and the rest of the file imports. Unknown ``type`` values
  and payload types are kept in ``raw`` and otherwise ignored.

How the file is cut into turns
------------------------------
* A turn starts at a *prompt*. Codex writes each typed prompt twice: as
  ``event_msg/user_message`` (the clean text the person typed) and as a
  ``response_item`` user message (what the model saw), next to each other in
  either order. Either one starts the turn; the other is its *partner* and joins
  the same turn when it comes before any model activity of that turn and carries
  the same text (whitespace, ``[Image #n]`` placeholders and ``<image>`` wrapper
  parts aside, or one text inside the other). So a file where
  only one of the pair was written (older writers, a file cut between the two
  lines) still gets one turn per prompt, and a pair never makes two turns.
  ``asked`` is the ``user_message`` text when there is one, else the response
  item's text.
* Not prompts: developer messages; user messages whose every text part is
  injected context (``<environment_context>``, ``<user_instructions>``,
  ``# AGENTS.md instructions for ...``, ``<permissions instructions>``,
  ``<collaboration_mode>``, ``<skills_instructions>``, ``<turn_aborted>``, the
  compaction bridge "Another language model started to solve this problem ...",
  or any text that is one whole ``<tag ...>...</tag>`` block); and
  ``user_message`` events with ``kind`` ``user_instructions`` or
  ``environment_context`` (older CLIs) or starting with one of the prefixes above.
  These become ``context`` event steps of the turn they fall in.
* Newer CLIs open a turn *before* its prompt: ``task_started`` (and a
  ``turn_context`` with a new ``turn_id``), developer messages and the
  environment context come first. Those opening lines are held back until the
  next line decides: a prompt makes them the first lines of the new turn; model
  activity, ``task_complete``/``turn_aborted`` or another opening first means the
  task had no prompt (``/compact``, a review, a user shell command), and its
  lines are appended to the current turn as *foreign* lines: they add raw lines,
  steps, tools and files there but never change its id, model, answer or status.
* Every other line belongs to the turn of the last prompt. Lines before the first
  prompt (``session_meta``, the first environment context, ...) open the first
  turn, so every line of the file ends up in exactly one turn's ``raw``; a file
  without any prompt yields no turn (only its :class:`SessionMeta`).

Fields
------
* ``session_id``: the first ``session_meta`` ``payload.id`` (else
  ``payload.session_id``); else the uuid at the end of the file name
  ``rollout-<time>-<uuid>.jsonl``; else the file name's stem. Later
  ``session_meta`` lines (copied in by a fork) are ignored.
* ``turn_id``: the Codex turn id known when the prompt is read, when it is a
  valid one: the ``turn_id`` of the ``task_started`` / ``turn_context`` that
  opened the turn before its prompt, or, for a prompt typed while a task ran,
  that task's; else ``<session_id>-<n>`` where ``n`` is the prompt's position
  among the file's prompts (1 for the first). Lines after the prompt never
  change it, so it is the same on a re-import and when the file grows (read
  while Codex was still writing the turn). A Codex turn id already taken by an
  earlier turn of the file gets ``-<n>`` appended.
* ``project``: the first ``session_meta`` ``cwd`` as recorded (Windows paths
  kept), else the first ``turn_context`` cwd, else ``""``. ``cwd``: the cwd of
  the ``turn_context`` in effect when the prompt was asked (the turn's first one
  for 0.60, which writes it after the prompt). ``model``: the last ``turn_context``
  model of the turn (0.60 writes one before every model request), else the one in
  effect before it.
* ``answered``: the last assistant message with ``phase: final_answer``, else the
  turn's ``task_complete.last_agent_message``, else its last assistant message
  (``response_item``, else ``agent_message`` events), else ``""``.
* Steps: ``user`` (the prompt, plus its images), ``assistant`` (response items,
  with ``phase`` when Codex wrote one; ``agent_message`` events only when the turn
  has no assistant response item), ``thinking`` (reasoning summaries and raw
  reasoning text; ``agent_reasoning`` events only when the turn has none), ``tool``
  and ``event`` (kinds ``context``, ``interrupted``, ``rollback``,
  ``rolled_back``, ``compact``, ``error``, ``review``, ``undo``, ``plan``,
  ``subagent``, ``inter_agent``, ``user_shell``).
* Tool steps: ``function_call`` (``arguments`` is a JSON string, parsed into
  ``input``; MCP tools get their ``namespace`` prefixed), ``custom_tool_call``
  (``input = {"input": <raw text>}``: ``apply_patch``, code mode's ``exec``),
  ``local_shell_call`` (``local_shell``), ``web_search_call`` (``web_search``),
  ``tool_search_call``, ``image_generation_call``. Outputs are matched by
  ``call_id``; an output that is JSON ``{"output", "metadata": {"exit_code"}}`` is
  unwrapped. ``is_error``: a non-zero exit code (``Exit code: N`` /
  ``Process exited with code N`` / ``metadata.exit_code`` / ``exec_command_end``),
  ``apply_patch verification failed``, ``patch_apply_end.success`` false, an MCP
  error. ``exec_command_end``, ``patch_apply_end`` and ``mcp_tool_call_end`` events
  complete the call with their ``call_id``; one without a call in the turn (code
  mode runs tools from inside ``exec``) is a tool step of its own
  (``exec_command``, ``apply_patch``, ``mcp__<server>__<tool>``).
  ``web_search_end`` events are ``web_search`` steps only when the turn has no
  ``web_search_call``. A user shell command (``!cmd``) is a ``user_shell`` event,
  not a tool.
* ``tools`` counts the tool steps by name. ``edited``: the paths of the turn's
  ``patch_apply_end.changes`` (and ``move_path``) that did not fail; for an
  ``apply_patch`` call without such an event (0.60), its ``*** Add File:`` /
  ``*** Update File:`` / ``*** Delete File:`` / ``*** Move to:`` headers, resolved
  against the turn's cwd, unless the call failed. ``files``: the ``read`` entries
  of ``exec_command_end.parsed_cmd`` (resolved against the command's cwd) and
  ``view_image`` paths. Shell commands of 0.60 (no ``exec_command_end``) and code
  mode give no read paths.
* ``tainted``: the turn ran a web search or an MCP tool (``web_search_call``,
  ``web_search_end``, ``mcp_tool_call_end``, any tool ``mcp__...``; see
  :func:`histstore.history.turn.is_untrusted_tool`).
* ``status``: ``interrupted`` when the turn's ``turn_aborted`` is there (any
  reason); else ``failed`` when its ``task_complete`` carries an ``error`` or an
  ``error`` event came after its last assistant message; else ``completed``.
* ``thread_rolled_back {num_turns}`` undoes the last ``num_turns`` prompts still in
  effect (earlier rollbacks already removed some): those turns are kept, with
  ``extra["rolled_back"] = true`` and a ``rolled_back`` event step, their status
  unchanged. Because a rollback names turns that were already read, a file that
  mentions ``thread_rolled_back`` is read twice (the first pass only counts);
  other files once.
* ``asked_at`` is the prompt's timestamp, else the nearest earlier usable one in
  the file (a Problem says so), else the turn's first; ``answered_at`` the last
  usable timestamp of the turn.
* ``extra``: ``cli_version`` and ``originator`` of the session, ``parent_thread_id``
  and ``forked_from_id`` when set, ``rolled_back``, and ``unfinished`` for a turn
  whose ``task_started`` has no ``task_complete``/``turn_aborted`` (a file cut
  mid-turn or still being written). A session whose ``session_meta`` names a
  parent thread (a sub-agent) gives ``subagent`` = its own id.
* Session title (:class:`SessionMeta`): the last ``thread_name_updated`` name.

Resuming
--------
The :class:`Resume` it yields last is the start of the file's last turn (its
first line: the ``task_started`` or ``turn_context`` that opened it, else its
prompt) with what the lines before it said: the session's ``session_meta``
fields, id and project, the model and cwd in effect, the last usable
timestamp, the title so far, the number of prompts and which of them were
rolled back, and the turn ids already taken. A later import of the file grown
by appends starts there and reads that turn again (it may still have been
growing), so it gives the same records a whole read would. Two cases read the
whole file instead: a last turn that starts the file, and a rollback in the
new lines that undoes a prompt before the resume point (those turns must be
given again, marked).
"""

from __future__ import annotations

from histstore.history.importers.codex.lines import AGENT, FORMAT, is_codex_line, is_legacy_header
from histstore.history.importers.codex.reading import parse_file

__all__ = ["AGENT", "FORMAT", "is_codex_line", "is_legacy_header", "parse_file"]
