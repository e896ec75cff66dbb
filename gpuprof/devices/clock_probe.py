"""The core clock measured by a probe, for machines whose cycle counter perf cannot read.

In a VM /proc/cpuinfo shows the host's nominal clock, not the one the cores run at, so a peak
computed from it is not a ceiling (a dot product ran at 116 % of it). Where perf counts no cycles,
gpuprof times a chain of dependent 64-bit integer adds: each add needs the previous result, and an
integer add has one cycle of latency on every x86-64 core (Agner Fog's instruction tables), so the
chain runs at one add per cycle and adds per second is the clock. The chain is machine code in an
executable page called through ctypes (a Python loop costs an unknown number of cycles per step).

It measures the core running it, once the repeats are over: cores under wide vector load may run
slower, so an efficiency at this clock errs low rather than above 100 %. Linux on x86-64 only;
elsewhere, or where executable memory is refused, the probe says why and the clock stays unknown.
"""

from __future__ import annotations

import functools
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

ADDS_PER_LOOP = 100
LOOPS = 10_000  # 1 M adds: a quarter of a millisecond at 4 GHz, short enough to run uninterrupted
TRIES = 50  # fastest of: a try the hypervisor or the kernel interrupted runs slow
PLAUSIBLE_HZ = (0.2e9, 8e9)

_ADD = b"\x48\x01\xd0"  # add rax, rdx
_CODE = (
    b"\x31\xc0"  # xor eax, eax
    b"\xba\x01\x00\x00\x00"  # mov edx, 1
    + _ADD * ADDS_PER_LOOP
    + b"\x48\xff\xcf"  # dec rdi          (the loop count, first argument)
    + b"\x0f\x85"
    + (-(len(_ADD) * ADDS_PER_LOOP + 3 + 6)).to_bytes(4, "little", signed=True)  # jnz
    + b"\xc3"
)  # ret: rax = adds done, so the chain cannot be skipped


@dataclass(frozen=True)
class ClockProbe:
    """The probe's answer: the clock in Hz with how it was measured, or why there is none."""

    hz: float | None
    method: str


METHOD = (
    f"clock probe after the timed repeats: chains of {ADDS_PER_LOOP} dependent 64-bit integer adds "
    f"(1 cycle each on x86-64), fastest of {TRIES} × {ADDS_PER_LOOP * LOOPS / 1e6:.0f} M adds on one core"
)


@functools.cache
def _chain() -> Callable[[int], int] | str:
    """The add chain as a callable, or why it cannot be run here."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"no clock probe for {platform.machine() or 'this CPU'} on {sys.platform} (x86-64 Linux only)"
    import ctypes
    import mmap

    try:
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except (OSError, ValueError) as error:
        return f"executable memory refused here ({error}), so the clock probe cannot run"
    page.write(_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    function = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(address)
    function._page = page  # type: ignore[attr-defined]  # the page lives as long as the function
    return function  # type: ignore[no-any-return]


def probe() -> ClockProbe:
    """The core clock now, from the fastest of :data:`TRIES` timed add chains."""
    chain = _chain()
    if isinstance(chain, str):
        return ClockProbe(None, chain)
    fastest = float("inf")
    for _ in range(TRIES):
        start = time.perf_counter_ns()
        done = chain(LOOPS)
        fastest = min(fastest, (time.perf_counter_ns() - start) * 1e-9)
        if done != ADDS_PER_LOOP * LOOPS:
            return ClockProbe(None, f"clock probe returned {done} adds, expected {ADDS_PER_LOOP * LOOPS}")
    hz = ADDS_PER_LOOP * LOOPS / fastest
    if not PLAUSIBLE_HZ[0] <= hz <= PLAUSIBLE_HZ[1]:
        return ClockProbe(None, f"clock probe gave an implausible {hz / 1e9:.2f} GHz (a busy or throttled core)")
    return ClockProbe(hz, METHOD)
