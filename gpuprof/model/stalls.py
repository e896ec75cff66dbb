"""The stall vocabulary (``data/stalls.toml``) and how profiler metric names map onto it.

In the model because readers (the ncu source page, perf top-down) and the stall derivations both name
reasons with it. :class:`InstructionSamples` is the per-instruction record the source-page reader makes.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from gpuprof.errors import InputError

NVPROF, RATIO, PCT, PCSAMP = "nvprof", "ratio", "pct", "pcsamp"  # the bases stall values come in

_PATTERNS = (
    (RATIO, re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")),
    (PCT, re.compile(r"^smsp__warp_issue_stalled_(\w+?)_per_warp_active\.pct$")),
    (PCSAMP, re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$")),
)


@functools.cache
def vocabulary() -> dict[str, dict[str, dict[str, Any]]]:
    """The parsed ``stalls.toml``: sections ``ncu``, ``nvprof`` and ``topdown``."""
    text = resources.files("gpuprof.data").joinpath("stalls.toml").read_text()
    return tomllib.loads(text)


@functools.cache
def _pcsamp_tokens() -> dict[str, str]:
    """PC-sampling and source-page names -> ncu reason (``no_instructions`` -> ``no_instruction``)."""
    table: dict[str, str] = {}
    for reason, spec in vocabulary()["ncu"].items():
        table[spec.get("pcsamp", reason)] = reason
        for column in spec.get("source", ()):
            table[column] = reason
    return table


def reason_for_token(token: str) -> str:
    """The ncu reason a metric token or source-page column names; unknown tokens pass through."""
    return _pcsamp_tokens().get(token, token)


def classify(name: str) -> tuple[str, str] | None:
    """(basis, reason) for a stall metric name, or None when ``name`` is not a stall metric."""
    if name in vocabulary()["nvprof"]:
        return NVPROF, name
    for basis, pattern in _PATTERNS:
        match = pattern.match(name)
        if match and not match.group(1).endswith("_not_issued"):
            return basis, reason_for_token(match.group(1))
    return None


def known_reason(reason: str) -> str:
    """``reason`` when it is an ncu stall reason (as ``--reason`` takes them); InputError listing
    the known ones otherwise."""
    known = sorted(vocabulary()["ncu"])
    if reason not in known:
        raise InputError(f"unknown stall reason '{reason}'", f"choose one of: {', '.join(known)}")
    return reason


def describe(family: str, reason: str) -> dict[str, Any]:
    """Vocabulary entry for a reason; a bare entry naming the token when stalls.toml lacks it."""
    section = "nvprof" if family == NVPROF else "ncu"
    return vocabulary()[section].get(
        reason, {"label": reason, "description": "", "fix": "", "suggests": f"stalls of type '{reason}'"}
    )


@dataclass(frozen=True)
class InstructionSamples:
    """PC-sampling counts at one SASS instruction (all samples, issued or not), by ncu reason."""

    address: int
    source: str
    samples: dict[str, float]
