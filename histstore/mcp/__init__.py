"""The MCP server: recall and memory as tools any agent can call.

Owns the tools an agent is given (``tools.py``: each tool's name, the
description a model reads and its JSON schema; ``base.py``: checking
arguments against it; ``history.py`` and ``notes.py``: the tools themselves,
plain functions over the library's read paths returning the text the model
reads), the project a call is about (``tools.project_of``: the call's
``_meta``, the client's roots, the server's working directory), the SDK wiring (``server.py``, the only module that
imports the ``mcp`` SDK, loaded only by ``hs mcp``), and registering the
server with an agent (``install.py``). It holds no policy: what a tool may
show is what the read paths below give. Builds on everything below plumbing.
"""
