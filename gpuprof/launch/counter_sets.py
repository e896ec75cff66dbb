"""The event lists of ``gpuprof profile --counters`` (gpuprof/data/cpu_event_sets.toml) for this CPU."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from gpuprof.errors import InputError

VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}


@functools.cache
def sets() -> dict[str, dict[str, object]]:
    return tomllib.loads(resources.files("gpuprof.data").joinpath("cpu_event_sets.toml").read_text("utf-8"))


def events(names: str, vendor: str | None) -> tuple[list[str], list[str]]:
    """The events of the comma-separated sets for ``vendor`` (cpuinfo's vendor_id), and a note for
    each set that has none on this vendor."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in sets()]
    if unknown:
        raise InputError(
            f"unknown counter set {', '.join(map(repr, unknown))}",
            f"choose from: {', '.join(sets())} (e.g. --counters mix,topdown)",
        )
    column = VENDORS.get(vendor or "", "generic")
    found: list[str] = []
    notes: list[str] = []
    for name in wanted:
        listed = list(sets()[name].get(column) or [])  # type: ignore[call-overload]
        if not listed:
            notes.append(f"counter set {name!r} has no events for this CPU ({vendor or 'unknown vendor'})")
        found += [event for event in listed if event not in found]
    return found, notes
