"""Derived metrics: pure functions over stored records (no files, no subprocesses)."""
