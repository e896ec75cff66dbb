"""The clock probe: a chain of dependent integer adds timed on one core, or why there is none."""

from __future__ import annotations

import platform
import sys
import time

import pytest

from gpuprof.devices import clock_probe

x86_linux = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64", reason="the clock probe runs on x86-64 Linux only"
)


@x86_linux
def test_the_chain_does_every_add_and_its_time_grows_with_them():
    chain = clock_probe._chain()
    assert not isinstance(chain, str), chain
    assert chain(7) == 7 * clock_probe.ADDS_PER_LOOP

    def fastest(loops: int) -> float:
        best = float("inf")
        for _ in range(30):
            start = time.perf_counter_ns()
            chain(loops)
            best = min(best, time.perf_counter_ns() - start)
        return best

    assert 3 < fastest(40_000) / fastest(10_000) < 5  # 4× the adds, about 4× the time


@x86_linux
def test_probe_gives_a_plausible_clock_and_says_how():
    found = clock_probe.probe()
    assert found.hz is not None and 0.2e9 < found.hz < 8e9
    assert found.method == clock_probe.METHOD and "dependent 64-bit integer adds" in found.method


def test_elsewhere_the_probe_says_why_not(monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    clock_probe._chain.cache_clear()
    try:
        found = clock_probe.probe()
    finally:
        clock_probe._chain.cache_clear()
    assert found.hz is None and found.method == f"no clock probe for aarch64 on {sys.platform} (x86-64 Linux only)"
