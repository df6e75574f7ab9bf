"""Memory files with history: an agent's notes and their MEMORY.md index.

Owns the rules a note and an index must keep, scopes and their folders,
revisions (memory trees and memory revisions), checked writes with rollback,
a folder's base and its merge with what a sync brought, the prompt a model is
given, and the scan that proposes notes from recorded turns. Builds on store,
history and overlay, and on recall for its stop words.
"""
