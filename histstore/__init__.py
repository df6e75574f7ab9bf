"""histstore: a git-style, content-addressed store for what coding agents did and remember."""

__version__ = "0.1.0"
