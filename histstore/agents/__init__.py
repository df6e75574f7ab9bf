"""The agents' own configuration files, which hs changes only on request.

Owns where each agent keeps its settings (``homes.py``: ``CLAUDE_CONFIG_DIR``,
``CODEX_HOME``) and the one way hs changes one of those files
(``settings.py``): one entry of a JSON or TOML file changed by a function of
what is there (set, merged into a list beside the person's entries, removed),
every other key kept byte for byte where the format allows, written
atomically with a backup beside it, a second identical change writing
nothing, and a file that does not parse refused and left as it is. Builds on
errors and the store's write helpers only: the installers above it (``hs mcp
install``, ``hs hooks install``) say what the entries are and which are theirs.
"""
