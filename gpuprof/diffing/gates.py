"""Regression gates for CI: ``--fail-if 'time:+5%'`` fails when a kernel's time rose by more than 5 %.

A gate is decided per matched kernel and on the total, each from its row's verdict:

* regressed: the change is significant (see :mod:`gpuprof.derive.significance`) in the gate's
  direction and beyond its limit; on a single measurement a side, the point change beyond the limit
  (inconclusive instead when that side is a tool's aggregate whose min..max holds the other median);
* passed: the 95 % interval's bound on the gate's side is within the limit (or the values are equal);
* inconclusive: neither (the interval reaches past the limit without a significant change), or a
  matched kernel has the metric on one side only, or on neither (FLOPs a tool could not count);
  copies and memsets without the metric are left out.

Exit status: 1 when any gate regressed, else 2 when any is inconclusive, else 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from gpuprof.diffing import metrics as m
from gpuprof.errors import InputError

PASSED, REGRESSED, INCONCLUSIVE = "passed", "REGRESSED", "inconclusive"
EXIT = {PASSED: 0, REGRESSED: 1, INCONCLUSIVE: 2}
_GATE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*:\s*([+-])\s*(\d+(?:\.\d+)?)\s*%\s*$")


@dataclass(frozen=True)
class Gate:
    metric: str  # the row name (aliases resolved)
    limit: float  # signed fraction: +0.05 fails on a rise above 5 %, -0.03 on a fall below -3 %
    text: str

    @property
    def direction(self) -> int:
        return 1 if self.limit > 0 else -1


def parse(text: str) -> Gate:
    """'time:+5%' -> Gate; InputError for another shape or an unknown metric."""
    found = _GATE.match(text)
    if not found:
        raise InputError(
            f"cannot read the gate '{text}'",
            "write METRIC:+N% (fail when it rises more than N %) or METRIC:-N%, e.g. 'time:+5%'",
        )
    name, sign, number = found.groups()
    limit = float(number) / 100
    if limit == 0:
        raise InputError(f"the gate '{text}' has a zero limit", "give a limit above 0 %, e.g. 'time:+1%'")
    return Gate(m.spec(name).name, limit if sign == "+" else -limit, text.strip())


def decide(gate: Gate, row: dict[str, Any]) -> tuple[str, str]:
    """(outcome, why) of ``gate`` on one row with values on both sides."""
    change = (row["change %"] or math.nan) / 100
    beyond = change * gate.direction > abs(gate.limit)
    moved = f"{100 * change:+.1f}%"
    if row["_single"]:
        if row.get("_within"):
            return INCONCLUSIVE, f"{moved}, but {row['_within']}: a single aggregate cannot tell"
        return (REGRESSED if beyond else PASSED), f"{moved} on a single measurement"
    if row["_significant"] and beyond:
        return REGRESSED, f"{moved}, significant"
    low, high = row["CI low %"], row["CI high %"]
    bound = high if gate.direction > 0 else low
    if bound is None or (isinstance(bound, float) and math.isnan(bound)):
        return PASSED, f"{moved} (equal values)" if change == 0 else moved
    if bound / 100 * gate.direction <= abs(gate.limit):
        return PASSED, f"{moved}, 95% CI bound {bound:+.1f}% within the limit"
    return INCONCLUSIVE, f"{moved}, 95% CI reaches {bound:+.1f}%: more repeats would decide"


@dataclass
class Outcome:
    gate: Gate
    status: str
    detail: str
    rows: dict[int, tuple[str, str]] = field(default_factory=dict)  # row index -> (status, why)

    @property
    def line(self) -> str:
        return f"gate {self.gate.text}: {self.status}: {self.detail}"


def evaluate(gate: Gate, rows: list[dict[str, Any]]) -> Outcome:
    """The gate on every matched row of its metric, summed up in one line."""
    decided: dict[int, tuple[str, str]] = {}
    one_sided = []
    for i, r in enumerate(rows):
        if r["metric"] != gate.metric or str(r["verdict"]).startswith("only in"):
            continue
        if str(r["verdict"]).startswith("not in"):
            one_sided.append(r["kernel"])
            decided[i] = (INCONCLUSIVE, r["verdict"])
        else:
            decided[i] = decide(gate, r)
    worst = [(i, s, why) for i, (s, why) in decided.items() if s == REGRESSED] or [
        (i, s, why) for i, (s, why) in decided.items() if s == INCONCLUSIVE
    ]
    if not decided:
        return Outcome(gate, INCONCLUSIVE, f"no matched kernel has {gate.metric} on both sides")
    if not worst:
        return Outcome(gate, PASSED, f"{len(decided)} row(s) within the limit", decided)
    shown = "; ".join(f"{rows[i]['kernel']}: {why}" for i, _, why in worst[:3])
    more = f" (+{len(worst) - 3} more)" if len(worst) > 3 else ""
    return Outcome(gate, worst[0][1], f"{len(worst)} of {len(decided)} row(s): {shown}{more}", decided)


def exit_code(outcomes: list[Outcome]) -> int:
    return max((EXIT[o.status] for o in outcomes), default=0, key=lambda c: (c == 1, c))
