"""``gpuprof diff`` in each format: a terminal table or a pull-request comment (Markdown), both with
what was compared and how verdicts were reached; CSV and JSON of the whole frame; JUnit XML with
one test case per kernel, so CI dashboards list kernels as tests.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

from gpuprof.diffing.gates import INCONCLUSIVE, REGRESSED
from gpuprof.diffing.rows import STATISTICS
from gpuprof.model.units import human
from gpuprof.render import emit, table_width
from gpuprof.render.text import prose

if TYPE_CHECKING:
    import pandas as pd

    from gpuprof.diffing import DiffResult
    from gpuprof.diffing.inputs import Side

FORMATS = ("table", "markdown", "csv", "json", "junit")
NAME_WIDTH = 72


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value))


def _devices(side: Side, given: str | None, option: str) -> str:
    names = sorted({str(r.device.get("name", "")) for r in side.runs} - {""})
    if names:
        return ", ".join(names)
    return f"{given} (given with {option})" if given else "not named in the input"


def header(result: DiffResult, gpus: tuple[str | None, str | None] = (None, None)) -> list[str]:
    """What A and B are, how kernels were matched and what was left out."""
    lines = []
    for name, side, given in zip("AB", result.sides, gpus):
        formats = ", ".join(sorted({r.format for r in side.runs}))
        device = _devices(side, given, f"--gpu-{name.lower()}")
        lines.append(
            f"{name}: {side.label} ({formats}; {len(side.runs)} run(s); device: {device}; "
            f"clock: {side.clock or 'not recorded'})"
        )
    lines.append(
        f"matched {result.matched} kernel(s) or run(s); only in A: {result.only[0]}, only in B: "
        f"{result.only[1]} (listed at the end, never dropped)"
    )
    return lines + [f"note: {n}" for n in result.notes]


def _short(label: str) -> str:
    """A kernel name cut in the middle to :data:`NAME_WIDTH` characters, for tables that fit a
    terminal (C++ template names run to a thousand characters); CSV and JSON keep it whole."""
    if len(label) <= NAME_WIDTH:
        return label
    keep = NAME_WIDTH - 1
    return f"{label[: keep - keep // 3]}…{label[-(keep // 3) :]}"


def _percent(value: Any) -> str:
    return f"{value:+.1f}%" if _number(value) else ""


def view(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as people read it: values with their units, changes in percent, the kernel name
    once per kernel and at most :data:`NAME_WIDTH` long; the full names and numbers stay in CSV,
    JSON and JUnit."""
    import pandas as pd

    def shown(value: Any, unit: str) -> str:
        return human(float(value), unit) if _number(value) else ""

    kernel = frame["kernel"].map(_short).where(frame["kernel"] != frame["kernel"].shift(), "")
    out = pd.DataFrame(
        {
            "kernel": kernel,
            "metric": frame["metric"],
            "A": [shown(v, u) for v, u in zip(frame["A"], frame["unit"])],
            "B": [shown(v, u) for v, u in zip(frame["B"], frame["unit"])],
            "change": frame["change %"].map(_percent),
            "95% CI": [
                f"{_percent(lo)}..{_percent(hi)}" if _number(lo) else ""
                for lo, hi in zip(frame["CI low %"], frame["CI high %"])
            ],
            "verdict": frame["verdict"],
            "gate": frame["gate"],
            "basis": frame["basis"],
        }
    )
    return out if (frame["gate"] != "").any() else out.drop(columns=["gate"])


def table(result: DiffResult, gpus: tuple[str | None, str | None] = (None, None)) -> str:
    """What was compared, the table and how verdicts are reached, all fitting the terminal's width
    (each line whole with --wide and outside a command, as the table's rows)."""
    body = emit(view(result.frame), "table")  # the basis column moves under the table as numbered notes
    width = table_width()
    return "\n".join(
        [prose("\n".join(header(result, gpus)), width), "", body, "", prose(STATISTICS, width, hanging=False)]
    )


def markdown(result: DiffResult, gpus: tuple[str | None, str | None] = (None, None)) -> str:
    """A pull-request comment: heading, gate results, the table, and the sources folded away."""
    frame = view(result.frame)
    notes = list(dict.fromkeys(frame["basis"]))
    numbered = frame.drop(columns=["basis"]).assign(note=[notes.index(b) + 1 for b in frame["basis"]])
    a, b = (html.escape(s.label, quote=False) for s in result.sides)
    lines = [f"### gpuprof diff: `{a}` → `{b}`", ""]
    lines += [
        f"- **gate {html.escape(o.gate.text)}: {o.status}**: {html.escape(o.detail, quote=False)}" for o in result.gates
    ]
    lines += [f"- {html.escape(line, quote=False)}" for line in header(result, gpus)]
    lines += ["", emit(numbered, "markdown"), "", "<details><summary>Where the numbers come from</summary>", ""]
    lines += [f"{i}. {html.escape(n, quote=False)}" for i, n in enumerate(notes, 1)]
    return "\n".join(lines + ["", html.escape(STATISTICS, quote=False), "", "</details>"])


def junit(result: DiffResult) -> str:
    """JUnit XML: one test case per kernel (and the total); a gate that regressed is a failure, an
    inconclusive one an error, a kernel only one side has is skipped."""
    import xml.etree.ElementTree as ET

    frame = result.frame
    suite = ET.Element("testsuite", name=f"gpuprof diff {result.sides[0].label} -> {result.sides[1].label}")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for kernel, rows in frame.groupby("kernel", sort=False):
        case = ET.SubElement(suite, "testcase", classname="gpuprof.diff", name=str(kernel))
        counts["tests"] += 1
        gates = "; ".join(g for g in rows["gate"] if g)
        verdicts = rows["verdict"].astype(str)
        if REGRESSED in gates:
            ET.SubElement(case, "failure", message=gates, type="regression")
            counts["failures"] += 1
        elif INCONCLUSIVE in gates:
            ET.SubElement(case, "error", message=gates, type="inconclusive")
            counts["errors"] += 1
        elif verdicts.str.startswith("only in").all():
            ET.SubElement(case, "skipped", message=verdicts.iloc[0])
            counts["skipped"] += 1
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join(
            " ".join(
                filter(
                    None,
                    [
                        f"{r['metric']}: A {r['A'] or '-'}, B {r['B'] or '-'}",
                        r["change"],
                        r["95% CI"] and f"(95% CI {r['95% CI']})",
                        r["verdict"],
                    ],
                )
            )
            for r in view(rows).to_dict("records")
        )
    suite.attrib.update({k: str(v) for k, v in counts.items()})
    root = ET.Element("testsuites", name="gpuprof diff", **{k: str(v) for k, v in counts.items()})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def render(result: DiffResult, fmt: str, gpus: tuple[str | None, str | None] = (None, None)) -> str:
    """The result in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "table":
        return table(result, gpus)
    if fmt == "markdown":
        return markdown(result, gpus)
    if fmt == "junit":
        return junit(result)
    return emit(_whole_counts(result.frame) if fmt == "json" else result.frame, fmt)


def _whole_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers for JSON (3, not 3.0): sample sizes, and launch counts on both sides."""
    import pandas as pd

    frame = frame.copy()
    for column in ("n A", "n B"):
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    counts = frame["metric"] == "launches" if "metric" in frame else None
    if counts is not None and counts.any():
        for column in ("A", "B"):
            frame[column] = frame[column].astype(object)
            frame.loc[counts, column] = [None if pd.isna(v) else int(v) for v in frame.loc[counts, column]]
    return frame
