"""The reference study's published results as comparison rows, beside anything gpuprof measured.

Melo, Ferreira, Duarte and Zamith, "Análise de desempenho da biblioteca Theano com GPU sob a ótica
do CUDA Profiler" (UFRRJ / COPPE-UFRJ), Tables 2 and 3: six Theano operations on three GPUs, MFLOP/s
from nvprof's ``flop_count_sp`` over the kernel time and Efic.(%) = nvprof's ``flop_sp_efficiency``
(achieved over the single-precision peak at the clock of the run). The rows ship with gpuprof as
``gpuprof/data/theano_cuda_profiler_tables.csv``.

The roofline-relative efficiency is gpuprof's, computed here from the published MFLOP/s, the op's
analytic intensity and the device table's peaks. It is given only where nvprof's FLOP count and the
analytic one agree (add, mul, scalar: one per element; dot: 2·m·n·k). For sigmoid and tanh nvprof
counted 10-18 FLOPs per element (exp and division expand into several instructions), a count the
paper does not publish, so their intensity, and with it the roofline position, is unknown.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from gpuprof.devices import gpu_table
from gpuprof.devices.peaks import Peaks
from gpuprof.model import MEASURED
from gpuprof.workloads import ops

if TYPE_CHECKING:
    import pandas as pd

DATA_FILE = "theano_cuda_profiler_tables.csv"
# The paper's GPU labels -> device table keys (gpuprof/data/devices.toml).
GPUS = {"GT710M": "gt-710m", "K40": "k40", "GTX980": "gtx-980"}
DTYPE = "float32"
ENGINE = "Theano (CUDA)"
# Ops whose analytic FLOP count is the count nvprof reports, so analytic intensity applies.
ANALYTIC_AI_OPS = ("add", "mul", "scalar", "dot")
MFLOPS_ORIGIN = f"{MEASURED}: nvprof flop_count_sp / kernel time (published)"
EFFICIENCY_ORIGIN = f"{MEASURED}: nvprof flop_sp_efficiency, at the run clock (published)"


FLOP_COUNT_NOTE = (
    "sigmoid and tanh: the paper's MFLOP/s count nvprof's 10-18 FLOPs per element, measured runs "
    "the analytic 4 (sigmoid) and 5 (tanh), so for the same time the paper's number is 2-4.5x "
    "higher; their MFLOP/s do not compare directly"
)


def device_label(gpu: str) -> str:
    return f"{gpu} (paper)"


def published() -> pd.DataFrame:
    """The CSV as shipped: table, gpu, op, size_mb, mflops_per_s, efficiency_pct."""
    import pandas as pd

    with resources.files("gpuprof.data").joinpath(DATA_FILE).open("r", encoding="utf-8") as handle:
        return pd.read_csv(handle)


def peaks(gpu: str) -> Peaks:
    """The device table's peaks for one of the paper's GPUs (``GT710M``, ``K40``, ``GTX980``)."""
    found = [g for g in gpu_table.load().gpus if g.key == GPUS[gpu]]
    return gpu_table.peaks(found[0])


def analytic_intensity(op: str, size_bytes: float) -> float | None:
    """FLOP/byte of ``op`` at ``size_bytes`` (square operands), where nvprof counts like the model."""
    if op not in ANALYTIC_AI_OPS:
        return None
    shape = ops.shape_for_size(op, int(size_bytes), DTYPE)
    return ops.flops(op, shape) / ops.bytes_moved(op, shape, DTYPE)
