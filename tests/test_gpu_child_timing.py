"""The workload child's timed batches: how many calls a batch holds and how they are issued.

The child's CUDA-event timing itself needs a GPU (``pytest -m gpu``, benchmarks/gpu_acceptance.py);
here a stand-in stream records what the launcher asks of it: a CUDA graph captured from N calls, or,
where capture fails, a plain loop whose description says so and why.
"""

from __future__ import annotations

import pytest

from gpuprof.launch.child import BATCH_TARGET_S, MAX_BATCH, batch_launcher, batch_size


@pytest.mark.parametrize(
    ("requested", "one_call_s", "expected"),
    [
        (7, 1e-3, 7),  # asked for: kept
        (0, 2e-6, MAX_BATCH),  # a 2 µs add: 1000 calls (capped)
        (0, 40e-6, 50),  # 2 ms / 40 µs
        (0, 0.5, 1),  # one long call is its own batch
        (0, 0.0, MAX_BATCH),  # an event pair that read 0 s
    ],
)
def test_batch_size(requested, one_call_s, expected):
    assert batch_size(requested, one_call_s) == expected
    assert BATCH_TARGET_S == 2e-3


class _Graph:
    def __init__(self, captured: int, launches: list[int]) -> None:
        self.captured, self._launches = captured, launches

    def launch(self, stream: object) -> None:
        self._launches.append(self.captured)


class _Stream:
    """begin_capture/end_capture as CuPy's Stream has them; ``refuse`` makes capture fail as cuBLAS can."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.refuse, self.capturing, self.captured, self.launches = refuse, False, 0, []

    def begin_capture(self) -> None:
        self.capturing = True

    def end_capture(self) -> _Graph:
        self.capturing = False
        if self.refuse:
            raise self.refuse
        return _Graph(self.captured, self.launches)


def test_a_batch_is_one_cuda_graph_of_n_calls():
    stream, issued = _Stream(), []

    def call() -> None:
        issued.append("captured" if stream.capturing else "direct")
        stream.captured += stream.capturing

    launch, how = batch_launcher(None, call, 5, stream)
    assert issued == ["captured"] * 5 and not stream.capturing
    launch()
    launch()
    assert stream.launches == [5, 5] and issued == ["captured"] * 5  # replayed by the graph, not re-issued
    assert how == "a CUDA graph of 5 launch(es) (stream capture), time per launch = batch / 5"


def test_a_call_that_cannot_be_captured_is_timed_in_a_loop_that_says_so():
    refused = RuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing")
    stream, issued = _Stream(refuse=refused), []
    launch, how = batch_launcher(None, lambda: issued.append(stream.capturing), 3, stream)
    issued.clear()
    launch()
    assert issued == [False] * 3
    assert how == (
        "3 back-to-back launch(es) issued from Python (CUDA graph capture failed: RuntimeError: "
        "cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing), time per "
        "launch = batch / 3, launch latency included where it exceeds the kernel"
    )


@pytest.mark.parametrize(("profiled", "preset", "expected"), [(1, None, "false"), (0, None, None), (1, "true", "true")])
def test_jax_does_not_preallocate_the_gpu_under_a_profiler(tmp_path, profiled, preset, expected) -> None:
    """In a fresh child process (the environment is process-global): with --profiled the child turns
    off JAX's 75 % preallocation before an engine is imported, keeping a value the user set; the
    workload itself then fails here for want of a GPU, which does not matter to this check."""
    import os
    import subprocess
    import sys

    script = (
        "import os, sys; from gpuprof.launch import child; child.main(sys.argv[1:]); "
        "print(os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_PYTHON_CLIENT_PREALLOCATE"}
    if preset:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = preset
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "--op",
            "add",
            "--shape",
            "16x16",
            "--dtype",
            "float32",
            "--engine",
            "cuda-kernels",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--profiled",
            str(profiled),
            "--range",
            "r",
            "--result",
            str(tmp_path / "child.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.stdout.strip().splitlines()[-1] == str(expected), done.stderr


class _Nvtx:
    """Stand-in for cupy.cuda.nvtx that records the range calls."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def RangeStart(self, name, color):
        self.calls.append(("start", name))
        return 7

    def RangeEnd(self, handle):
        self.calls.append(("end", handle))

    def RangePush(self, name):
        self.calls.append(("push", name))

    def RangePop(self):
        self.calls.append(("pop",))


@pytest.mark.parametrize(
    ("kind", "expected"), [("start-end", [("start", "r"), ("end", 7)] * 2), ("push-pop", [("push", "r"), ("pop",)] * 2)]
)
def test_profiled_calls_open_a_start_end_range_by_default(kind, expected) -> None:
    """A start/end range holds kernels launched from any thread (XLA and TorchInductor may launch from
    worker threads); ncu's filter for it has no trailing '/'. Push/pop stays for gpuprof profile's
    --nvtx, which selects a user's push/pop range."""
    import types

    from gpuprof.launch import child, ncu

    nvtx = _Nvtx()
    cp = types.SimpleNamespace(
        cuda=types.SimpleNamespace(
            nvtx=nvtx,
            runtime=types.SimpleNamespace(deviceSynchronize=lambda: None),
            profiler=types.SimpleNamespace(start=lambda: None, stop=lambda: None),
        )
    )
    argv = [
        "--op",
        "add",
        "--shape",
        "8x8",
        "--dtype",
        "float32",
        "--engine",
        "cupy",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--profiled",
        "2",
        "--range",
        "r",
        "--result",
        "x.json",
    ]
    args = child.parse(argv + (["--range-kind", kind] if kind == "push-pop" else []))
    child._profile(cp, lambda: None, args)
    assert nvtx.calls == expected
    assert ncu.nvtx_filter("a/b", start_end=True) == r"a\/b" and ncu.nvtx_filter("a/b") == r"a\/b/"
