"""History: turns, where they come from and how they are read back.

Owns the turn record schema, the importers (pure parsers of agents' session
files), the import pipeline that stores turns and moves session refs, the
project key, and reading history back (log entries, one turn, ids by prefix).
Builds on the store, and on agents for where they keep their files.
"""
