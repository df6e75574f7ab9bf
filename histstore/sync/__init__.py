"""Sync: two stores made to hold the same history, memory and forgets.

Owns remotes, the walk of what one side lacks, the deterministic merges of
session revisions, markers and memory revisions, the copy and the ref moves
under both locks, and what follows a pull (the index, memory folders). Builds
on everything below it.
"""
