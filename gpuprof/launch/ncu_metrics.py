"""Which metric base names an ncu offers for the GPU profiled, and where that answer came from.

ncu refuses a whole run for one unknown metric name (``==ERROR== Failed to find metric``), and about
a third of gpuprof's catalog does not exist on any one chip (33 of 103 on GH100), so the list must
come from somewhere whenever ncu runs. In order:

1. this machine's cache, one file per ncu (real path, version, size, modification time), compute
   capability and ``CUDA_VISIBLE_DEVICES``: the query costs 1-3 s, once per process before;
2. ``ncu --devices 0 --query-metrics``: the chip of CUDA device 0, the device the workload uses;
3. ``ncu --query-metrics --chips <chip>`` for the chip of this compute capability (needs no GPU, so
   it answers where the device query prints nothing or fails, e.g. without counter permission);
4. the per-chip list shipped with gpuprof, ``gpuprof/data/ncu_metrics/<chip>.txt`` (one base name per
   line, generated from ``ncu --query-metrics-mode all --chips <chip>``), where that file exists;
5. nothing: every catalog metric is requested and ncu says what it lacks.

Only answers from ncu itself are cached (a failed query is asked again next time). The cache lives
in ``$GPUPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpuprof``, else ``~/.cache/gpuprof``; a cache that
cannot be written is skipped silently (the answer is still used).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gpuprof import data
from gpuprof.launch import profilers

LISTED = r"^([a-z][a-z0-9]*__[a-z0-9_]+)\s"  # a --query-metrics row: "dram__bytes   Counter   byte   # of ..."
SHIPPED = Path(data.__file__).parent / "ncu_metrics"
# ncu's --chips name for each compute capability (one representative chip per capability: the
# chips of one capability share their metric names, e.g. ga102/ga104/ga106 for 8.6).
CHIPS = {
    (7, 0): "gv100",
    (7, 2): "gv11b",
    (7, 5): "tu102",
    (8, 0): "ga100",
    (8, 6): "ga102",
    (8, 7): "ga10b",
    (8, 9): "ad102",
    (9, 0): "gh100",
    (10, 0): "gb100",
    (12, 0): "gb202",
}
_BASE_NAME = re.compile(r"^[a-z][a-z0-9]*__[a-z0-9_]+$")


@dataclass(frozen=True)
class Offered:
    """Base metric names the GPU offers (None: unknown, every metric is requested) and their source."""

    names: frozenset[str] | None
    source: str

    @property
    def described(self) -> str:
        """'ncu metric list: 70 names from ncu --query-metrics --chips gh100', for the run's notes."""
        if self.names is None:
            return f"ncu metric list: none ({self.source}); every catalog metric was requested"
        return f"ncu metric list: {len(self.names)} names from {self.source}"


def chip(cc: tuple[int, int] | None) -> str | None:
    """ncu's chip name for compute capability ``cc`` (None where gpuprof knows none)."""
    return CHIPS.get(cc) if cc else None


def cache_dir() -> Path:
    if os.environ.get("GPUPROF_CACHE_DIR"):
        return Path(os.environ["GPUPROF_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuprof"


def _cache_file(exe: str, cc: tuple[int, int] | None) -> Path | None:
    """The cache file of this ncu (path, version, size, mtime) and GPU; None when ncu cannot be stat'ed."""
    real = os.path.realpath(exe)
    try:
        stat = os.stat(real)
    except OSError:
        return None
    version = profilers.executable_version(real)
    key = json.dumps([real, version, stat.st_size, stat.st_mtime_ns, cc, os.environ.get("CUDA_VISIBLE_DEVICES")])
    return cache_dir() / f"ncu-metrics-{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"


def _read_cache(path: Path | None) -> Offered | None:
    try:
        stored = json.loads(path.read_text()) if path else None
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or not isinstance(stored.get("names"), list) or not stored["names"]:
        return None
    return Offered(frozenset(stored["names"]), f"{stored['source']} (cached in {path})")


def _write_cache(path: Path | None, found: Offered) -> None:
    if path is None or found.names is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"source": found.source, "names": sorted(found.names)}))
        os.replace(partial, path)
    except OSError:
        pass


def shipped(chip_name: str | None) -> frozenset[str] | None:
    """The per-chip list shipped with gpuprof (one base name per line, '#' comments), where it exists."""
    path = SHIPPED / f"{chip_name}.txt"
    if not chip_name or not path.is_file():
        return None
    names = {line.split("#", 1)[0].strip() for line in path.read_text().splitlines()}
    return frozenset(name for name in names if _BASE_NAME.match(name)) or None


@functools.cache
def query(exe: str, cc: tuple[int, int] | None = None) -> Offered:
    """What ``exe`` offers for a GPU of compute capability ``cc``, through the chain in the module docstring."""
    cache = _cache_file(exe, cc)
    cached = _read_cache(cache)
    if cached is not None:
        return cached
    name = chip(cc)
    asked = [(exe, "--devices", "0", "--query-metrics")]
    asked += [(exe, "--query-metrics", "--chips", name)] if name else []
    for argv in asked:
        names = profilers.listed(argv, LISTED)
        if names:
            found = Offered(names, " ".join(["ncu", *argv[1:]]))
            _write_cache(cache, found)
            return found
    tried = "; ".join(" ".join(["ncu", *argv[1:]]) for argv in asked) + " listed nothing"
    listing = shipped(name)
    if listing:
        return Offered(listing, f"gpuprof's shipped list for {name} ({tried})")
    why = f"no shipped list for {name}" if name else f"no ncu chip name known for compute capability {cc}"
    return Offered(None, f"{tried}; {why}")
