"""Operations that span subsystems, as the library offers them to callers.

Owns what must keep several subsystems in step: importing and recording turns
(objects and refs, then the recall index caught up and the memory folders
snapshotted), forget and unforget (a marker, then a new index generation, or
the marker rolled back), undo (refs, memory files and index together), and
fsck (every subsystem's check, one report). Builds on everything below sync.
"""
