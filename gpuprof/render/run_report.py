"""The report ``gpuprof run`` prints: what ran where, then every number with its origin."""

from __future__ import annotations

import textwrap

import pandas as pd

from gpuprof.derive.cpu_flops import matmul_validation
from gpuprof.derive.summary import quantities
from gpuprof.devices.peaks import Peaks
from gpuprof.model import Run
from gpuprof.model.sizes import format_bytes
from gpuprof.model.units import human
from gpuprof.render import emit, table_width
from gpuprof.workloads import ops


def _count(number: object, noun: str) -> str:
    """'1 repeat', '10 repeats'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def header(run: Run) -> list[str]:
    """Lines saying which device, engine, shape and bytes were used, and why."""
    w = run.workload or {}
    d = run.device
    op, shape = w["op"], tuple(w["shape"])
    if op == "dot":
        m, k, n = shape
        operands = f"A {m}x{k} · B {k}x{n} -> C {m}x{n}"
    else:
        operands = f"{ops.get_op(op).arrays - 1} input(s) and C, each {ops.shape_text(shape)}"
    kind = "CPU" if d.get("kind") == "cpu" else "GPU"
    lines = [
        f"gpuprof run: {op} ({ops.get_op(op).formula}), {w['dtype']}, engine {run.environment.get('engine_version', w.get('engine'))}",
        f"device:   {kind}: {d.get('name', 'unknown')} — {d.get('chosen_because', '')}",
    ]
    if kind == "CPU":
        lines.append("          This is a CPU measurement; no GPU was used.")
    lines += [
        f"operands: {operands} ({w['dtype']}), {format_bytes(w['size_bytes'])} in all"
        f" ({w['size_bytes']:,} bytes; requested {w.get('requested')})",
        f"timing:   {_count(w.get('repeat'), 'repeat')} after {_count(w.get('warmup'), 'warm-up call')}, {w.get('cache')} cache"
        f" ({w.get('buffer_sets', 1)} buffer set(s)); result checked against float64"
        f" (relative error {w.get('relative_error', float('nan')):.2g})",
    ]
    lines += [f"note:     {n}" for n in run.notes]
    return lines


def quantity_frame(run: Run, for_people: bool, peaks: list[Peaks] | None = None) -> pd.DataFrame:
    rows = []
    for q in quantities(run, peaks):
        value = human(q.value, q.unit) if for_people and (q.value is None or isinstance(q.value, float)) else q.value
        row = {"quantity": q.name, "value": value}
        if not for_people:  # csv and json: the stable key (model/quantities) and the unit
            row = {"key": q.key, **row, "unit": q.unit}
        row.update({"origin": q.origin, "basis": q.basis})
        rows.append(row)
    return pd.DataFrame(rows)


def identity(run: Run) -> dict[str, object]:
    """What was measured where, for ``--format json``: the run id, op, shape, dtype, device and notes."""
    w, d = run.workload or {}, run.device
    return {
        "run": run.run_id,
        "created": run.created,
        "command": run.environment.get("command", run.source),
        "op": w.get("op"),
        "formula": w.get("formula"),
        "dtype": w.get("dtype"),
        "shape": w.get("shape"),
        "size_bytes": w.get("size_bytes"),
        "requested": w.get("requested"),
        "engine": w.get("engine"),
        "engine_version": run.environment.get("engine_version"),
        "device": {
            "kind": d.get("kind"),
            "name": d.get("name"),
            "chosen_because": d.get("chosen_because"),
            "host": run.environment.get("host"),
        },
        "timing": {key: w.get(key) for key in ("repeat", "warmup", "cache", "buffer_sets")},
        "relative_error": w.get("relative_error"),
        "notes": list(run.notes),
    }


def run_report(run: Run, fmt: str, peaks: list[Peaks] | None = None) -> str:
    """Header and quantities for terminals and Markdown; the quantities for csv; the run's identity,
    notes and quantities as one object for json (efficiencies against ``peaks``, as
    :func:`gpuprof.derive.summary.quantities`)."""
    if fmt == "json":
        import json

        quantities = json.loads(emit(quantity_frame(run, for_people=False, peaks=peaks), "json"))
        return json.dumps({**identity(run), "quantities": quantities}, indent=2, ensure_ascii=False)
    if fmt == "csv":
        return emit(quantity_frame(run, for_people=False, peaks=peaks), fmt)
    body = emit(quantity_frame(run, for_people=True, peaks=peaks), fmt)
    validation = matmul_validation(run)
    if validation is not None:
        body += "\n\n" + emit(
            validation, fmt, title="Validation: counted FLOPs of one matrix product vs 2n³ and n²(2n−1)"
        )
    head = header(run)
    if fmt == "markdown":
        return "\n".join(f"- {line.strip()}" for line in head) + "\n\n" + body
    width = table_width()
    if width:  # the header's lines fit too, continuing under the text after their label
        head = [
            part
            for line in head
            for part in textwrap.wrap(
                line, width, subsequent_indent=" " * 10, break_long_words=False, break_on_hyphens=False
            )
        ]
    return "\n".join(head) + "\n\n" + body
