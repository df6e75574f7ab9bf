"""The overlay: forgetting as markers merged at read time.

Owns reading the markers behind the overlay refs, the memory-note target ids,
the visibility policy (what a tombstone and an exclusion hide from each view),
and the read paths that apply it to history (log, show, export). Markers never
touch turn or memory objects. Builds on store, agents and history.
"""
