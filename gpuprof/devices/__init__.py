"""Devices: what hardware a run used and what it can do at most (its peaks)."""
