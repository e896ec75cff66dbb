"""The optional extras in pyproject.toml: one GPU extra per CUDA line, and no extra that installs a
package nothing imports. Read from the project's own pyproject.toml and gpuprof's sources."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# distribution -> the module gpuprof imports from it (PyPI names differ from import names)
IMPORT_NAME = {
    "cupy-cuda12x": "cupy",
    "cupy-cuda13x": "cupy",
    "nvidia-ml-py": "pynvml",
    "ncu-report": "ncu_report",
    "pytensor": "pytensor",
    "submitit": "submitit",
    "nvtx": "nvtx",
    "jax": "jax",
    "torch": "torch",
    "pyarrow": "pyarrow",
    "keras": "keras",
    "xprof": "xprof",
    "python-papi": "pypapi",
    "tensorflow-cpu": "tensorflow",
}


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        name: [re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0] for req in reqs]
        for name, reqs in project["optional-dependencies"].items()
    }


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "gpuprof").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


def test_one_gpu_extra_per_cuda_line() -> None:
    extras = _extras()
    assert extras["cuda12"] == ["cupy-cuda12x", "nvidia-ml-py"]
    assert extras["cuda13"] == ["cupy-cuda13x", "nvidia-ml-py"]
    assert "cuda" not in extras  # a generic name pinning one CUDA line pulls a second CuPy onto the other


@pytest.mark.slow  # imports every module of every extra: 3-7 s
def test_no_runtime_extra_installs_what_nothing_imports() -> None:
    imported = _imported_modules()
    for extra, packages in _extras().items():
        if extra == "test":  # the test extra also brings tools the tests run (nvcc wheels, pytest)
            continue
        for package in packages:
            assert IMPORT_NAME[package] in imported, f"[{extra}] installs {package}, which gpuprof never imports"
