"""Run a user's Python program, unedited, under its framework's own profiler:
``python -m gpuprof.launch.framework_trace torch|jax|tf OUT STEPS WARMUP -- SCRIPT|-m MODULE ARGS``.

- **torch**: ``torch.profiler.profile`` (CPU, and CUDA when a GPU is there; shapes recorded) with a
  schedule of WARMUP warm-up steps then STEPS recorded ones, stepped from a global hook on every
  optimizer's ``step()`` (``torch.optim.optimizer.register_optimizer_step_post_hook``), so each
  training step is one ``ProfilerStep#N``. The trace is written to ``OUT/trace.pt.trace.json`` when
  the schedule ends or the program does.
- **jax**: ``jax.profiler.trace(OUT)`` around the whole program (its steps are the program's own
  ``StepTraceAnnotation``); the trace lands in ``OUT/plugins/profile/<date>/<host>.trace.json.gz``.
- **tf**: ``tf.profiler.experimental.start(OUT)`` / ``stop()`` around the whole program; TensorFlow
  2 writes ``*.xplane.pb`` there.

The program runs in this process as ``__main__`` with its own ``sys.argv``, like ``python SCRIPT``
would run it. This is a program entry point: it exits with the program's status.
"""

from __future__ import annotations

import contextlib
import runpy
import sys
from collections.abc import Callable, Iterator
from pathlib import Path


def _program(target: list[str]) -> Callable[[], None]:
    """A call running ``SCRIPT ARGS`` or ``-m MODULE ARGS`` as ``python`` would."""
    if target[0] == "-m":
        module, argv = target[1], target[1:]

        def run() -> None:
            sys.argv = argv
            runpy.run_module(module, run_name="__main__", alter_sys=True)

        return run
    script = target[0]

    def run_script() -> None:
        sys.argv = list(target)
        sys.path.insert(0, str(Path(script).resolve().parent))
        runpy.run_path(script, run_name="__main__")

    return run_script


@contextlib.contextmanager
def _torch(out: Path, steps: int, warmup: int) -> Iterator[None]:
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    written = out / "trace.pt.trace.json"
    profiler = profile(
        activities=activities,
        record_shapes=True,
        schedule=schedule(wait=0, warmup=warmup, active=steps, repeat=1),
        on_trace_ready=lambda prof: prof.export_chrome_trace(str(written)),
    )
    profiler.start()
    hook = register_optimizer_step_post_hook(lambda *_: profiler.step())
    try:
        yield
    finally:
        hook.remove()
        profiler.stop()


@contextlib.contextmanager
def _jax(out: Path, steps: int, warmup: int) -> Iterator[None]:
    import jax

    with jax.profiler.trace(str(out)):
        yield


@contextlib.contextmanager
def _tf(out: Path, steps: int, warmup: int) -> Iterator[None]:
    import tensorflow as tf

    tf.profiler.experimental.start(str(out))
    try:
        yield
    finally:
        tf.profiler.experimental.stop()


PROFILERS = {"torch": _torch, "jax": _jax, "tf": _tf}


def main(argv: list[str]) -> int:
    framework, out, steps, warmup, separator, *target = argv
    if separator != "--" or not target:
        print(
            "usage: python -m gpuprof.launch.framework_trace torch|jax|tf OUT STEPS WARMUP -- SCRIPT ARGS",
            file=sys.stderr,
        )
        return 2
    run = _program(target)
    code = 0
    with PROFILERS[framework](Path(out), int(steps), int(warmup)):
        try:
            run()
        except SystemExit as stop:  # the program's own exit: the trace is still written
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
