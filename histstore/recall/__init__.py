"""Recall: the search index over turns, derived from objects and overlay.

Owns the index's generations (built beside the old, swapped through CURRENT
under the index lock, rolled back), the replay of the refs log into the current
generation (catching up), and queries (parsing, ranking, excerpts). Builds on
store, history and overlay.
"""
