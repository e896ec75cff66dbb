"""Sweeps: a grid of (op, size, dtype, engine) points read from a TOML file, measured one by one.

Every finished point is stored at once, in its own transaction, so a sweep killed at any moment
keeps every point it finished, and ``--resume`` measures only what is missing. A point is found
again by its key (op, bytes, dtype, engine, cache, repeats, warm-up), recorded with the run as
``workload["sweep"] = {"config", "config_hash", "point", "device", "host"}``; resuming skips a
point stored under the same config name, point key, device kind and host. Editing a config keeps
the finished points whose settings did not change; ``config_hash`` says which version of the
config measured a run.

Config format (``configs/quick.toml``, ``configs/paper.toml``)::

    name = "quick"                 # optional, default: the file name
    description = "..."            # optional
    repeat = 3                     # timed repeats (default 10)
    warmup = 1                     # untimed calls first (default 3)
    dtypes = ["float32"]           # default ["float32"]
    engines = ["default", "pytensor-jax"]  # "default": the device's default engine (also when left out)
    cache = "warm"                 # warm | cold
    counters = true                # hardware counters where the machine allows
    [[grid]]                       # one or more; each may override the keys above
    ops = ["add", "mul"]
    sizes = ["6MB", "12MB"]
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gpuprof import inputs
from gpuprof.derive.summary import instability, quantities
from gpuprof.errors import DeviceError, FormatError, GpuprofError, InputError, shortened
from gpuprof.measure import CACHE_MODES, RunSettings, choose_device, measure
from gpuprof.model import Run
from gpuprof.model.sizes import format_bytes, parse_size
from gpuprof.store import open_store
from gpuprof.workloads import ENGINES, ops

# In ``engines``, the device's default engine (NumPy on a CPU, CuPy on a GPU), so one config serves both.
DEVICE_DEFAULT = "default"
# Keys a grid entry may override, with their defaults.
_SETTINGS: dict[str, Any] = {
    "repeat": 10,
    "warmup": 3,
    "dtypes": ["float32"],
    "engines": [None],
    "cache": "warm",
    "counters": True,
}
# [slurm] is read and checked by gpuprof.sweep.slurm (``gpuprof sweep --slurm``).
# A config's name is a folder name (reports/slurm/<name>) and a tag in the store: one safe path component.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
CONFIG_BYTES = 1 << 20  # a config is a few KiB; more is not one (and /dev/zero must not fill memory)
_TOP_KEYS = {"name", "description", "seed", "grid", "slurm", *_SETTINGS}
_GRID_KEYS = {"ops", "sizes", *_SETTINGS}


@dataclass(frozen=True)
class Point:
    """One measurement of a sweep."""

    op: str
    size: str  # as written in the config ("6MB")
    size_bytes: int
    dtype: str
    engine: str | None
    cache: str
    repeat: int
    warmup: int
    counters: bool

    @property
    def key(self) -> str:
        """Stable identity: changes exactly when the measurement would."""
        return (
            f"{self.op}:{self.size_bytes}B:{self.dtype}:{self.engine or 'default'}:{self.cache}:"
            f"r{self.repeat}:w{self.warmup}"
        )

    @property
    def label(self) -> str:
        return f"{self.op} {format_bytes(self.size_bytes)} {self.dtype} {self.engine or 'default engine'}"

    def settings(self, device: str, seed: int, command: str) -> RunSettings:
        """The run this point asks for, locally or in a Slurm job (InputError where it is not one)."""
        return RunSettings(
            op=self.op,
            size=self.size,
            dtype=self.dtype,
            engine=self.engine,
            device=device,
            repeat=self.repeat,
            warmup=self.warmup,
            cache=self.cache,
            counters=self.counters,
            seed=seed,
            command=command,
        )


@dataclass(frozen=True)
class SweepConfig:
    name: str
    description: str
    path: str
    points: tuple[Point, ...]
    seed: int = 0

    @property
    def config_hash(self) -> str:
        """sha256 of the normalised grid (not of the file's text: comments and layout do not count)."""
        data = json.dumps([asdict(p) for p in self.points], sort_keys=True)
        return hashlib.sha256(f"{self.seed}|{data}".encode()).hexdigest()[:16]


def _bad(path: Path, key: str, problem: str, fix: str) -> InputError:
    return InputError(f"{path}: key '{key}' {problem}", fix)


def _list(path: Path, key: str, value: Any, kind: type) -> list[Any]:
    if not isinstance(value, list) or not value or not all(isinstance(v, kind) for v in value):
        raise _bad(path, key, f"must be a non-empty list of {kind.__name__}s", f"e.g. {key} = [...]")
    return value


def _int(path: Path, key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad(path, key, f"must be an integer of at least {minimum}, got {value!r}", f"e.g. {key} = 3")
    return value


def _settings(path: Path, where: str, table: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``base`` overridden by the setting keys of ``table``, each checked."""
    out = dict(base)
    for key in _SETTINGS:
        if key not in table:
            continue
        name, value = f"{where}{key}", table[key]
        if key in ("repeat", "warmup"):
            out[key] = _int(path, name, value, 1 if key == "repeat" else 0)
        elif key in ("dtypes", "engines"):
            allowed = list(ops.DTYPES) if key == "dtypes" else [DEVICE_DEFAULT, *ENGINES]
            unknown = [v for v in _list(path, name, value, str) if v not in allowed]
            if unknown:
                raise _bad(path, name, f"has unknown {key[:-1]} '{unknown[0]}'", f"choose from {', '.join(allowed)}")
            out[key] = [None if v == DEVICE_DEFAULT else v for v in value]
        elif key == "cache":
            if value not in CACHE_MODES:
                raise _bad(path, name, f"must be one of {', '.join(CACHE_MODES)}, got {value!r}", 'e.g. cache = "warm"')
            out[key] = value
        elif not isinstance(value, bool):
            raise _bad(path, name, f"must be true or false, got {value!r}", "e.g. counters = true")
        else:
            out[key] = value
    return out


def _unknown(path: Path, where: str, table: dict[str, Any], allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            raise _bad(path, f"{where}{key}", "is not a sweep setting", f"known keys: {', '.join(sorted(allowed))}")


def _grid_points(path: Path, index: int, entry: Any, base: dict[str, Any]) -> list[Point]:
    where = f"grid[{index}]."
    if not isinstance(entry, dict):
        raise _bad(path, f"grid[{index}]", "must be a table", "write [[grid]] with ops and sizes")
    _unknown(path, where, entry, _GRID_KEYS)
    for required in ("ops", "sizes"):
        if required not in entry:
            raise _bad(path, f"{where}{required}", "is missing", "every [[grid]] needs ops and sizes")
    names = _list(path, f"{where}ops", entry["ops"], str)
    unknown = [op for op in names if op not in ops.OPS]
    if unknown:
        raise _bad(path, f"{where}ops", f"has unknown op '{unknown[0]}'", f"choose from {', '.join(ops.OPS)}")
    sizes = []
    for position, size in enumerate(_list(path, f"{where}sizes", entry["sizes"], str)):
        try:
            sizes.append((size, parse_size(size)))
        except InputError as error:
            raise _bad(path, f"{where}sizes[{position}]", f"= {size!r} is not a size", error.fix or "") from None
    s = _settings(path, where, entry, base)
    return [
        Point(op, text, count, dtype, engine, s["cache"], s["repeat"], s["warmup"], s["counters"])
        for op in names
        for text, count in sizes
        for dtype in s["dtypes"]
        for engine in s["engines"]
    ]


def load_config(path: str | Path) -> SweepConfig:
    """Read and check a sweep config; an InputError names the file and the offending key."""
    path = Path(path)
    try:
        data = tomllib.loads(
            inputs.read_capped(
                path, CONFIG_BYTES, "a sweep config", "give a TOML sweep config such as configs/quick.toml"
            ).decode("utf-8")
        )
    except FormatError as error:  # missing, a FIFO or device, too big: a bad argument to sweep
        raise InputError(error.problem, error.fix) from None
    except UnicodeDecodeError:
        raise InputError(
            f"{path} is not a text file, so not a sweep config", "give a TOML sweep config such as configs/quick.toml"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path} is not valid TOML: {error}", "fix the syntax at that line") from None
    _unknown(path, "", data, _TOP_KEYS)
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise _bad(path, key, "must be a string", f'e.g. {key} = "quick"')
    if "name" in data and not _SAFE_NAME.fullmatch(data["name"]):  # it names reports/slurm/<name>
        raise _bad(
            path,
            "name",
            f"= {shortened(repr(data['name']), 60)} is not one folder name",
            'use letters, digits, ".", "_" and "-", starting with a letter or digit (e.g. name = "quick")',
        )
    seed = _int(path, "seed", data.get("seed", 0), 0)
    grid = data.get("grid")
    if not isinstance(grid, list) or not grid:
        raise _bad(path, "grid", "is missing", "add at least one [[grid]] table with ops and sizes")
    base = _settings(path, "", data, _SETTINGS)
    points: list[Point] = []
    for index, entry in enumerate(grid):
        for point in _grid_points(path, index, entry, base):
            if point not in points:
                points.append(point)
    return SweepConfig(
        name=data.get("name", _UNSAFE.sub("_", path.stem).lstrip("._-")[:100] or "sweep"),
        description=data.get("description", ""),
        path=str(path),
        points=tuple(points),
        seed=seed,
    )


class Listener(Protocol):
    """What a sweep reports while it runs (the CLI draws a progress bar from these)."""

    def started(self, total: int, skipped: int) -> None: ...
    def point_started(self, point: Point) -> None: ...
    def point_stored(self, point: Point, run: Run) -> None: ...
    def point_failed(self, point: Point, error: str) -> None: ...


class _Silent:
    def started(self, total: int, skipped: int) -> None: ...
    def point_started(self, point: Point) -> None: ...
    def point_stored(self, point: Point, run: Run) -> None: ...
    def point_failed(self, point: Point, error: str) -> None: ...


@dataclass
class SweepResult:
    """What a sweep did: stored points (with run ids), skipped, failed and not reached."""

    stored: list[tuple[Point, str]] = field(default_factory=list)
    skipped: list[Point] = field(default_factory=list)
    failed: list[tuple[Point, str]] = field(default_factory=list)
    not_run: list[Point] = field(default_factory=list)
    interrupted: bool = False
    store: str = ""


def stored_line(point: Point, run: Run) -> str:
    """The line a sweep prints for a stored point: its MFLOP/s, engine, device and run, with
    'UNSTABLE (time spread x %)' after the rate where the run's repeats disagree."""
    rate = next((q.value for q in quantities(run) if q.name == "MFLOP/s"), None)
    rate_text = f"{rate:,.1f} MFLOP/s (derived: analytic FLOPs / timed median)" if isinstance(rate, float) else ""
    rate_text += f" {instability(run)}" if rate_text and instability(run) else ""
    engine = (run.workload or {}).get("engine", "?")
    return f"stored {point.label}: {rate_text}, {engine} on {run.device.get('name', '?')}, run {run.run_id[:8]}"


def sweep_tag(config: SweepConfig, point: Point, device: str, host: str) -> dict[str, str]:
    """The ``workload["sweep"]`` record that lets ``--resume`` find a point again."""
    return {
        "config": config.name,
        "config_hash": config.config_hash,
        "point": point.key,
        "device": device,
        "host": host,
    }


def stored_points(workloads: Iterable[dict[str, Any] | None], config_name: str, device: str, host: str) -> set[str]:
    """Point keys already stored for this config name on this device kind and host, from the stored
    runs' workload records (:meth:`gpuprof.store.Store.workloads`)."""
    keys = set()
    for workload in workloads:
        tag = (workload or {}).get("sweep") or {}
        tag = tag if isinstance(tag, dict) else {}
        if tag.get("config") == config_name and tag.get("device") == device and tag.get("host") == host:
            keys.add(tag.get("point"))
    return keys


def _failure(error: BaseException) -> str:
    if isinstance(error, GpuprofError):
        return str(error)
    if isinstance(error, MemoryError):
        return "out of memory. give smaller sizes in the config"
    return f"unexpected {type(error).__name__}: {error} (a gpuprof bug: please report it)"


def run_sweep(
    config: SweepConfig,
    store_path: str | Path | None = None,
    device: str = "auto",
    resume: bool = False,
    listener: Listener | None = None,
    stop: Callable[[], bool] = lambda: False,
    command: str = "",
) -> SweepResult:
    """Measure every point of ``config``, storing each as it finishes.

    ``stop`` is asked before each point (the CLI sets it on Ctrl-C); a point that fails is recorded
    in the result and the sweep goes on.
    """
    listener = listener or _Silent()
    kind = choose_device(device)[0]
    host = platform.node()
    result = SweepResult()
    with open_store(store_path) as store:
        store.writable()  # before the first point, not after it
        result.store = str(store.path)
        done = stored_points(store.workloads('"sweep"'), config.name, kind, host) if resume else set()
        todo = [p for p in config.points if p.key not in done]
        result.skipped = [p for p in config.points if p.key in done]
        listener.started(len(config.points), len(result.skipped))
        for position, point in enumerate(todo):
            if stop():
                result.interrupted = True
                result.not_run = todo[position:]
                break
            listener.point_started(point)
            try:
                settings = point.settings(kind, config.seed, command)
                run = measure(settings, str(store.path))
            except DeviceError:
                raise  # no such device: every other point would fail the same way
            except Exception as error:  # noqa: BLE001 - one bad point must not end a long sweep
                result.failed.append((point, _failure(error)))
                listener.point_failed(point, _failure(error))
                continue
            run.workload = {**(run.workload or {}), "sweep": sweep_tag(config, point, kind, host)}
            store.add(run)
            result.stored.append((point, run.run_id))
            listener.point_stored(point, run)
    return result
