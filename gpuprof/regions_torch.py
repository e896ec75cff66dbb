"""PyTorch's own global hooks as regions: a "step" region per optimizer step, "layer" regions per
module forward, with no change to the training script.

* Steps: a global forward pre-hook opens a "step" region at the first module forward done with
  gradients on (validation under ``torch.no_grad()`` opens none), and a global optimizer-step
  post-hook closes it; so a step covers forward, backward and the optimizer, not the data loading
  before it. Steps are numbered per process (index 0, 1, ...), and nest in whatever region the
  script opened around them (an "epoch").
* Layers (optional, costs a Python call per module call): every module's forward is a region named
  after its class, nested as the modules are; its ``module`` attribute is the class's full name.

:func:`install` is what ``gpuprof profile --torch-hooks`` has the program run when it imports torch
(``gpuprof.launch.inject``); a script may call it itself. torch is imported here only when
:func:`install` runs.
"""

from __future__ import annotations

import threading
from typing import Any

from gpuprof import regions

STEP = "step"
KINDS = ("steps", "layers")


class _Steps:
    """Open a step at the first forward with gradients on; close it after optimizer.step()."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.count = 0
        self.lock = threading.Lock()

    def forward_pre(self, module: Any, args: Any) -> None:
        if getattr(self.local, "open", 0) or not self._grad_enabled():
            return
        with self.lock:
            index, self.count = self.count, self.count + 1
        self.local.open = regions.begin(STEP, index)

    def step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        ident = getattr(self.local, "open", 0)
        if ident:
            self.local.open = 0
            regions.end(ident)

    @staticmethod
    def _grad_enabled() -> bool:
        import torch

        return torch.is_grad_enabled()


class _Layers:
    """Each module's forward as a region named after its class."""

    def __init__(self) -> None:
        self.local = threading.local()

    def pre(self, module: Any, args: Any) -> None:
        kind = type(module)
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        stack.append(regions.begin(kind.__name__, module=f"{kind.__module__}.{kind.__qualname__}"))

    def post(self, module: Any, args: Any, output: Any) -> None:
        stack = getattr(self.local, "stack", None)
        if stack:
            regions.end(stack.pop())


def install(kinds: tuple[str, ...] | list[str] = ("steps",)) -> list[Any]:
    """Register the global hooks for ``kinds`` ("steps", "layers"); returns their handles (each
    has ``remove()``)."""
    from torch.nn.modules import module
    from torch.optim import optimizer

    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown torch hook kind(s) {sorted(unknown)}; choose from {KINDS}")
    handles = []
    if "steps" in kinds:  # first: a step opens before the first layer inside it
        steps = _Steps()
        handles += [
            module.register_module_forward_pre_hook(steps.forward_pre),
            optimizer.register_optimizer_step_post_hook(steps.step_post),
        ]
    if "layers" in kinds:
        layers = _Layers()
        handles += [
            module.register_module_forward_pre_hook(layers.pre),
            module.register_module_forward_hook(layers.post, always_call=True),
        ]
    return handles
