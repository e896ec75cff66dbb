"""What one measurement was asked to do: the settings the launch stage runs and the run command builds.

Kept in the launch stage so that both sessions (CPU in :mod:`gpuprof.measure`, GPU in
:mod:`gpuprof.launch.gpu_session`) read one definition, and neither imports the other's module for it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from gpuprof.errors import InputError
from gpuprof.model.sizes import parse_size
from gpuprof.workloads import ops
from gpuprof.workloads.timing import Progress

CACHE_MODES = ("warm", "cold")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class RunSettings:
    """What the user asked for, parsed and validated; the CLI builds one and calls :func:`measure`."""

    op: str
    size: str | None = None
    shape: str | None = None
    dtype: str = "float32"
    engine: str | None = None
    device: str = "auto"
    repeat: int = 10
    warmup: int = 3
    cache: str = "warm"
    counters: bool = True
    seed: int = 0
    command: str = ""
    gpu: dict[str, Any] = dataclasses.field(default_factory=dict)  # GPU profiler options the user gave
    progress: Progress | None = dataclasses.field(default=None, compare=False, repr=False)  # hears each call

    def __post_init__(self) -> None:
        ops.get_op(self.op)
        ops.itemsize(self.dtype)
        if (self.size is None) == (self.shape is None):
            raise InputError("give exactly one of --size and --shape", "e.g. --size 6MB or --shape 1024x1024")
        if self.repeat < 1 or self.warmup < 0:
            raise InputError("--repeat must be at least 1 and --warmup at least 0", "e.g. --repeat 10 --warmup 3")
        if self.cache not in CACHE_MODES:
            raise InputError(f"unknown cache mode '{self.cache}'", f"choose one of: {', '.join(CACHE_MODES)}")
        if self.device not in DEVICES:
            raise InputError(f"unknown device '{self.device}'", f"choose one of: {', '.join(DEVICES)}")
        if self.device == "cpu" and self.gpu:
            raise InputError(
                f"{self.gpu_options()} {'applies' if len(self.gpu) == 1 else 'apply'} to GPU runs "
                "only, and --device cpu measures on the CPU",
                "drop them (on the CPU gpuprof counts with perf: --counters), or use --device cuda",
            )

    def gpu_options(self) -> str:
        """The GPU-only options given, as typed: '--profiler ncu, --replay-mode application'."""
        return ", ".join(f"--{key.replace('_', '-')} {value}" for key, value in self.gpu.items())

    def resolved_shape(self) -> tuple[int, ...]:
        if self.shape is not None:
            return ops.parse_shape(self.op, self.shape)
        return ops.shape_for_size(self.op, parse_size(self.size or ""), self.dtype)
