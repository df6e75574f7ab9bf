"""Capture as it happens: the agents' hooks, the spool, the watcher.

Owns what an agent's hook hands hs and what becomes of it: reading the
payloads Claude Code and Codex send (``events.py``), turning one into an
import of only what its transcript gained (``run.py``: the lag of a
transcript behind its hook made good from the hook's own copy of the answer,
the store lock never waited for — the payload is spooled instead and applied
by the next capture or import), the record of every capture and failure in
the store (``journal.py``), putting hs's hooks into the agents' settings and
taking them out again (``hooks.py``), and importing as agent files change
(``watch.py``, on the ``watchdog`` package). Builds on ops (the import that
brings the recall index along) and everything below it; it never prints, and
a capture never raises: what went wrong is recorded instead.
"""
