"""Live CPU counters over exactly the timed region, with Linux ``perf stat``.

perf is started once, attached to this process and idle (``-p PID -D -1``); the timed loop
enables and disables it through a control FIFO (``--control fifo:CTL,ACK``, perf >= 5.10) and waits
for perf's ``ack``, so warm-up, set-up and the reference check are never counted. Counts are the
sum over every enable..disable window. Output is ``-x,`` CSV under ``LC_ALL=C`` into a file and is
read with :mod:`gpuprof.readers.perf_stat`.

Where counting is impossible (perf not installed, no PMU in a VM, events unknown to this CPU, no
permission) :func:`open_counters` says so in ONE note and the run goes on with analytic FLOPs.
Threads are counted if they exist when perf attaches (NumPy's BLAS threads do by then).
"""

from __future__ import annotations

import functools
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from gpuprof.devices import cpu
from gpuprof.model import MEASURED, Metric
from gpuprof.readers import perf_stat

HARDWARE = ("cycles", "instructions")
SOFTWARE = ("task-clock", "page-faults", "context-switches")
INTEL_FP = tuple(
    f"fp_arith_inst_retired.{width}_{precision}"
    for precision in ("single", "double")
    for width in ("scalar", "128b_packed", "256b_packed", "512b_packed")
)
AMD_FP = ("fp_ret_sse_avx_ops.all",)
ANALYTIC = "FLOPs are analytic"
INSTALL = "install perf (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r))"


def _c_locale() -> dict[str, str]:
    """This process's environment as it is now (not at import), with perf's numbers in the C locale."""
    return {**os.environ, "LC_ALL": "C"}


_TIMEOUT = 10.0


def default_events(vendor: str | None) -> tuple[str, ...]:
    """Hardware, FP and software events worth counting on this vendor's CPUs."""
    fp = INTEL_FP if vendor == "GenuineIntel" else AMD_FP if vendor == "AuthenticAMD" else ()
    return HARDWARE + fp + SOFTWARE


def _short(events: tuple[str, ...]) -> str:
    """'fp_arith_inst_retired.*' for a family of events, else the names."""
    families: dict[str, list[str]] = {}
    for event in events:
        families.setdefault(event.split(".")[0] if "." in event else event, []).append(event)
    return ", ".join(f"{k}.*" if len(v) > 1 else v[0] for k, v in families.items())


@dataclass(frozen=True)
class PerfProbe:
    """What perf can count here, found by running ``perf stat -x, -e EVENTS -- true``."""

    perf: str | None
    version: str | None = None
    usable: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()  # perf knows them but reports <not supported>
    unknown: tuple[str, ...] = ()  # perf rejects the name (no such event on this CPU/kernel)
    error: str | None = None  # perf could not count at all

    def reason(self, in_vm: bool = False, consequence: str = ANALYTIC) -> str | None:
        """One line on what cannot be counted and what that means for FLOPs (``consequence``);
        None when everything can."""
        if self.error:
            return f"CPU hardware counters unavailable: {self.error.rstrip('.')}; {consequence}"
        missing = []
        if self.unsupported:
            missing.append(f"perf reports {_short(self.unsupported)} <not supported>")
        if self.unknown:
            missing.append(f"{'does' if missing else 'perf does'} not know {_short(self.unknown)}")
        if not missing:
            return None
        hardware_lost = not any(e in self.usable for e in HARDWARE) and any(e in self.unsupported for e in HARDWARE)
        why = " (no PMU exposed in this VM)" if in_vm and hardware_lost else ""
        fp_left = any(e in self.usable for e in INTEL_FP + AMD_FP)
        tail = "" if fp_left else f"; {consequence}"
        software = [e for e in self.usable if e in SOFTWARE]
        counted = f"; still counting {', '.join(software)}" if software and hardware_lost else ""
        head = "CPU hardware counters unavailable" if hardware_lost else "some CPU counters unavailable"
        return f"{head}: {' and '.join(missing)}{why}{tail}{counted}"


def _first_error(text: str) -> str:
    """perf's first message line ('Error:' alone on a line is skipped: the reason follows it)."""
    for line in text.splitlines():
        line = line.strip().removeprefix("Error:").strip()
        if line:
            return line
    return "no message"


def _stat(perf: str, events: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [perf, "stat", "-x,", "-e", ",".join(events), "--", "true"],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        env=_c_locale(),
        stdin=subprocess.DEVNULL,
    )


_VERSION = re.compile(r"(\d+)\.(\d+)")


@functools.lru_cache(maxsize=8)
def probe(events: tuple[str, ...], perf: str = "perf") -> PerfProbe:
    """Which of ``events`` perf can count on this machine (cached per process)."""
    path = shutil.which(perf)
    if path is None:
        return PerfProbe(None, error=f"perf is not installed ({INSTALL})")
    try:
        version = (
            subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=_TIMEOUT, env=_c_locale()
            ).stdout.strip()
            or None
        )
        found = _VERSION.search(version or "")
        if found and (int(found.group(1)), int(found.group(2))) < (5, 10):
            return PerfProbe(
                path,
                version,
                error=f"{version} is older than 5.10 and cannot count only the timed region (no --control fifo)",
            )
        done = _stat(path, events)
        if done.returncode != 0 and "event syntax error" not in done.stderr:
            return PerfProbe(path, version, error=f"perf stat failed: {_first_error(done.stderr)}")
        unknown: list[str] = []
        if done.returncode != 0:  # one unknown name fails the whole list: try each alone
            known = []
            for event in events:
                (known if _stat(path, (event,)).returncode == 0 else unknown).append(event)
            done = _stat(path, tuple(known)) if known else done
        counts = perf_stat.parse_csv(done.stderr).counts if done.returncode == 0 else []
    except (OSError, subprocess.SubprocessError) as error:
        return PerfProbe(path, error=f"perf could not be run: {error}")
    unsupported = tuple(perf_stat.event_name(c.event) for c in counts if c.value == "<not supported>")
    usable = tuple(e for e in events if e not in unknown and e not in unsupported)
    return PerfProbe(path, version, usable, unsupported, tuple(unknown))


class PerfCounters:
    """``perf stat`` attached to this process, counting only between :meth:`enable` and :meth:`disable`.

    ``with counters:`` enables on entry and disables on exit (what the timed loop's ``around``
    expects). :meth:`metrics` stops perf and returns the counts; failures never raise, they leave
    a line in :attr:`notes` and no metrics.
    """

    def __init__(self, events: tuple[str, ...], perf: str = "perf", pid: int | None = None) -> None:
        self.events = events
        self.notes: list[str] = []
        self.windows = 0
        self._dir = Path(tempfile.mkdtemp(prefix="gpuprof-perf-"))
        self._output = self._dir / "stat.csv"
        self._log = self._dir / "perf.log"
        ctl, ack = self._dir / "ctl", self._dir / "ack"
        self.argv = [
            perf,
            "stat",
            "-x,",
            "-o",
            str(self._output),
            "-D",
            "-1",
            "--control",
            f"fifo:{ctl},{ack}",
            "-e",
            ",".join(events),
            "-p",
            str(pid or os.getpid()),
        ]
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # The ack FIFO needs a reader before perf opens it for writing, or perf blocks.
        self._ack = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        self._ctl = os.open(ctl, os.O_RDWR | os.O_NONBLOCK)
        self._proc: subprocess.Popen[bytes] | None = None
        self._metrics: list[Metric] | None = None

    def start(self) -> PerfCounters:
        with open(self._log, "wb") as log:
            # Its own session: a Ctrl-C meant for gpuprof (sent to the terminal's process group)
            # must not stop perf before gpuprof has read the counts; perf exits with its target.
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=_c_locale(),
                start_new_session=True,
            )
        return self

    def _fail(self, what: str) -> None:
        detail = _first_error(self._log.read_text(errors="replace")) if self._log.exists() else "no message"
        self.notes.append(f"CPU counters lost: perf stat {what} ({detail}); {ANALYTIC}")
        self._stop()

    def _command(self, word: str) -> bool:
        """Send ``word`` to perf and wait for its ack; False (and a note) when perf is gone."""
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None and self._metrics is None:
                self._fail(f"exited with code {self._proc.returncode}")
            return False
        os.write(self._ctl, f"{word}\n".encode())
        deadline = time.monotonic() + _TIMEOUT
        received = b""
        while b"ack\n" not in received:
            if self._proc.poll() is not None:
                self._fail(f"exited with code {self._proc.returncode} before acknowledging '{word}'")
                return False
            if time.monotonic() > deadline:
                self._fail(f"did not acknowledge '{word}' within {_TIMEOUT:g} s")
                return False
            ready, _, _ = select.select([self._ack], [], [], 0.05)
            if ready:
                received += os.read(self._ack, 64)
        return True

    def enable(self) -> None:
        if self._command("enable"):
            self.windows += 1

    def disable(self) -> None:
        self._command("disable")

    def __enter__(self) -> PerfCounters:
        self.enable()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.disable()

    def _stop(self) -> None:
        """Stop perf (SIGINT makes it write its counts), read them, remove the FIFOs."""
        if self._metrics is not None:
            return
        self._metrics = []
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.send_signal(signal.SIGINT)
                try:
                    self._proc.wait(_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
            if self.windows and self._output.exists():
                stat = perf_stat.parse_csv(self._output.read_text(errors="replace"))
                # perf's own ratios (CPUs utilized, /sec) divide by its whole lifetime, disabled time
                # included, so only the counts are kept.
                self._metrics = [
                    m for count in stat.counts for m in perf_stat.count_metrics(count) if m.origin == MEASURED
                ]
                self.notes += perf_stat.notes(stat)
        os.close(self._ack)
        os.close(self._ctl)
        shutil.rmtree(self._dir, ignore_errors=True)

    def metrics(self) -> list[Metric]:
        """The counts over all enabled windows (stops perf on first call)."""
        self._stop()
        return list(self._metrics or [])

    close = _stop


def open_counters(events: tuple[str, ...] | None = None, perf: str = "perf") -> tuple[PerfCounters | None, list[str]]:
    """Started counters for what this machine can count, or None; plus at most one note on what it cannot."""
    info = cpu.describe()
    found = probe(events or default_events(info.get("vendor")), perf)
    reason = found.reason(in_vm=bool(info.get("hypervisor")))
    notes = [reason] if reason else []
    if not found.usable:
        return None, notes
    return PerfCounters(found.usable, found.perf or perf).start(), notes
