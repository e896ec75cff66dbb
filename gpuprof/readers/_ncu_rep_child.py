"""Reads a ``.ncu-rep`` with NVIDIA's ``ncu_report`` in a fresh interpreter, for :mod:`ncu_rep`.

ncu_report aborts its whole process on some damaged reports, so it never runs inside gpuprof: the
reader starts ``python -I -S <this file> MODE REPORT SITE_DIR`` (no ``site``: a fast start; SITE_DIR
is where ncu_report is installed) and reads the answer from stdout. A new interpreter rather than
a fork: forking a process that has started threads (JAX, PyTorch, a notebook) can deadlock.

Imports nothing of gpuprof (it runs outside the package). MODE ``read``: every action's metrics as
plain lists; ``load``: only load the report. The answer is 8 bytes of length and a marshal (built
in: nothing to import) of ``("ok", columns)`` or ``("error", problem, fix)``; after it the pipe is
closed and the process leaves at once: the reader goes on without waiting for NVIDIA's library to
be unmapped.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Any


def collect(module: Any, path: str) -> dict[str, list[Any]]:
    """Every action of the report, launches in report order: per launch its kernel name (None when
    the report lost it), device name and attributes; per metric its launch, name, unit, value text."""
    columns: dict[str, list[Any]] = {
        key: [] for key in ("kernels", "devices", "attributes", "launch", "names", "units", "texts")
    }
    report = module.load_report(path)
    string_kind = module.IMetric.ValueKind_STRING
    for range_index in range(report.num_ranges()):
        profiled_range = report.range_by_idx(range_index)
        for action_index in range(profiled_range.num_actions()):
            _add(columns, module, string_kind, profiled_range.action_by_idx(action_index))
    return columns


def _add(columns: dict[str, list[Any]], module: Any, string_kind: Any, action: Any) -> None:
    position = len(columns["kernels"])
    values: dict[str, Any] = {}
    for name in action.metric_names():
        if name.startswith(("group:", "breakdown:")):
            continue
        try:
            metric = action.metric_by_name(name)
        except TypeError:  # a name read from damaged bytes, which ncu_report cannot take back
            continue
        if metric is None or not metric.has_value():
            continue
        value = metric.as_string() if metric.kind() == string_kind else metric.as_double()
        values[name] = value
        columns["launch"].append(position)
        columns["names"].append(name)
        columns["units"].append(metric.unit())
        columns["texts"].append(value if isinstance(value, str) else repr(value))
    columns["kernels"].append(action.name(module.IAction.NameBase_DEMANGLED) or action.name() or None)
    columns["devices"].append(str(values.get("device__attribute_display_name", "")))
    attributes = _attributes(values, action.name())
    if path := _nvtx_path(action):
        attributes["nvtx"] = path
    columns["attributes"].append(attributes)


def _nvtx_path(action: Any) -> str:
    """The NVTX push/pop ranges open at the launch (``--nvtx`` profiling), outermost first, joined by
    '/' as ``--nvtx-include`` writes nested ranges; domains in the report's order."""
    state = action.nvtx_state()
    if state is None:
        return ""
    ranges: list[str] = []
    for domain in state.domains():
        ranges += [str(name) for name in state.domain_by_id(domain).push_pop_ranges()]
    return "/".join(ranges)


def _attributes(values: dict[str, Any], short_name: str) -> dict[str, str]:
    """The launch facts the CSV readers take from their per-launch columns, from metrics here."""

    def whole(name: str) -> str:
        value = values.get(name)
        return str(int(value)) if isinstance(value, float) else str(value or "")

    attributes = {
        "function": short_name,
        "device": whole("launch__device_id"),
        "context": whole("launch__context_id"),
        "stream": whole("launch__stream_id"),
    }
    for key, prefix in (("block", "launch__block_dim_"), ("grid", "launch__grid_dim_")):
        dims = [whole(prefix + axis) for axis in "xyz"]
        if all(dims):
            attributes[key] = f"({', '.join(dims)})"
    major, minor = (whole(f"device__attribute_compute_capability_{part}") for part in ("major", "minor"))
    if major:
        attributes["cc"] = f"{major}.{minor or 0}"
    return {key: value for key, value in attributes.items() if value}


def answer(mode: str, path: str) -> tuple[Any, ...]:
    try:
        import ncu_report
    except ImportError as error:
        return (
            "error",
            f"{path}: ncu_report cannot be imported in a new interpreter ({error})",
            'Install it with: pip install "gpuprof-hpc[ncu]"',
        )
    try:
        if mode == "load":
            ncu_report.load_report(path)
            return ("ok", None)
        return ("ok", collect(ncu_report, path))
    except (OSError, RuntimeError) as error:
        return (
            "error",
            f"{path}: ncu_report could not load it ({error})",
            "Check that it is an Nsight Compute report (.ncu-rep)",
        )
    except Exception as error:  # noqa: BLE001 - ncu_report's calls on damaged data raise all kinds
        return (
            "error",
            f"{path}: ncu_report failed reading it ({type(error).__name__}: {error})",
            "re-export it from Nsight Compute, or profile again",
        )


def main(argv: list[str]) -> None:
    mode, path, site_dir = argv
    sys.path.insert(0, site_dir)
    out = os.dup(1)
    quiet = os.open(os.devnull, os.O_WRONLY)  # ncu_report logs parse failures: not the user's terminal
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    data = marshal.dumps(answer(mode, path))
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(out, view) :]
    os.close(out)
    os._exit(0)  # at once: the reader has its answer


if __name__ == "__main__":
    main(sys.argv[1:])
