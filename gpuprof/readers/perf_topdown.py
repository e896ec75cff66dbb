"""``perf stat`` Top-Down outputs: Intel TMA level 1 (``--topdown``, ``TopdownL1``) and AMD ``PipelineL1``.

Layouts recognised, all as people paste them (trimmed with ``...``, program output around them):

* old per-core table (Linux 4.8+ ``perf stat --topdown -a``): header ``retiring  bad speculat  FE bound
  BE bound`` (words truncated by perf), rows ``S0-C0  30.8%  41.8% ...``, a ``<==`` marker;
* perf 6.x metric lines: ``TopdownL1 (cpu_core)  #  53.4 %  tma_backend_bound`` and continuation
  lines ``#  0.2 %  tma_bad_speculation``; AMD ``-M PipelineL1,PipelineL2`` lines
  ``26.3 %  retiring  (20.08%)`` (value, name, share of time the counters ran);
* metric-only tables (``--topdown`` in perf 6.x, with ``-I`` a leading time column, with
  ``--per-core``/``--per-socket``/``-A`` a leading ``S0-D0-C0  2`` / ``S0  6`` / ``CPU0`` column): a
  header of ``%  tma_<name>`` cells and value rows aligned under it.

One :class:`Launch` per row (core or interval) or one for the whole run; every value is a percentage
of pipeline slots as perf printed it. The workload is the profiled command when the file shows it.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run
from gpuprof.model.stalls import vocabulary
from gpuprof.readers.perf_stat import AGGREGATE, prompt_command

NAME = "perf-topdown"
DESCRIPTION = "perf stat Top-Down level 1 (--topdown, -M TopdownL1, AMD -M PipelineL1)"

_METRIC_LINE = re.compile(r"(?:^|#)\s*(\d+(?:[.,]\d+)?)\s*%\s+([A-Za-z_][\w.]*)(?:\s+\((\d+(?:[.,]\d+)?)%\))?")
_OLD_HEADER = re.compile(r"^\s*retiring\s+bad speculat", re.IGNORECASE)
_TABLE_HEADER = re.compile(r"%\s+(tma_\w+)")
# The lookbehind starts a match only at the first digit of a number: without it, a long run of
# digits costs quadratic time (each start re-scans the whole run).
_ELAPSED = re.compile(r"(?<!\d)(\d+(?:[.,]\d+)?)\s+seconds time elapsed")
_TARGET = re.compile(r"Performance counter stats for '([^']*)'")
_PMU = re.compile(r"TopdownL1\s+\((\w+)\)")
# The indent before 'retiring' stays on its line ([^\S\n]): a \s* there ran from every line start over
# all the blank lines after it (quadratic on a head of empty lines) for the same yes/no answer.
_SNIFF = re.compile(
    r"%\s+(?:tma_)?(?:backend_bound|frontend_bound|bad_speculation)\b|^[^\S\n]*retiring\s+bad speculat", re.MULTILINE
)


def sniff(path: Path, head: str) -> bool:
    # a word of every match looked for first: the pattern's search is slow on a head of another tool's
    return any(word in head for word in ("_bound", "bad_speculation", "retiring")) and bool(_SNIFF.search(head))


def _float(text: str) -> float:
    """A perf percentage; a decimal comma (de_DE locale) is accepted since these never exceed 100."""
    return float(text.replace(",", "."))


def _level1(name: str) -> str | None:
    """The Top-Down level-1 key ('frontend_bound' ...) a printed metric name stands for."""
    for key, spec in vocabulary()["topdown"].items():
        if name in spec["names"]:
            return key
    return None


def _metric(name: str, value: float) -> Metric:
    key = _level1(name)
    return Metric(name, value, "%", canonical=f"tma_{key}" if key else None)


def _workload(lines: list[str]) -> str:
    """The profiled command from the pasted prompt line, else perf's 'stats for' target."""
    command = prompt_command(lines)
    if command:
        return command
    for line in lines:
        match = _TARGET.search(line)
        if match:
            return match.group(1)
    return "system wide"


def _old_table(lines: list[str], start: int) -> list[tuple[dict[str, str], list[Metric]]]:
    names = [w for w in re.split(r"\s{2,}", lines[start].strip()) if w]
    rows = []
    for line in lines[start + 1 :]:
        cells = line.replace("<==", "").split()
        if len(cells) != len(names) + 1 or not all(re.fullmatch(r"\d+(?:[.,]\d+)?%", c) for c in cells[1:]):
            break
        rows.append(({"core": cells[0]}, [_metric(n, _float(c.rstrip("%"))) for n, c in zip(names, cells[1:])]))
    return rows


def _metric_only_table(lines: list[str], start: int) -> list[tuple[dict[str, str], list[Metric]]]:
    """Rows under a ``%  tma_<name>`` header: [time] [aggregate [CPUs]] value per name. The
    aggregate is the core, socket or CPU of --per-core/--per-socket/-A (``S0-D0-C0  2  6.1 ...``);
    perf prints how many CPUs it summed after a core or socket, not after a CPU."""
    names = _TABLE_HEADER.findall(lines[start])
    timed = lines[start].lstrip().startswith("#") and "time" in lines[start]
    rows = []
    for line in lines[start + 1 :]:
        cells = line.split()
        if not cells:
            continue
        attributes = {}
        if timed:
            attributes["time_s"] = cells.pop(0)
        if cells and AGGREGATE.match(cells[0]):
            attributes["core"] = cells.pop(0)
            if len(cells) == len(names) + 1 and cells[0].isdigit():
                attributes["cpus"] = cells.pop(0)
        numbers = [attributes["time_s"]] + cells if timed else cells
        if len(cells) != len(names) or not all(re.fullmatch(r"\d+(?:[.,]\d+)?", c) for c in numbers):
            break
        rows.append((attributes, [_metric(n, _float(c)) for n, c in zip(names, cells)]))
    return rows


def _metric_lines(lines: list[str]) -> tuple[list[Metric], dict[str, str], list[float]]:
    metrics, attributes, running = [], {}, []
    for line in lines:
        if (pmu := _PMU.search(line)) is not None:
            attributes["pmu"] = pmu.group(1)
        match = _METRIC_LINE.search(line)
        if match and not _ELAPSED.search(line):
            metrics.append(_metric(match.group(2), _float(match.group(1))))
            if match.group(3):
                running.append(_float(match.group(3)))
    return metrics, attributes, running


def read(path: Path) -> Run:
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    rows: list[tuple[dict[str, str], list[Metric]]] = []
    notes: list[str] = []
    old = next((i for i, line in enumerate(lines) if _OLD_HEADER.match(line)), None)
    table = next((i for i, line in enumerate(lines) if len(_TABLE_HEADER.findall(line)) >= 2), None)
    if old is not None:
        rows = _old_table(lines, old)
    elif table is not None:
        rows = _metric_only_table(lines, table)
    else:
        metrics, attributes, running = _metric_lines(lines)
        if metrics:
            rows = [(attributes, metrics)]
        if running:
            notes.append(
                f"counters multiplexed: each metric counted {min(running):g}-{max(running):g}% "
                "of the time; perf scaled the values"
            )
    if not any(_level1(m.name) for _, metrics in rows for m in metrics):
        raise FormatError(
            f"{path}: no Top-Down level-1 values found",
            "record with: perf stat --topdown -a -- CMD, perf stat -M TopdownL1 -- CMD "
            "(Intel) or perf stat -M PipelineL1 -- CMD (AMD)",
        )
    workload = _workload(lines)
    launches = [
        Launch(kernel=workload, index=i, device="cpu", attributes=attributes, metrics=metrics)
        for i, (attributes, metrics) in enumerate(rows)
    ]
    elapsed = _ELAPSED.search(text)
    if elapsed:
        launches[-1].metrics.append(Metric("seconds time elapsed", _float(elapsed.group(1)), "second"))
    names = {m.name for launch in launches for m in launch.metrics}
    vendor = "Intel" if any(n.startswith("tma_") for n in names) or old is not None else "AMD"
    notes.append(
        f"vendor inferred from the metric names ({'tma_* / --topdown table' if vendor == 'Intel' else 'PipelineL1 names'})"
    )
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device={"kind": "cpu", "vendor": vendor},
        launches=launches,
        notes=notes,
        workload={"command": workload},
    )
