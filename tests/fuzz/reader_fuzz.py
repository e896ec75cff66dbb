"""Fuzzing every profiler-output reader with mutated copies of the real fixtures.

Contract under test: whatever bytes a file holds, a reader either returns a :class:`Run` whose
metric values the store can hold, or raises :class:`gpuprof.errors.GpuprofError` with a one-line
message. Any other exception is a bug; so is a reader still busy after the time limit.

Inputs are deterministic: case ``i`` of target ``t`` is built from ``random.Random(f"{t}:{i}:{seed}")``,
so ``python benchmarks/fuzz_readers.py --show t:i`` rebuilds the exact bytes of any failure.
Each target runs in a forked worker watched by the parent: a worker that stops answering within
the limit is killed and counted as a hang, one that dies (a crash in a C extension) as a crash.

Targets: every registered reader's ``read`` (called directly, as ``gpuprof import --reader NAME``
does, so it also sees other tools' files), ``sniff`` (all sniffers on the decoded head) and
``detect`` (the registry's detect + read, what ``gpuprof import FILE`` does), ``kernels`` (detect,
read and the per-kernel table ``gpuprof import`` prints: damaged names and numbers reach it), and:

- ``import``: the ``gpuprof import FILE --store S`` command itself (read, store, per-kernel table,
  rendered as text), whose output must hold no raw control character (an escape sequence in a kernel
  name must not reach the terminal); every 50th input is a FIFO and every 50th a link to /dev/zero;
- ``runfile``: JSON-lines run files (as ``gpuprof export`` writes them from real fixtures) loaded
  as ``merge`` and ``compare --import`` load them and stored, with hostile JSON (deep nesting, huge
  integers, wrong types, a list where an object belongs, multi-megabyte strings) among the mutations;
- ``numbers``: one number of a real file doubled (whole tokens only); every measured metric of the
  result must be the pristine file's value, twice it, or missing with a note: any other value is a
  wrong number.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DIRS = (
    ROOT / "tests" / "fixtures" / "profiler-outputs",
    ROOT / "tests" / "fixtures" / "cpu-counters",
    ROOT / "tests" / "fixtures" / "stonne" / "run_0001_TM2_TN1_TK64",
    ROOT / "tests" / "fixtures" / "traces",
    ROOT / "tests" / "fixtures" / "dlprof",
    ROOT / "tests" / "fixtures" / "regions",
)
COMPRESSED_SEED_CAP = (
    256 * 1024
)  # a compressed trace larger than this (the 1 MB Kineto one) is left out: slow to mutate
SEED_CAP = 64 * 1024  # text seeds are cut to their first 64 KiB of whole lines; binary reports stay whole
BINARY_SUFFIXES = (".ncu-rep", ".gz", ".pb", ".qdrep", ".nsys-rep", ".sqlite")
# Mutated inputs are cut to 4 MiB: the time limit is there to catch pathological (quadratic,
# backtracking) code, not the honest cost of a 100 MB file (benchmarks/bench_ncu_csv_parse.py).
MAX_INPUT = 4 * 1024 * 1024
SPECIAL_TARGETS = ("sniff", "detect", "kernels", "import", "runfile", "numbers")
# The per-input limit is there for pathological (quadratic, blocking) code; these targets also do honest
# work the readers do not (store, render; a run file of 240 runs takes 25 s on a loaded 2-core VM), so
# they get this many times the limit.
LIMIT_FACTOR = {"import": 5, "runfile": 30, "numbers": 2}
PATH_CASE_EVERY = 50  # the import target: input i is a FIFO when i % 50 == 49, a link to /dev/zero at 24
# A worker reads at most this many inputs before a fresh one takes over: NVIDIA's ncu_report keeps
# about 1 MB per loaded report (harmless for one import, 9 GB after a few thousand).
WORKER_INPUTS = 500
# A case is a hang when it spends the limit in CPU time, or this many times the limit on the wall clock.
WALL_FACTOR = 10


_RUNFILE_NAMES: set[str] = set()


@functools.lru_cache(maxsize=1)
def _cached_seeds() -> tuple[tuple[str, bytes], ...]:
    found = _fixture_seeds()
    runfiles = runfile_seeds()
    _RUNFILE_NAMES.update(runfiles)
    return tuple({**found, **runfiles}.items())


def seeds() -> dict[str, bytes]:
    """Every fixture file (SOURCES.md too: markdown quoting several formats is good foreign input),
    and run files written from three of them."""
    return dict(_cached_seeds())


def _fixture_seeds() -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for folder in FIXTURE_DIRS:
        for path in sorted(folder.iterdir()):
            data = path.read_bytes()
            if path.suffix == ".gz" and len(data) > COMPRESSED_SEED_CAP:
                continue
            if path.suffix not in BINARY_SUFFIXES and len(data) > SEED_CAP:
                data = data[: data.rfind(b"\n", 0, SEED_CAP) + 1]
            found[path.name] = data
    return found


def runfile_seeds() -> dict[str, bytes]:
    """JSON-lines run files of three real fixtures (ncu CSV, nvprof text, perf stat), as export writes them."""
    from gpuprof.readers import read
    from gpuprof.store import runfile

    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in (
            "ncu_csv_details_a100_roofline_printfp.csv",
            "nvprof_text_metrics_gtx1070_srad.txt",
        ):
            out = Path(tmp) / f"{name}.jsonl"
            runfile.write(out, [read(FIXTURE_DIRS[0] / name)])
            found[out.name] = out.read_bytes()
        perf = next(FIXTURE_DIRS[1].glob("perf-stat-*.txt"))
        out = Path(tmp) / f"{perf.name}.jsonl"
        runfile.write(out, [read(perf)])
        found[out.name] = out.read_bytes()
    return found


def targets() -> list[str]:
    from gpuprof.readers import modules

    return [m.NAME for m in modules()] + list(SPECIAL_TARGETS)


def own_seeds(target: str, all_seeds: dict[str, bytes]) -> list[str]:
    """The fixtures a reader recognises as its own (by the registry's detect on the pristine file)."""
    from gpuprof.errors import GpuprofError
    from gpuprof.readers import detect

    if target == "runfile":
        return sorted(name for name in all_seeds if name.endswith(".jsonl") and name in _RUNFILE_NAMES)
    if target in SPECIAL_TARGETS and target != "numbers":
        return sorted(all_seeds)
    own = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in all_seeds.items():
            key = (name, hashlib.blake2b(data, digest_size=16).digest())
            if key not in _DETECTED:  # the same detection for every target: done once per seed
                path = Path(tmp) / name
                path.write_bytes(data)
                try:
                    _DETECTED[key] = detect(path).NAME
                except GpuprofError:  # recognised by no reader: foreign to every one
                    _DETECTED[key] = None
            numbers = target == "numbers" and Path(name).suffix not in BINARY_SUFFIXES and _NUMBER.search(data)
            if _DETECTED[key] == target or (numbers and _DETECTED[key] is not None):
                own.append(name)
    return own


_DETECTED: dict[tuple[str, bytes], str | None] = {}  # (seed name, digest) -> the reader detect chose


# --- mutations: each takes (data, rng, seeds) and returns new bytes ---------------------------------

Mutation = Callable[[bytes, random.Random, dict[str, bytes]], bytes]
_EXTREME_NUMBERS = (
    b"1e999",
    b"-1e999",
    b"nan",
    b"inf",
    b"-0",
    b"",
    b"99999999999999999999999999",
    b"1,2,3",
    b"0x1f",
    b"1.2.3",
    b"-",
    b"n/a",
    b"1e-400",
    b"\xe2\x80\x89",
    b"%",
)
_INSERTS = (
    b"\x00",
    b'"',
    b",",
    b"\r",
    b"\n",
    b"\t",
    b"==ERROR== ",
    b"==PROF== ",
    b"\xff\xfe",
    b"\xc3",
    b"\xe2\x80\xa8",
    b"(",
    b")",
    b"[",
    b"%",
    b"#",
    b";",
    b"  ",
    b"\x1b[31m",
)
_NON_ASCII = ("é", "µ", "ß", "’", "°", "€")
_FOREIGN_CSV = (
    b"Date,Open,High,Low,Close,Volume\n2020-01-02,74.06,75.15,73.80,75.09,135480400\n",
    b'"Name","Calls","Time"\n"kernel",3,"12 ms"\n',
    b"timestamp,cpu,instructions,cycles\n0.001,0,12345,67890\n0.002,1,2345,789\n",
    b"ID,Kernel Name,Metric Name\n1,2,3\n",
    b'"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n',
)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def truncate(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def flip_bytes(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _i in range(rng.choice((1, 2, 8, 64))):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def insert_bytes(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    for _i in range(rng.randint(1, 6)):
        at = rng.randrange(len(data) + 1)
        data = data[:at] + rng.choice(_INSERTS) + data[at:]
    return data


def shuffle_lines(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    lines = _lines(data)
    rng.shuffle(lines)
    return b"".join(lines)


def duplicate_lines(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    lines = _lines(data)
    for _i in range(rng.randint(1, 10)):
        if lines:
            at = rng.randrange(len(lines))
            lines[at:at] = [lines[at]] * rng.randint(1, 50)
    return b"".join(lines)


def delete_lines(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    lines = _lines(data)
    keep = rng.random()
    return b"".join(line for line in lines if rng.random() < keep)


def drop_field(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """Remove or add one separator in some lines: rows with too few or too many fields."""
    lines = _lines(data)
    for _i in range(rng.randint(1, 10)):
        if not lines:
            break
        at = rng.randrange(len(lines))
        line = lines[at]
        sep = b"," if b"," in line else b" "
        if rng.random() < 0.5 and sep in line:
            cut = line.index(sep)
            lines[at] = line[:cut] + line[cut + 1 :]
        else:
            lines[at] = sep + line
    return b"".join(lines)


def extreme_numbers(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """Replace some digit runs with values parsers choke on (1e999, nan, huge integers, '')."""
    out = bytearray()
    i = 0
    rate = rng.choice((0.01, 0.1, 0.5))
    while i < len(data):
        if 48 <= data[i] <= 57:
            j = i
            while j < len(data) and (48 <= data[j] <= 57 or data[j] in b".,"):
                j += 1
            out += rng.choice(_EXTREME_NUMBERS) if rng.random() < rate else data[i:j]
            i = j
        else:
            out.append(data[i])
            i += 1
    return bytes(out)


def _with_non_ascii(data: bytes, rng: random.Random) -> str:
    text = data.decode("utf-8", errors="replace")
    chars = list(text)
    for _i in range(rng.randint(1, 20)):
        if chars:
            chars[rng.randrange(len(chars))] = rng.choice(_NON_ASCII)
    return "".join(chars)


def reencode(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """UTF-16 (with and without BOM), Latin-1 with accented letters, a UTF-8 BOM, cp1252."""
    text = data.decode("utf-8", errors="replace")
    choice = rng.randrange(6)
    if choice == 0:
        return text.encode("utf-16")
    if choice == 1:
        return text.encode("utf-16-le")
    if choice == 2:
        return text.encode("utf-16-be")
    if choice == 3:
        return _with_non_ascii(data, rng).encode("latin-1", errors="replace")
    if choice == 4:
        return b"\xef\xbb\xbf" + data
    return _with_non_ascii(data, rng).encode("cp1252", errors="replace")


def line_ends(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """CRLF (Windows), CR only (old Mac), mixed, or no final newline."""
    choice = rng.randrange(4)
    if choice == 0:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if choice == 1:
        return data.replace(b"\n", b"\r")
    if choice == 2:
        return b"".join(line.rstrip(b"\n") + b"\r\n" if rng.random() < 0.5 else line for line in _lines(data))
    return data.rstrip(b"\r\n")


def huge_line(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """A line or a quoted field longer than the csv module's default 128 KiB field limit."""
    size = rng.choice((1000, 140_000, 1_100_000))
    filler = rng.choice((b"A" * size, b'"' + b"x" * size + b'"', b"," * size, b"9" * size, b'"' + b"y" * size))
    lines = _lines(data)
    at = rng.randrange(len(lines) + 1)
    if lines and rng.random() < 0.5:  # grow a field inside an existing line
        line = lines[min(at, len(lines) - 1)]
        cut = rng.randrange(len(line) + 1)
        lines[min(at, len(lines) - 1)] = line[:cut] + filler + line[cut:]
    else:
        lines[at:at] = [filler + b"\n"]
    return b"".join(lines)


def garbage(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """Random bytes instead of, before or after the file."""
    noise = rng.randbytes(rng.choice((1, 16, 512, 4096)))
    choice = rng.randrange(3)
    return noise if choice == 0 else noise + data if choice == 1 else data + noise


def splice(data: bytes, rng: random.Random, all_seeds: dict[str, bytes]) -> bytes:
    """The start of this file followed by the end of another (a CSV of another tool inside)."""
    other = all_seeds[rng.choice(sorted(all_seeds))]
    return data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1) :]


def replace_whole(data: bytes, rng: random.Random, all_seeds: dict[str, bytes]) -> bytes:
    """Empty, blank, another tool's CSV, or another fixture untouched."""
    choice = rng.randrange(5)
    if choice == 0:
        return b""
    if choice == 1:
        return rng.choice((b"\n", b"\n\n\n", b" ", b"\r\n", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe"))
    if choice == 2:
        return rng.choice(_FOREIGN_CSV)
    return all_seeds[rng.choice(sorted(all_seeds))]


_ESCAPES = (
    b"\x1b]0;pwned\x07",  # window title
    b"\x1b]52;c;cm0gLXJmIH4=\x07",  # clipboard write
    b"\x1b[2J\x1b[H",  # clear the screen
    b"\xe2\x80\xae",  # right-to-left override (U+202E)
    b"\x1b[31m",
    b"\x07",
    b"\x9b31m",  # a C1 CSI in Latin-1
)


def escape_names(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """Terminal escape sequences inside words (kernel, device and file names) of some lines."""
    lines = _lines(data)
    for _i in range(rng.randint(1, 8)):
        if not lines:
            break
        at = rng.randrange(len(lines))
        letters = [i for i, byte in enumerate(lines[at]) if 65 <= byte <= 122]
        if letters:
            cut = rng.choice(letters)
            lines[at] = lines[at][:cut] + rng.choice(_ESCAPES) + lines[at][cut:]
    return b"".join(lines)


def hostile_json(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """One JSON line of a run file replaced by a hostile variant of itself (shape, size, nesting)."""
    lines = _lines(data)
    if not lines:
        return data
    at = rng.randrange(len(lines))
    try:
        record = json.loads(lines[at])
    except ValueError:
        return data
    choice = rng.randrange(7)
    if choice == 0:
        bad = "[" * 100_000 + "]" * 100_000
    elif choice == 1:
        bad = json.dumps({**record, "run_id": 10 ** rng.choice((30, 400, 4000))}) if isinstance(record, dict) else "1"
    elif choice == 2 and isinstance(record, dict):
        key = rng.choice(sorted(record))
        record[key] = rng.choice(([1, 2], {"a": 1}, 3, None, "x", 1e308, True))
        bad = json.dumps(record)
    elif choice == 3:
        bad = json.dumps([record])
    elif choice == 4 and isinstance(record, dict) and record.get("launches"):
        launch = rng.choice(record["launches"])
        if isinstance(launch, dict):
            launch[rng.choice(("kernel", "index", "metrics", "attributes"))] = rng.choice(
                ("k" * 3_000_000, [[]], {"x": []}, -(10**25), "\x1b]0;t\x07")
            )
        bad = json.dumps(record)
    elif choice == 5:
        bad = json.dumps({"kind": "run"})
    else:
        bad = json.dumps(record) + "\u0000" if rng.random() < 0.5 else '{"run_id": "x", "launches": ' + "{" * 5000
    lines[at] = bad.encode() + b"\n"
    return b"".join(lines)


# whole-number tokens: not inside a word, not a digit group of 1,234, not part of a date (2024-01-02)
_NUMBER = re.compile(rb"(?<![\w.,\-:/])(\d{1,15}(?:\.\d{1,15})?)(?![\w.:/]|,\d|-\d)")


def double_a_number(data: bytes, rng: random.Random, _: dict[str, bytes]) -> bytes:
    """One whole number token of the file doubled, its decimals kept (12.50 -> 25.00)."""
    found = list(_NUMBER.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    token = match.group(1).decode()
    decimals = len(token.partition(".")[2])
    doubled = f"{2 * float(token):.{decimals}f}" if decimals else str(2 * int(token))
    return data[: match.start(1)] + doubled.encode() + data[match.end(1) :]


MUTATIONS: tuple[Mutation, ...] = (
    truncate,
    flip_bytes,
    insert_bytes,
    shuffle_lines,
    duplicate_lines,
    delete_lines,
    drop_field,
    extreme_numbers,
    reencode,
    line_ends,
    huge_line,
    garbage,
    splice,
    replace_whole,
    escape_names,
)
RUNFILE_MUTATIONS: tuple[Mutation, ...] = (*MUTATIONS, hostile_json, hostile_json, hostile_json)


@dataclass(frozen=True)
class Case:
    target: str
    index: int
    seed_name: str
    mutations: tuple[str, ...]
    data: bytes

    @property
    def suffix(self) -> str:
        return Path(self.seed_name).suffix


def build_case(target: str, index: int, base_seed: int, all_seeds: dict[str, bytes], own: list[str]) -> Case:
    rng = random.Random(f"{target}:{index}:{base_seed}")
    if target == "numbers":  # one doubled number in a file a reader takes, nothing else changed
        seed_name = rng.choice(own)
        return Case(target, index, seed_name, ("double_a_number",), double_a_number(all_seeds[seed_name], rng, {}))
    pool = own if own and (target == "runfile" or rng.random() < 0.75) else sorted(all_seeds)
    seed_name = rng.choice(pool)
    data = all_seeds[seed_name]
    applied = []
    for _i in range(rng.choice((1, 1, 1, 2, 3))):
        mutation = rng.choice(RUNFILE_MUTATIONS if target == "runfile" else MUTATIONS)
        data = mutation(data, rng, all_seeds)[:MAX_INPUT]
        applied.append(mutation.__name__)
    return Case(target, index, seed_name, tuple(applied), data)


# --- running one case ----------------------------------------------------------------------------

IMPORTED, CLEAN, TRACEBACK, HANG, CRASH = "imported", "clean error", "traceback", "hang", "crash"
ESCAPE, WRONG = "raw escape", "wrong number"
FAILED = (TRACEBACK, HANG, CRASH, ESCAPE, WRONG)
# What may reach a terminal: no C0 control but newline, no DEL or C1 control, no bidirectional override.
_RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _check_run(run: object) -> None:
    """The Run must be something the store and the JSON-lines export can hold (checked field by
    field: ``Run.to_dict`` copies every metric and would cost more than the read)."""
    from gpuprof.model import Launch, Run

    if not isinstance(run, Run):
        raise TypeError(f"read returned {type(run).__name__}, not a Run")
    for launch in run.launches:
        if not isinstance(launch, Launch):
            raise TypeError(f"launch of type {type(launch).__name__}")
        for metric in launch.metrics:
            if not (metric.value is None or isinstance(metric.value, (str, float, int))) or isinstance(
                metric.value, bool
            ):
                raise TypeError(f"metric {metric.name}: value of type {type(metric.value).__name__}")
            for bound in (metric.minimum, metric.maximum):
                if bound is not None and not isinstance(bound, (float, int)):
                    raise TypeError(f"metric {metric.name}: bound of type {type(bound).__name__}")
        json.dumps(launch.attributes)
    json.dumps([run.device, run.workload, run.environment, run.notes])


def _import_command(path: Path) -> tuple[str, str]:
    """``gpuprof import PATH`` as a user runs it: one-line error or a stored run and its table, with
    nothing raw that a terminal would act on."""
    from click.testing import CliRunner

    from gpuprof.cli import main

    store = path.with_name(path.name + ".sqlite")
    try:
        result = CliRunner().invoke(main, ["import", str(path), "--store", str(store)])
    finally:
        for leftover in (store, *(Path(f"{store}{end}") for end in ("-wal", "-shm", "-journal"))):
            leftover.unlink(missing_ok=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return _traceback(result.exception)
    raw = _RAW_CONTROL.search(result.stdout + result.stderr)
    if raw:
        return ESCAPE, f"raw {raw.group()!r} in the output"
    if result.exit_code == 0:
        return IMPORTED, ""
    lines = result.stderr.strip().splitlines()
    if not lines or not lines[-1].startswith("error: ") or sum(line.startswith("error") for line in lines) != 1:
        return TRACEBACK, f"exit {result.exit_code} without one error line: {result.stderr[-200:]!r}"
    return CLEAN, f"exit {result.exit_code}"


def _run_file(path: Path) -> tuple[str, str]:
    """A run file loaded as merge and compare --import load it, and its runs stored."""
    from gpuprof.store import open_store, runfile

    runs, notes = runfile.load(path)
    if any("\n" in note or "\r" in note for note in notes):
        return TRACEBACK, "a note is not one line"
    store = path.with_name(path.name + ".sqlite")
    try:
        with open_store(store) as opened:
            for run in runs:
                _check_run(run)
                opened.add(run)
            back = opened.runs()
    finally:
        for leftover in (store, *(Path(f"{store}{end}") for end in ("-wal", "-shm", "-journal"))):
            leftover.unlink(missing_ok=True)
    if len(back) != len({run.run_id for run in runs}):
        return TRACEBACK, f"{len(runs)} runs loaded, {len(back)} read back"
    return (IMPORTED, "") if runs else (CLEAN, "no readable run")


_PRISTINE: dict[str, dict[tuple, float] | None] = {}


def _measured(run: object) -> dict[tuple, float]:
    values: dict[tuple, float] = {}
    for launch in run.launches:
        for metric in launch.metrics:
            if metric.origin == "measured" and isinstance(metric.value, (int, float)):
                values.setdefault((launch.index, launch.kernel, launch.device, metric.name), float(metric.value))
    return values


def _doubled_token(pristine: bytes, data: bytes) -> float:
    """The value of the number that ``double_a_number`` doubled (where the two files first differ)."""
    at = next((i for i, (a, b) in enumerate(zip(pristine, data)) if a != b), min(len(pristine), len(data)))
    start = end = at
    while start > 0 and pristine[start - 1 : start] in b"0123456789.":
        start -= 1
    while end < len(pristine) and pristine[end : end + 1] in b"0123456789.":
        end += 1
    try:
        return float(pristine[start:end])
    except ValueError:  # a zero doubled is the same file: nothing differs
        return 0.0


def _scale(ratio: float) -> bool:
    """Whether ``ratio`` is a unit factor: a power of ten or of 1024."""
    return ratio > 0 and any(abs(x - round(x)) < 1e-6 for x in (math.log10(ratio), math.log(ratio, 1024)))


def _numbers(path: Path, seed_name: str) -> tuple[str, str]:
    """The doubled file's measured values against the pristine file's. Doubling a number t adds t to
    it, so a value read from it (in any unit), a sum over rows holding it or a difference of times
    with it changes by t times a unit factor; a doubled id or timestamp may move values between
    launches, so a value is compared with every old value of its metric. Any other value is a wrong
    number. A value that goes missing must come with a note."""
    from gpuprof.importing import read_file

    before = _pristine(path.parent, seed_name)
    run = read_file(path)
    after = _measured(run)
    if before is None:
        return IMPORTED, ""
    token = _doubled_token(seeds()[seed_name], path.read_bytes())
    olds: dict[str, list[float]] = {}  # by metric name: a doubled id or timestamp may re-order launches
    for key, value in before.items():
        olds.setdefault(key[3], []).append(value)
    for key, value in after.items():
        old = before.get(key)
        if old is None or math.isclose(value, old, rel_tol=1e-9, abs_tol=1e-300):
            continue
        if any(
            math.isclose(value, v, rel_tol=1e-9) or (token and _scale(abs(value - v) / token)) for v in olds[key[3]]
        ):
            continue  # the same value on another launch, or one that held the doubled number
        return WRONG, f"{key[3]} of launch {key[0]}: {old!r} read as {value!r} after {token:g} was doubled"
    if {k[:3] for k in after} == {k[:3] for k in before} and not set(before) <= set(after) and not run.notes:
        lost = sorted(set(before) - set(after))[0]
        return WRONG, f"{lost[3]} of launch {lost[0]} gone without a note"
    return IMPORTED, ""


def _pristine(scratch: Path, seed_name: str) -> dict[tuple, float] | None:
    """The measured values of the unchanged fixture (read once per worker, outside the time limit)."""
    from gpuprof.importing import read_file

    if seed_name not in _PRISTINE:
        pristine = scratch / ("pristine " + seed_name)
        pristine.write_bytes(seeds()[seed_name])
        try:
            _PRISTINE[seed_name] = _measured(read_file(pristine))
        except Exception:  # noqa: BLE001 - a fixture that does not read alone has nothing to compare
            _PRISTINE[seed_name] = None
        finally:
            pristine.unlink()
    return _PRISTINE[seed_name]


def _warm_up(target: str, scratch: Path) -> None:
    """One untimed pass over a real fixture, so the first timed input does not pay for imports."""
    if target in ("import", "kernels", "detect", "numbers"):
        warm = scratch / f"warm {os.getpid()}.csv"
        warm.write_bytes((FIXTURE_DIRS[0] / "ncu_csv_details_a100_roofline_printfp.csv").read_bytes())
        run_case("kernels" if target == "numbers" else target, warm)
        warm.unlink()


def _traceback(error: BaseException) -> tuple[str, str]:
    frames = traceback.extract_tb(error.__traceback__)
    where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames) if "/gpuprof/" in f.filename), "?")
    return TRACEBACK, f"{type(error).__name__} at {where}: {str(error)[:160]}"


def run_case(target: str, path: Path, seed_name: str = "") -> tuple[str, str]:
    """(outcome, detail) of one target on one file. For ``sniff``, IMPORTED means some reader
    recognised the file and CLEAN that none did."""
    from gpuprof.errors import GpuprofError
    from gpuprof.readers import detect, modules, read_head

    try:
        if target == "import":
            return _import_command(path)
        if target == "runfile":
            return _run_file(path)
        if target == "numbers":
            return _numbers(path, seed_name)
        if target == "sniff":
            head = read_head(path)
            answers = [module.sniff(path, head) for module in modules()]
            if not all(isinstance(answer, bool) for answer in answers):
                raise TypeError("a sniff returned a non-bool")
            return (IMPORTED, "") if any(answers) else (CLEAN, "recognised by no reader")
        if target in ("detect", "kernels"):
            run = detect(path).read(path)
            if target == "kernels":
                from gpuprof.derive.kernel_table import kernel_table

                kernel_table([run])
        else:
            run = {m.NAME: m for m in modules()}[target].read(path)
        _check_run(run)
        return IMPORTED, ""
    except GpuprofError as error:
        message = str(error)
        if "\n" in message or "\r" in message or not message.strip():
            return TRACEBACK, f"{type(error).__name__} message is not one line: {message[:200]!r}"
        return CLEAN, type(error).__name__
    except Exception as error:  # noqa: BLE001 - that is exactly what we are counting
        return _traceback(error)


# --- the watched worker ------------------------------------------------------------------------------


@dataclass
class Tally:
    target: str
    inputs: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {k: 0 for k in (IMPORTED, CLEAN, *FAILED)})
    failures: dict[str, int] = field(default_factory=dict)  # detail -> first case index
    seconds: float = 0.0
    slowest: float = 0.0

    def add(self, index: int, outcome: str, detail: str, seconds: float) -> None:
        self.inputs += 1
        self.counts[outcome] += 1
        self.slowest = max(self.slowest, seconds)
        if outcome in FAILED:
            self.failures.setdefault(f"{outcome}: {detail}", index)


def _worker(
    conn: multiprocessing.connection.Connection,
    target: str,
    start: int,
    stop: int,
    base_seed: int,
    own: list[str],
    scratch: str,
) -> None:
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)  # ncu_report's C++ logs its parse failures on stderr; a crash shows as an exit code
    os.environ["GPUPROF_DEBUG"] = "1"  # the import target: an exception reaches the runner, not a one-liner
    all_seeds = seeds()
    _warm_up(target, Path(scratch))
    for index in range(start, stop):
        case = build_case(target, index, base_seed, all_seeds, own)
        if target == "numbers":
            _pristine(Path(scratch), case.seed_name)
        path = Path(scratch) / f"case {index}{case.suffix}"
        if target == "import" and index % PATH_CASE_EVERY == PATH_CASE_EVERY - 1:
            os.mkfifo(path)  # nobody writes it: reading would block for ever
        elif target == "import" and index % PATH_CASE_EVERY == PATH_CASE_EVERY // 2 - 1:
            os.symlink("/dev/zero", path)  # never ends: reading would fill memory
        else:
            path.write_bytes(case.data)
        conn.send(("start", index))
        began = time.perf_counter()
        outcome, detail = run_case(target, path, case.seed_name)
        conn.send(("done", index, outcome, detail, time.perf_counter() - began))
        path.unlink()
    conn.send(("end",))


def _scratch() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() else None


def fuzz_target(
    target: str,
    inputs: int,
    base_seed: int = 0,
    limit: float = 2.0,
    own: list[str] | None = None,
    first: int = 0,
) -> Tally:
    """Run cases ``first`` to ``inputs - 1`` of ``target`` in watched workers; a hang or crash costs one case."""
    if own is None:
        own = own_seeds(target, seeds())
    tally = Tally(target)
    limit *= LIMIT_FACTOR.get(target, 1)
    context = multiprocessing.get_context("fork")
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpuprof fuzz ", dir=_scratch()) as scratch:
        _watch(tally, context, target, first, inputs, base_seed, limit, own, scratch)
    tally.seconds = time.perf_counter() - began
    return tally


def _watch(
    tally: Tally,
    context: multiprocessing.context.BaseContext,
    target: str,
    first: int,
    inputs: int,
    base_seed: int,
    limit: float,
    own: list[str],
    scratch: str,
) -> None:
    """Feed the cases to workers; a worker killed on a hang leaves its file in ``scratch`` (removed
    by the caller), and the next worker goes on after the case that failed."""
    start = first
    while start < inputs:
        parent, child = context.Pipe()
        stop = min(inputs, start + WORKER_INPUTS)
        worker = context.Process(target=_worker, args=(child, target, start, stop, base_seed, own, scratch))
        worker.start()
        child.close()
        current: int | None = None
        ended = False
        while not ended:
            # generous before "start" (building a case with a 1 MB line), strict while reading
            if not _answers(parent, worker.pid, limit if current is not None else 120):
                worker.kill()
                tally.add(current if current is not None else start, HANG, f"no answer in {limit} s", limit)
                start = (current if current is not None else start) + 1
                break
            try:
                message = parent.recv()
            except EOFError:
                failed = current if current is not None else start
                worker.join()
                tally.add(failed, CRASH, f"worker died (exit code {worker.exitcode})", 0.0)
                start = failed + 1
                break
            if message[0] == "start":
                current = message[1]
            elif message[0] == "done":
                _, index, outcome, detail, seconds = message
                tally.add(index, outcome, detail, seconds)
                current, start = None, index + 1
            else:
                ended = True
                start = stop
        worker.join(5)
        parent.close()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux ``/proc``); 0 where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _answers(parent: multiprocessing.connection.Connection, pid: int, limit: float) -> bool:
    """Whether the worker answers before it has spent ``limit`` s of CPU on the case, or ``WALL_FACTOR``
    times that on the wall clock (a read blocked on a FIFO spends no CPU). CPU time, not the wall clock,
    decides first, so a loaded machine does not turn slow cases into hangs."""
    spent_before = _cpu_seconds(pid)
    waited = 0.0
    while waited < limit * WALL_FACTOR:
        if parent.poll(limit):
            return True
        waited += limit
        if _cpu_seconds(pid) - spent_before >= limit:
            return False
    return False


def iter_failures(tallies: list[Tally]) -> Iterator[str]:
    for tally in tallies:
        for detail, index in tally.failures.items():
            yield f"{tally.target}:{index}  {detail}"
