"""Plumbing: low-level commands with stable, machine-readable output (JSON lines)."""
