"""One reported number, and the ceilings a run recorded: the leaf every producer of quantities imports.

Kept apart from :mod:`gpuprof.derive.summary`, which assembles the producers' quantities, so that a
producer never imports the module that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuprof.devices.peaks import Peaks
from gpuprof.model import Run
from gpuprof.model.quantities import BY_KEY


@dataclass(frozen=True)
class Quantity:
    """One reported number with its unit, origin and a few words on how it was obtained; ``key`` is its
    stable name (:mod:`gpuprof.model.quantities`), ``name`` the words ``gpuprof run`` prints. A roofline
    efficiency says which roof bound it (``bound``: 'memory' or 'compute')."""

    name: str
    value: float | str | None
    unit: str
    origin: str
    basis: str
    key: str = ""
    bound: str = ""


def reported(key: str, value: float | str | None, origin: str, basis: str) -> Quantity:
    """The quantity of a fixed ``key``, with the words and unit :data:`gpuprof.model.quantities.KEYS` gives it."""
    return Quantity(BY_KEY[key].label, value, BY_KEY[key].unit, origin, basis, key)


def run_peaks(run: Run) -> list[Peaks]:
    """The ceilings recorded with the run (theoretical, table, calibrated), in that order."""
    return [Peaks(**{**p, "notes": tuple(p.get("notes", ()))}) for p in run.device.get("peaks", [])]
