"""STONNE simulator outputs: cycles and per-component counts a simulated accelerator produced.

STONNE (a cycle-level simulator of DNN accelerators: MAERI, SIGMA, TPU-like) writes per layer a
``.counters`` file (``CYCLES=N``, then ``[Section]`` blocks of ``COMPONENT KEY=VALUE ...`` lines, one
line per component instance) and a statistics JSON (``output_stats_layer_<name>…timestamp_<t>.txt``:
hardware, layer and tile configuration, global and per-component stats). The two files of one layer
carry different timestamps, so they are paired by the name before ``timestamp_``. Its console prints
``Number of cycles running: N``; its energy script (``calculate_energy.py``) a component breakdown and
totals in its energy table's units. A folder of layer files reads as one run, one launch per layer.

Every count here has origin ``simulated``; the layer's MACs come from its dimensions (``analytic``).
Utilisation, time at a clock and energy are derived later (:mod:`gpuprof.derive.simulated`).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import ANALYTIC, DERIVED, SIMULATED, Launch, Metric, Run

NAME = "stonne"
DESCRIPTION = (
    "STONNE simulator outputs: a layer's .counters or output_stats JSON, a folder of them, its console or energy script"
)

_LAYER_FILE = re.compile(r"^(output_stats_layer_.+?)timestamp_\d+\.(txt|counters)$")
_CONSOLE_CYCLES = re.compile(r"Number of cycles running:\s*(\d+)")
_ENERGY_COMPONENT = re.compile(r"^(\w+): STATIC=(\S+) AREA=(\S+) DYNAMIC=(\S+)$")
_ENERGY_TOTAL = re.compile(r"^Total (STATIC Energy|DYNAMIC Energy|Area|Energy): (\S+)$")
_LAYER_DIMS = ("R", "S", "C", "K", "G", "N", "X_", "Y_")

CYCLES = "cycles"
MACS = "MACs"
MULTIPLIERS = "multipliers"
GB_READS = "global buffer reads"
GB_WRITES = "global buffer writes"
_NOTE = "cycles and counts are simulated by STONNE (no clock: give one for times); MACs are analytic, from the layer's dimensions"


def sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    if text.startswith("CYCLES="):
        return True
    if text.startswith("{") and '"hardwareConfiguration"' in text[:400]:
        return True
    if text.startswith("DYNAMIC ENERGY TABLE USED"):
        return True
    return _CONSOLE_CYCLES.search(head) is not None


def sniff_dir(path: Path) -> bool:
    """Does this folder hold STONNE layer files?"""
    return any(_LAYER_FILE.match(child.name) for child in path.iterdir() if child.is_file())


def parse_counters(
    text: str, source: str
) -> tuple[int | None, dict[tuple[str, str, str], int], dict[tuple[str, str], int]]:
    """CYCLES, the sum of every (section, component, key) count, and the instances of each component."""
    cycles: int | None = None
    sums: dict[tuple[str, str, str], int] = defaultdict(int)
    instances: dict[tuple[str, str], int] = defaultdict(int)
    section = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("CYCLES="):
            cycles = _int(line[len("CYCLES=") :], source, number)
        elif line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        else:
            component, *pairs = line.split()
            instances[(section, component)] += 1
            for pair in pairs:
                key, sep, value = pair.partition("=")
                if not sep:
                    raise FormatError(
                        f"{source}:{number}: '{pair}' is not KEY=VALUE",
                        "give the .counters file STONNE wrote, unedited",
                    )
                sums[(section, component, key)] += _int(value, source, number)
    return cycles, dict(sums), dict(instances)


def _int(text: str, source: str, number: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise FormatError(
            f"{source}:{number}: '{text}' is not a count", "give the .counters file STONNE wrote, unedited"
        ) from None


def counter_metrics(text: str, source: str) -> list[Metric]:
    cycles, sums, instances = parse_counters(text, source)
    metrics = [Metric(CYCLES, cycles, "cycle", canonical=CYCLES, origin=SIMULATED)] if cycles is not None else []
    for (section, component, key), value in sums.items():
        metrics.append(Metric(f"{section}/{component}.{key}", value, "", origin=SIMULATED))
    for (section, component), count in instances.items():
        metrics.append(Metric(f"{section}/{component} instances", count, "", origin=SIMULATED))
    multipliers = sum(count for (_, component), count in instances.items() if component == "MULTIPLIER")
    if multipliers:
        metrics.append(Metric(MULTIPLIERS, multipliers, "", canonical=MULTIPLIERS, origin=SIMULATED))
    for key, name in (("READ", GB_READS), ("WRITE", GB_WRITES)):
        if ("GlobalBuffer", "GLOBALBUFFER", key) in sums:
            metrics.append(
                Metric(name, sums[("GlobalBuffer", "GLOBALBUFFER", key)], "", canonical=name, origin=SIMULATED)
            )
    return metrics


def stats_metrics(text: str, source: str) -> tuple[list[Metric], dict[str, str]]:
    """The statistics JSON's global and memory stats as metrics, its configuration as attributes."""
    try:
        return _stats_metrics(json.loads(text))
    except json.JSONDecodeError as error:
        raise FormatError(
            f"{source}: not valid JSON ({error.msg} at line {error.lineno})",
            "give the output_stats file STONNE wrote, whole",
        ) from None
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        raise FormatError(
            f"{source}: not STONNE's statistics layout (hardwareConfiguration, LayerConfiguration, GlobalStats ...)",
            "give the output_stats file STONNE wrote, unedited",
        ) from None


def _stats_metrics(stats: dict) -> tuple[list[Metric], dict[str, str]]:
    layer = stats.get("LayerConfiguration", {})
    hardware = stats.get("hardwareConfiguration", {})
    attributes = {f"layer.{k}": str(v) for k, v in layer.items()}
    attributes.update({f"tile.{k}": str(v) for k, v in stats.get("TileConfiguration", {}).items()})
    for part, values in hardware.items():
        if isinstance(values, dict):
            attributes.update({f"hw.{part}.{k}": str(v) for k, v in values.items()})
    metrics: list[Metric] = []
    cycles = stats.get("GlobalStats", {}).get("N_cycles")
    if cycles is not None:
        metrics.append(Metric(CYCLES, int(cycles), "cycle", canonical=CYCLES, origin=SIMULATED))
    for key, value in stats.get("SDMemoryStats", {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            metrics.append(Metric(f"SDMemory.{key}", value, "cycle" if key == "Total_cycles" else "", origin=SIMULATED))
    size = hardware.get("MSNetwork", {}).get("ms_size")
    rows, columns = (hardware.get("MSNetwork", {}).get(k) for k in ("ms_rows", "ms_columns"))
    multipliers = size or ((rows or 0) * (columns or 0))
    if multipliers:
        metrics.append(Metric(MULTIPLIERS, int(multipliers), "", canonical=MULTIPLIERS, origin=SIMULATED))
    if all(k in layer for k in _LAYER_DIMS):
        d = {k: int(layer[k]) for k in _LAYER_DIMS}
        macs = d["R"] * d["S"] * (d["C"] // d["G"]) * d["K"] * d["N"] * d["X_"] * d["Y_"]
        metrics.append(Metric(MACS, macs, "", canonical=MACS, origin=ANALYTIC))
    return metrics, attributes


def energy_metrics(text: str, source: str) -> list[Metric]:
    """The output of STONNE's ``calculate_energy.py``: per high-level component its static and dynamic
    energy and area, then the totals, all in the energy table's units (STONNE states none)."""
    metrics: list[Metric] = []
    try:
        for line in text.splitlines():
            if found := _ENERGY_COMPONENT.match(line.strip()):
                component, static, area, dynamic = found.groups()
                metrics += [
                    Metric(f"{component} static energy (table units)", float(static), "", origin=DERIVED),
                    Metric(f"{component} dynamic energy (table units)", float(dynamic), "", origin=DERIVED),
                    Metric(f"{component} area (table units)", float(area), "", origin=DERIVED),
                ]
            elif found := _ENERGY_TOTAL.match(line.strip()):
                what, value = found.groups()
                name = {
                    "STATIC Energy": "static energy",
                    "DYNAMIC Energy": "dynamic energy",
                    "Area": "area",
                    "Energy": "energy",
                }[what]
                metrics.append(
                    Metric(f"{name} (table units)", float(value), "", canonical=f"{name} (table units)", origin=DERIVED)
                )
    except ValueError:
        raise FormatError(
            f"{source}: a value of STONNE's energy output is not a number",
            "give the file calculate_energy.py wrote, unedited",
        ) from None
    if not any(m.name == "energy (table units)" for m in metrics):
        raise FormatError(
            f"{source}: no 'Total Energy' line (calculate_energy.py did not finish?)",
            "run STONNE's calculate_energy.py again and give its whole output",
        )
    return metrics


def _merge(first: list[Metric], second: list[Metric]) -> list[Metric]:
    """Both files' metrics, each name once (the counters file's value first)."""
    seen = {m.name for m in first}
    return first + [m for m in second if m.name not in seen]


def layer_key(name: str) -> str | None:
    match = _LAYER_FILE.match(name)
    return match.group(1) if match else None


def _layer_name(key: str) -> str:
    """``output_stats_layer_TestLayer_architecture_…`` → ``TestLayer``."""
    rest = key[len("output_stats_layer_") :]
    return rest.split("_architecture_")[0] if "_architecture_" in rest else rest.rstrip("_")


def _read_folder(path: Path) -> Run:
    pairs: dict[str, dict[str, Path]] = defaultdict(dict)
    for child in sorted(path.iterdir()):
        key = layer_key(child.name)
        if key and child.is_file():
            pairs[key][child.suffix] = child
    if not pairs:
        raise FormatError(
            f"{path}: no STONNE layer files (output_stats_layer_…timestamp_N.txt/.counters)",
            "give the folder STONNE wrote its outputs into",
        )
    unpaired = [files for files in pairs.values() if len(files) != 2]
    if unpaired:
        named = ", ".join(p.name for files in unpaired for p in files.values())
        raise FormatError(
            f"{path}: {len(unpaired)} STONNE layer file(s) without their pair: {named}",
            "each layer needs both its .counters file and its output_stats .txt; "
            "copy the missing one or import the complete file alone",
        )
    launches = []
    for index, (key, files) in enumerate(pairs.items()):
        counters = counter_metrics(files[".counters"].read_text(errors="replace"), str(files[".counters"]))
        stats, attributes = stats_metrics(files[".txt"].read_text(errors="replace"), str(files[".txt"]))
        _check_cycles(counters, stats, files)
        attributes.update({"stats_file": files[".txt"].name, "counters_file": files[".counters"].name})
        launches.append(
            Launch(
                kernel=_layer_name(key),
                index=index,
                device="STONNE (simulated)",
                attributes=attributes,
                metrics=_merge(counters, stats),
            )
        )
    return _run(path, launches)


def _check_cycles(counters: list[Metric], stats: list[Metric], files: dict[str, Path]) -> None:
    one, two = ({m.name: m.value for m in metrics}.get(CYCLES) for metrics in (counters, stats))
    if one is not None and two is not None and one != two:
        raise FormatError(
            f"{files['.counters'].name} says {one} cycles but {files['.txt'].name} says {two}",
            "the two files are from different simulations; pair them by hand and import each alone",
        )


def _run(path: Path, launches: list[Launch]) -> Run:
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device={"kind": "simulated", "name": "STONNE (simulated)"},
        launches=launches,
        notes=[_NOTE],
    )


def read(path: Path) -> Run:
    if path.is_dir():
        return _read_folder(path)
    text = path.read_text(errors="replace")
    head = text.lstrip()
    key = layer_key(path.name)
    kernel = _layer_name(key) if key else path.stem
    if head.startswith("CYCLES="):
        metrics, attributes = counter_metrics(text, str(path)), {}
    elif head.startswith("{"):
        metrics, attributes = stats_metrics(text, str(path))
    elif head.startswith("DYNAMIC ENERGY TABLE USED"):
        metrics, attributes = energy_metrics(text, str(path)), {}
    else:
        found = _CONSOLE_CYCLES.findall(text)
        if not found:
            raise FormatError(f"{path}: no 'Number of cycles running' line", "give STONNE's console output")
        if len(found) > 1:
            return _run(
                path,
                [
                    Launch(
                        kernel=f"layer {i}",
                        index=i,
                        device="STONNE (simulated)",
                        metrics=[Metric(CYCLES, int(n), "cycle", canonical=CYCLES, origin=SIMULATED)],
                    )
                    for i, n in enumerate(found)
                ],
            )
        metrics, attributes = [Metric(CYCLES, int(found[0]), "cycle", canonical=CYCLES, origin=SIMULATED)], {}
    return _run(
        path, [Launch(kernel=kernel, index=0, device="STONNE (simulated)", attributes=attributes, metrics=metrics)]
    )
