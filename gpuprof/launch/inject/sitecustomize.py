"""Run by Python at start-up in a program under ``gpuprof profile --torch-hooks`` (this folder is put
first on its ``PYTHONPATH``): when the program imports torch, install gpuprof's global PyTorch hooks
(:mod:`gpuprof.regions_torch`) for the kinds in ``$GPUPROF_TORCH_HOOKS``, so step (and layer) regions
are recorded with no change to the script. Then runs the ``sitecustomize`` this file shadows, if any.
Nothing here may stop the program: a failure leaves it running without the hooks.
"""

import importlib
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_KINDS = tuple(k for k in os.environ.get("GPUPROF_TORCH_HOOKS", "").split(",") if k)


def _install() -> None:
    try:
        from gpuprof.regions_torch import install

        install(_KINDS)
    except Exception as error:  # noqa: BLE001 - the program runs on without hooks
        sys.stderr.write(f"gpuprof: torch hooks not installed ({type(error).__name__}: {error})\n")


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps torch's loader so the hooks go in once torch has loaded."""

    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader, original = spec.loader, spec.loader.exec_module

        def exec_module(module):
            original(module)
            _install()

        loader.exec_module = exec_module
        return spec


def _chain() -> None:
    """Run the sitecustomize this one shadows (later on sys.path), as Python would have."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    this = sys.modules.pop("sitecustomize")
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        sys.modules["sitecustomize"] = this


if _KINDS:
    if "torch" in sys.modules:
        _install()
    else:
        sys.meta_path.insert(0, _AfterTorch())
_chain()
