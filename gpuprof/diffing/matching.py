"""Which launch of one side is the same kernel as which of the other.

``config`` (the default) matches imported kernels by demangled name, launch configuration (grid and
block) and NVTX range; ``name`` by name and NVTX range alone (a kernel whose grid grew with the
input still matches); ``order`` pairs the first distinct kernel of one side with the first of the
other, and so on (renamed kernels, different programs on two devices). Measured runs match by
(op, shape, dtype, engine), or by order with ``order``. Names are compared with whitespace
normalised, and without parameter lists when one side's tool printed none (ncu's
``--kernel-name-base function``). Keys are built once per distinct value, not per launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

MATCHES = ("config", "name", "order")
RUN = "run"  # the family of a measured run's rows (their "kernel" is the workload key)
KERNEL = "kernel"
_SPACES = re.compile(r"\s*([,*&()<>\[\]])\s*")


def normal_name(name: str) -> str:
    """Whitespace-insensitive spelling: 'f(int, float *)' and 'f(int,float*)' are the same kernel."""
    return _SPACES.sub(r"\1", " ".join(name.split()))


def base_name(name: str) -> str:
    """The function's name without return type, template arguments or parameters, as ncu prints
    it with ``--kernel-name-base function``: 'void gemm<float>(float*)' -> 'gemm'."""
    name = normal_name(name)
    if name.startswith("["):  # '[CUDA memcpy DtoD]': not a function
        return name
    depth, cut = 0, len(name)
    for i, char in enumerate(name):
        depth += char == "<"
        depth -= char == ">"
        if char == "(" and depth == 0:
            cut = i
            break
    name = name[:cut]
    while name.endswith(">"):  # drop trailing template arguments, balanced
        depth, i = 0, len(name) - 1
        for i in range(len(name) - 1, -1, -1):
            depth += (name[i] == ">") - (name[i] == "<")
            if depth == 0:
                break
        name = name[:i]
    return name.rsplit(" ", 1)[-1]


@dataclass
class Grouping:
    """Per launch of each side, the id of its kernel; equal ids on both sides are one matched pair."""

    a: np.ndarray
    b: np.ndarray
    labels: dict[int, str]
    notes: list[str] = field(default_factory=list)


def _has_parameters(frame: pd.DataFrame) -> bool:
    names = frame.loc[frame["family"] == KERNEL, "kernel"].unique()
    return any("(" in str(name) for name in names)


def _names(frame: pd.DataFrame, bare: bool) -> np.ndarray:
    """Each launch's comparable name, computed once per distinct kernel name."""
    import pandas as pd

    codes, names = pd.factorize(frame["kernel"])
    kernel = (frame["family"] == KERNEL).to_numpy()
    spell = base_name if bare else normal_name
    spelled = np.array([spell(str(n)) for n in names], dtype=object)[codes]
    return np.where(kernel, spelled, frame["kernel"].to_numpy(dtype=object))


def _distinct(column: pd.Series) -> list[str]:
    return [str(v) for v in column.unique()]


def _totals(dims: pd.Series) -> pd.Series:
    """'640,1280,1' -> '819200' (and '506' stays): the number of blocks or threads."""
    import pandas as pd

    codes, texts = pd.factorize(dims)
    totals = [str(int(np.prod([int(x) for x in t.split(",")]))) if t else "" for t in texts]
    return pd.Series(np.array(totals + [""], dtype=object)[codes], index=dims.index)


def _configs(a: pd.DataFrame, b: pd.DataFrame, notes: list[str]) -> tuple[list[pd.Series], list[pd.Series]]:
    """The grid and block columns both sides can be compared on: x,y,z where both give all three,
    the totals where one gives only totals, nothing where one side has none."""
    kernels = [f.loc[f["family"] == KERNEL] for f in (a, b)]
    if not all(len(k) for k in kernels):
        return [], []
    lacking = [side for side, k in zip("AB", kernels) if _distinct(k["grid"]) == [""] and _distinct(k["block"]) == [""]]
    if lacking:
        notes.append(
            f"{' and '.join(lacking)} {'record' if len(lacking) > 1 else 'records'} no grid or block: "
            "kernels matched without them"
        )
        return [], []
    three = all(t.count(",") == 2 for k in kernels for c in ("grid", "block") for t in _distinct(k[c]))
    if not three:
        notes.append("grid and block compared as total blocks and threads (an input gives only totals)")
    a_side, b_side = ([f[c] if three else _totals(f[c]) for c in ("grid", "block")] for f in (a, b))
    return a_side, b_side


def _label(first: str | None, second: str) -> str:
    """A pair's name: the fuller spelling when both name the same function, else both."""
    if first is None or normal_name(first) == normal_name(second):
        return first or second
    if base_name(first) == base_name(second):
        return max(first, second, key=len)
    return f"{first} ↔ {second}"


def group(a: pd.DataFrame, b: pd.DataFrame, how: str) -> Grouping:
    """Kernel ids for the launches of ``a`` and ``b`` (frames with family, kernel, grid, block, nvtx)."""
    import pandas as pd

    notes: list[str] = []
    bare = [not _has_parameters(f) for f in (a, b)]
    if bare[0] != bare[1] and _has_parameters(a) + _has_parameters(b):
        side = "A" if bare[0] else "B"
        notes.append(f"{side} names kernels without parameter lists: names compared without them")
    names = [_names(f, bare[0] != bare[1]) for f in (a, b)]
    configs = _configs(a, b, notes) if how != "name" else ([], [])
    parts = [
        np.concatenate([frame["family"].to_numpy(dtype=object) for frame in (a, b)]),
        np.concatenate(names),
        *(np.concatenate([side[i].to_numpy(dtype=object) for side in configs]) for i in range(len(configs[0]))),
        np.concatenate([frame["nvtx"].to_numpy(dtype=object) for frame in (a, b)]),
    ]
    codes = pd.MultiIndex.from_arrays(parts).factorize()[0]  # one id per distinct (family, name, grid, block, nvtx)
    if how == "order":  # the n-th distinct kernel (or run) of each side, in order of first launch
        ordinal = np.empty(len(codes), dtype=object)
        for side in (slice(0, len(a)), slice(len(a), len(a) + len(b))):
            local, _ = pd.factorize(codes[side])
            family = parts[0][side][np.unique(local, return_index=True)[1]]
            rank = pd.Series(family).groupby(family).cumcount().to_numpy()
            ordinal[side] = np.array([f"{f}#{r}" for f, r in zip(family, rank)], dtype=object)[local]
        codes = pd.factorize(ordinal)[0]
    ids_a, ids_b = codes[: len(a)], codes[len(a) :]
    labels: dict[int, str] = {}
    shapes: dict[int, str] = {}
    for ids, frame in ((ids_a, a), (ids_b, b)):
        first = pd.Series(np.arange(len(ids))).groupby(ids).min()
        for key, row in first.items():
            labels[key] = _label(labels.get(key), str(frame["kernel"].iat[row]))
            grid, block = frame["grid"].iat[row], frame["block"].iat[row]
            shapes.setdefault(key, f" [grid {grid}, block {block}]" if grid or block else "")
    repeated = pd.Series(labels).duplicated(keep=False)
    return Grouping(ids_a, ids_b, {k: v + shapes[k] if repeated[k] else v for k, v in labels.items()}, notes)
