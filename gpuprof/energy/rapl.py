"""CPU energy from Intel/AMD RAPL counters in Linux's powercap sysfs (``/sys/class/powercap/intel-rapl:*``).

Each zone has ``name`` (``package-0``, ``dram``, ``core``...), ``energy_uj`` (a counter in
microjoules) and ``max_energy_range_uj`` (where the counter wraps back to 0). gpuprof reads the
package and DRAM zones (core and uncore are parts of the package; psys would count everything
twice), at the start and end of the timed region and every sampling interval in between, so a
wrap is seen and undone (to within one counter unit) and the samples give the power per interval.
The counters cover the whole socket: other processes and idle power are included.

Containers sometimes mount the host's sysfs elsewhere; ``$GPUPROF_POWERCAP_ROOT`` names the
folder that holds the ``intel-rapl:*`` zones instead of ``/sys/class/powercap``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from gpuprof.energy.sampling import Reading, SampledMeter

POWERCAP_ROOT = Path("/sys/class/powercap")
POWERCAP_ENV = "GPUPROF_POWERCAP_ROOT"
_HIDDEN = "virtual machines and containers usually hide RAPL"
MICROJOULE = 1e-6
# No socket or DIMM set draws this much: a step implying more over a sample (at least 1 s, since the
# counters update in ~1 ms chunks and two quick reads can straddle one) is a reset counter or a wrong
# max_energy_range_uj turning a small backward step into a huge forward one, and is dropped.
PLAUSIBLE_W = 5000.0


@dataclass(frozen=True)
class Domain:
    zone: str  # "intel-rapl:0:2"
    label: str  # "package-0", "dram-0"
    energy_file: Path
    max_range_uj: int | None


def powercap_root() -> tuple[Path, str]:
    """The powercap folder to read, and what to tell the user if it has no RAPL zones."""
    given = os.environ.get(POWERCAP_ENV, "").strip()
    if given:
        return Path(given), f"the folder named by ${POWERCAP_ENV}"
    return POWERCAP_ROOT, f"{_HIDDEN}; if the host's powercap is mounted elsewhere, set ${POWERCAP_ENV}"


def _label(zone: str, name: str) -> str | None:
    """The domain's label, or None for zones gpuprof does not sum (core, uncore, psys)."""
    if name.startswith("package"):
        return name
    if name == "dram":
        parts = zone.split(":")
        return f"dram-{parts[1]}" if len(parts) > 1 else "dram"
    return None


def find_domains(root: Path) -> list[Domain]:
    """Package and DRAM zones under ``root`` (the flat powercap listing includes sub-zones)."""
    domains = []
    for zone in sorted(root.glob("intel-rapl:*")):
        try:
            label = _label(zone.name, (zone / "name").read_text().strip())
        except OSError:
            continue
        if label is None:
            continue
        try:
            max_range: int | None = int((zone / "max_energy_range_uj").read_text())
        except (OSError, ValueError):
            max_range = None
        domains.append(Domain(zone.name, label, zone / "energy_uj", max_range))
    return domains


def counter_delta(start: int, end: int, max_range: int | None) -> int | None:
    """Microjoules between two reads of one counter; None if it went down with no known wrap point."""
    if end >= start:
        return end - start
    if max_range is None:
        return None
    return end + max_range - start


class RaplMeter(SampledMeter):
    """Energy of the package and DRAM domains over a ``with`` block, sampled in a background thread."""

    def __init__(self, domains: list[Domain], interval: float) -> None:
        labels = ", ".join(d.label for d in domains)
        super().__init__(
            f"RAPL energy_uj (sysfs powercap): {labels}; whole socket, idle and other processes included", interval
        )
        self.domains = domains
        self._totals = [0] * len(domains)
        self._last: list[int | None] = []
        self._start = self._then = 0.0

    def _read(self) -> list[int | None]:
        values: list[int | None] = []
        for domain in self.domains:
            try:
                values.append(int(domain.energy_file.read_text()))
            except (OSError, ValueError):
                values.append(None)
        return values

    def _sample(self) -> None:
        now, values = time.perf_counter(), self._read()
        step = 0
        for i, (domain, before, after) in enumerate(zip(self.domains, self._last, values)):
            if before is None or after is None:
                self._reading.problems.append(f"{domain.zone}/energy_uj became unreadable")
                continue
            delta = counter_delta(before, after, domain.max_range_uj)
            if delta is None:
                self._reading.problems.append(
                    f"negative energy delta on {domain.label} ({before} -> {after} uJ, max_energy_range_uj unreadable)"
                )
                continue
            if delta * MICROJOULE > PLAUSIBLE_W * max(now - self._then, 1.0):
                self._reading.problems.append(
                    f"implausible energy step on {domain.label} ({before} -> {after} uJ with max_energy_range_uj "
                    f"{domain.max_range_uj}: over {PLAUSIBLE_W:.0f} W); that step was dropped"
                )
                continue
            self._totals[i] += delta
            step += delta
        if now > self._then:
            self._reading.powers_w.append(step * MICROJOULE / (now - self._then))
        self._last, self._then = values, now

    def _begin(self) -> None:
        self._last = self._read()
        self._start = self._then = time.perf_counter()

    def _finish(self, reading: Reading) -> None:
        reading.duration_s = self._then - self._start
        reading.domains = {d.label: t * MICROJOULE for d, t in zip(self.domains, self._totals)}
        reading.energy_j = sum(self._totals) * MICROJOULE


def open_rapl(root: Path, interval: float, hint: str = _HIDDEN) -> tuple[RaplMeter | None, list[str]]:
    """A RAPL meter, or None and one line on why there is none here (``hint``: why a folder may
    have no zones, or where it came from)."""
    if not any(root.glob("intel-rapl:*")):
        return None, [f"no CPU power source: {root} has no intel-rapl zones ({hint}); energy not measured"]
    domains = find_domains(root)
    if not domains:
        return None, [f"no CPU power source: {root} has no RAPL package or dram zone; energy not measured"]
    try:
        for domain in domains:
            int(domain.energy_file.read_text())
    except PermissionError:
        return None, [
            (
                f"RAPL counters under {root} are readable by root only (Linux 5.10+ hides them since the "
                "PLATYPUS attack): run as root or have energy_uj made readable; energy not measured"
            )
        ]
    except (OSError, ValueError) as error:
        return None, [f"cannot read RAPL counter {domain.energy_file}: {error}; energy not measured"]
    return RaplMeter(domains, interval), []
