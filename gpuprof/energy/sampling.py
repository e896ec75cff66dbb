"""What both meters share: a background sampling thread, and turning readings into checked Metrics.

A reading that cannot be true (energy that went down, energy without a single sample, an average
power below the lowest sample) is never turned into a number: it becomes a note that says what
was wrong, and the meter's metrics are left out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

from gpuprof.model import DERIVED, MEASURED, TIMED, Metric

# Relative slack for "average below minimum": sample rounding (NVML reports whole milliwatts).
_SLACK = 1e-3


class PeriodicSampler:
    """Calls ``sample`` every ``interval`` seconds in a daemon thread between start() and stop()."""

    def __init__(self, sample: Callable[[], None], interval: float) -> None:
        self.sample = sample
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="gpuprof-energy", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()


@dataclass
class Reading:
    """One metered region, before checking: energy, time, power samples and how they were read."""

    method: str  # source and scope: "RAPL energy_uj (sysfs powercap): package-0, dram"
    interval_s: float
    duration_s: float = 0.0
    energy_j: float | None = None  # over the whole region; None when the source gave none
    powers_w: list[float] = field(default_factory=list)
    domains: dict[str, float] = field(default_factory=dict)  # energy per domain (RAPL), joules
    problems: list[str] = field(default_factory=list)  # impossible readings found while sampling


def checked_metrics(reading: Reading) -> tuple[list[Metric], list[str]]:
    """Metrics for a plausible reading; otherwise none, and notes naming what was impossible."""
    what = f"energy ({reading.method})"
    problems = list(reading.problems)
    energy, powers = reading.energy_j, reading.powers_w
    if energy is not None and energy < 0:
        problems.append(f"negative energy delta {energy:.6g} J")
    if energy is not None and not powers:
        problems.append(f"energy {energy:.6g} J with no power samples")
    if reading.duration_s <= 0:
        problems.append("the metered region took no time")
    if not problems and energy == 0 and reading.duration_s > 0:
        problems.append(
            f"the counters did not advance in {reading.duration_s:.3g} s (region shorter than "
            "their update interval: give more --repeat)"
        )
    average = energy / reading.duration_s if energy is not None and reading.duration_s > 0 else None
    if average is not None and powers and average < min(powers) * (1 - _SLACK):
        problems.append(f"average power {average:.4g} W is below the lowest sample {min(powers):.4g} W")
    if average is not None and powers and average > max(powers) * (1 + _SLACK):
        problems.append(f"average power {average:.4g} W is above the highest sample {max(powers):.4g} W")
    if problems:
        return [], [f"{what} not reported: impossible reading: {'; '.join(problems)}"]
    if energy is None:
        return [], [f"{what}: no energy over the region"]
    metrics = [Metric("energy", energy, "joule", "energy", MEASURED)]
    metrics += [Metric(f"energy {name}", value, "joule", None, MEASURED) for name, value in reading.domains.items()]
    metrics += [
        Metric("power (avg)", average, "watt", "power_avg", DERIVED),
        Metric("power (min sample)", min(powers), "watt", "power_min", MEASURED),
        Metric("power (max sample)", max(powers), "watt", "power_max", MEASURED),
        Metric("energy samples", float(len(powers)), "sample", None, MEASURED),
        Metric("energy sampling interval", reading.interval_s, "second", None, MEASURED),
        Metric("energy region", reading.duration_s, "second", None, TIMED),
        Metric("energy method", reading.method, "", None, MEASURED),
    ]
    return metrics, []


class SampledMeter:
    """A meter's life around the timed region; subclasses say how to begin, sample and finish.

    ``__enter__`` takes the first reading and starts the sampling thread; ``__exit__`` stops it,
    takes a last sample, lets the subclass fill the :class:`Reading`, and checks it.
    """

    def __init__(self, method: str, interval: float) -> None:
        self.notes: list[str] = []
        self._reading = Reading(method, interval)
        self._sampler = PeriodicSampler(self._sample, interval)
        self._metrics: list[Metric] = []

    def _begin(self) -> None:
        raise NotImplementedError

    def _sample(self) -> None:
        raise NotImplementedError

    def _finish(self, reading: Reading) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._begin()
        self._sampler.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._sampler.stop()
        self._sample()
        self._finish(self._reading)
        self._metrics, notes = checked_metrics(self._reading)
        self.notes += notes

    def metrics(self) -> list[Metric]:
        return list(self._metrics)
