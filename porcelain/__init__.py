"""Porcelain: the `hs` command people type."""
