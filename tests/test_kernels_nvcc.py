"""The hand-written kernels compile for each target architecture, use a sane number of registers, and
contain the instructions each op must execute (SASS via cuobjdump; PTX where no cuobjdump can list the
architecture's SASS). Also: they compile through NVRTC with the options the cuda-kernels engine passes
at run time. Each architecture is compiled once per session (about a second).

Two compilers, one set of checks. Architectures this machine's nvcc targets go through
``nvcc -cubin -Xptxas -v``. Maxwell (sm_52) and Volta (sm_70), which CUDA 13 dropped, go through
CUDA 12.9 from NVIDIA's PyPI wheels, no GPU needed: NVRTC 12 (nvidia-cuda-nvrtc-cu12, with the
headers of nvidia-cuda-runtime-cu12) compiles the file to PTX for compute_52/compute_70, and ptxas
12.9 (nvidia-cuda-nvcc-cu12) assembles it with ``-v``. NVIDIA publishes no CUDA 12 cuobjdump wheel and
every cuobjdump/nvdisasm wheel (13.2+) refuses sm_52/sm_70, so those two are checked on their PTX.
"""

from __future__ import annotations

import collections
import ctypes
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("cupy", reason="the kernel checks need the [test] extra (CuPy, NVIDIA's nvcc and NVRTC wheels)")

from gpuprof.workloads.cuda_kernels import KERNELS_DIR, SOURCE, SUFFIX  # noqa: E402 (after the skip)

pytestmark = pytest.mark.slow  # compiles every kernel for five architectures with nvcc and NVRTC

OPS = ("add", "mul", "scalar", "sigmoid", "tanh", "dot")
ARCHS = ("sm_52", "sm_70", "sm_75", "sm_80", "sm_90")
KERNELS = [f"gpuprof_{op}_{s}" for op in OPS for s in SUFFIX.values()]
SOURCE_PATH = KERNELS_DIR / SOURCE
_PTXAS_FUNCTION = re.compile(r"Function properties for (\w+)")
_PTXAS_USAGE = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_SASS_OP = re.compile(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_PTX_OP = re.compile(r"^\s*\{?\s*((?:add|sub|mul|fma|div|rcp|ex2|cvt)\.[\w.]+)", re.MULTILINE)

# What each kernel must execute, per listing. SASS opcodes are matched exactly (FFMA, not FFMA.SAT).
# float16 add/mul/scalar use __hadd/__hmul (HADD2/HMUL2); float16 transcendentals and the dot product's
# accumulation run in float32, so they show FP32 instructions. Without --use_fast_math expf is a
# MUFU.EX2 plus FFMA refinement and the IEEE division a MUFU.RCP plus FFMA; double exp is a DFMA
# polynomial, double division starts from MUFU.RCP64H. See expected() for GPUs without FP16 units.
SASS = {
    "add": {"f32": {"FADD"}, "f64": {"DADD"}, "f16": {"HADD2"}},
    "mul": {"f32": {"FMUL"}, "f64": {"DMUL"}, "f16": {"HMUL2"}},
    "scalar": {"f32": {"FMUL"}, "f64": {"DMUL"}, "f16": {"HMUL2"}},
    "dot": {"f32": {"FFMA"}, "f64": {"DFMA"}, "f16": {"FFMA"}},
    "sigmoid": {
        "f32": {"MUFU.EX2", "MUFU.RCP", "FFMA"},
        "f64": {"DFMA", "MUFU.RCP64H"},
        "f16": {"MUFU.EX2", "MUFU.RCP"},
    },
    "tanh": {"f32": {"MUFU.EX2", "FFMA"}, "f64": {"DFMA", "MUFU.RCP64H"}, "f16": {"MUFU.EX2"}},
}
PTX = {
    "add": {"f32": {"add.f32"}, "f64": {"add.f64"}, "f16": {"add.f16"}},
    "mul": {"f32": {"mul.f32"}, "f64": {"mul.f64"}, "f16": {"mul.f16"}},
    "scalar": {"f32": {"mul.f32"}, "f64": {"mul.f64"}, "f16": {"mul.f16"}},
    "dot": {"f32": {"fma.rn.f32"}, "f64": {"fma.rn.f64"}, "f16": {"fma.rn.f32"}},
    "sigmoid": {
        "f32": {"ex2.approx.ftz.f32", "rcp.rn.f32"},
        "f64": {"fma.rn.f64", "rcp.rn.f64"},
        "f16": {"ex2.approx.ftz.f32"},
    },
    "tanh": {"f32": {"ex2.approx.ftz.f32", "fma.rn.f32"}, "f64": {"fma.rn.f64"}, "f16": {"ex2.approx.ftz.f32"}},
}
# The fully unrolled dot inner loop (16 FMAs over one tile) and add's single addition, per listing.
UNROLLED = {
    "SASS": {"gpuprof_dot_f32": "FFMA", "gpuprof_dot_f64": "DFMA", "gpuprof_add_f32": "FADD"},
    "PTX": {"gpuprof_dot_f32": "fma.rn.f32", "gpuprof_dot_f64": "fma.rn.f64", "gpuprof_add_f32": "add.f32"},
}
UNROLLED_COUNT = {"gpuprof_dot_f32": 16, "gpuprof_dot_f64": 16, "gpuprof_add_f32": 1}
# Half-precision arithmetic needs compute capability 5.3; below it cuda_fp16.h's __hadd/__hmul convert
# to float, add or multiply there and round back, so sm_52 executes the float32 instruction.
HALF_ARITHMETIC_FROM = 53
HALF_ARITHMETIC_OPS = ("add", "mul", "scalar")


def expected(table: dict[str, dict[str, set[str]]], op: str, suffix: str, arch: str) -> set[str]:
    """The instructions ``op`` in ``suffix`` must contain on ``arch``, from the SASS or PTX table."""
    if suffix == "f16" and op in HALF_ARITHMETIC_OPS and int(arch[3:]) < HALF_ARITHMETIC_FROM:
        return table[op]["f32"]
    return table[op][suffix]


def _wheel_file(relative: str) -> Path | None:
    """A file of NVIDIA's pip wheels (the ``nvidia`` namespace package), e.g. ``cuda_nvcc/bin/ptxas``."""
    try:
        import nvidia
    except ImportError:
        return None
    found = sorted(p for root in nvidia.__path__ for p in Path(root).glob(relative))
    return found[-1] if found else None


def _tool(name: str) -> str | None:
    """A CUDA tool on PATH, in the CUDA toolkit, or from NVIDIA's pip wheels (nvidia-cuda-cuobjdump)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/local/cuda/bin") or _wheel_file(f"*/bin/{name}")
    return str(found) if found else None


NVCC = _tool("nvcc")
# CUDA 12.9 from PyPI for the architectures CUDA 13 dropped (see the module docstring).
CUDA12_WHEELS = "nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12 nvidia-cuda-nvcc-cu12"
NVRTC12 = _wheel_file("cuda_nvrtc/lib/libnvrtc.so.12")
PTXAS12 = _wheel_file("cuda_nvcc/bin/ptxas")
HEADERS12 = _wheel_file("cuda_runtime/include")


@dataclass
class Build:
    arch: str
    compiler: str  # "nvcc" or "NVRTC 12 + ptxas 12"
    registers: dict[str, int]
    shared_bytes: dict[str, int]
    spills: dict[str, tuple[int, int]]
    instructions: dict[str, collections.Counter]
    listing: str  # "SASS" or "PTX"


def _supported_archs() -> set[str]:
    if NVCC is None:
        return set()
    done = subprocess.run([NVCC, "--list-gpu-code"], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def parse_ptxas(log: str) -> tuple[dict[str, int], dict[str, int], dict[str, tuple[int, int]]]:
    """Registers, static shared memory and spill bytes per kernel from ``ptxas -v`` output."""
    registers, shared, spills = {}, {}, {}
    parts = _PTXAS_FUNCTION.split(log)
    for name, body in zip(parts[1::2], parts[2::2]):
        usage = _PTXAS_USAGE.search(body)
        spill = _SPILLS.search(body)
        registers[name] = int(usage.group(1))
        shared[name] = int(usage.group(2) or 0)
        spills[name] = (int(spill.group(1)), int(spill.group(2)))
    return registers, shared, spills


def _per_function(text: str, splitter: str, pattern: re.Pattern[str]) -> dict[str, collections.Counter]:
    found = {}
    for chunk in re.split(splitter, text)[1:]:
        name = re.match(r"\s*(\w+)", chunk).group(1)
        found[name] = collections.Counter(pattern.findall(chunk))
    return found


def _ptx_listing(ptx: str) -> dict[str, collections.Counter]:
    return _per_function(ptx, r"\.visible \.entry ", _PTX_OP)


def _sass_listing(cubin: Path) -> dict[str, collections.Counter] | None:
    """Opcodes per kernel from ``cuobjdump -sass``; None without a cuobjdump that lists this architecture
    (CUDA 13.1+ cuobjdump refuses sm_52/sm_70 with "CUDA architecture ... is deprecated")."""
    cuobjdump = _tool("cuobjdump")
    if cuobjdump is None:
        return None
    done = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True)
    found = _per_function(done.stdout, r"\n\s*Function : ", _SASS_OP)
    return found if done.returncode == 0 and found else None


def _nvcc_build(folder: Path, arch: str) -> Build:
    cubin = folder / f"{arch}.cubin"
    done = subprocess.run(
        [NVCC, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", str(cubin), str(SOURCE_PATH)],
        capture_output=True,
        text=True,
        check=True,
    )
    sass = _sass_listing(cubin)
    listing, instructions = ("SASS", sass) if sass else ("PTX", _nvcc_ptx(folder, arch))
    return Build(arch, "nvcc", *parse_ptxas(done.stderr + done.stdout), instructions, listing)


def _nvcc_ptx(folder: Path, arch: str) -> dict[str, collections.Counter]:
    ptx = folder / f"{arch}.ptx"
    subprocess.run([NVCC, f"-arch=compute_{arch[3:]}", "-ptx", "-o", str(ptx), str(SOURCE_PATH)], check=True)
    return _ptx_listing(ptx.read_text())


def nvrtc_compile(library: Path, source: str, options: list[str], output: str = "PTX") -> bytes:
    """``output`` ("PTX" or "CUBIN") of ``source`` from the NVRTC library ``library`` through ctypes (no GPU needed)."""
    lib = ctypes.CDLL(str(library))
    program = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), SOURCE.encode(), 0, None, None) == 0
    try:
        status = lib.nvrtcCompileProgram(
            program, len(options), (ctypes.c_char_p * len(options))(*(option.encode() for option in options))
        )
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(program, log)
        assert status == 0, f"NVRTC ({library.name}) failed with {options} (status {status}):\n{log.value.decode()}"
        getattr(lib, f"nvrtcGet{output}Size")(program, ctypes.byref(size))
        found = ctypes.create_string_buffer(size.value)
        assert getattr(lib, f"nvrtcGet{output}")(program, found) == 0
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))
    return found.raw[: size.value]


def nvrtc12_ptx(source: str, arch: str) -> str:
    """PTX for ``compute_<arch>`` from NVRTC 12 (libnvrtc.so.12 through ctypes; no GPU needed)."""
    options = [f"--gpu-architecture=compute_{arch[3:]}", "-std=c++17", f"-I{HEADERS12}"]
    return nvrtc_compile(NVRTC12, source, options).rstrip(b"\0").decode()


def _cuda12_build(folder: Path, arch: str) -> Build:
    ptx = nvrtc12_ptx(SOURCE_PATH.read_text(), arch)
    ptx_file, cubin = folder / f"{arch}.ptx", folder / f"{arch}.cubin"
    ptx_file.write_text(ptx)
    done = subprocess.run(
        [str(PTXAS12), f"-arch={arch}", "-v", "-o", str(cubin), str(ptx_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    sass = _sass_listing(cubin)
    listing, instructions = ("SASS", sass) if sass else ("PTX", _ptx_listing(ptx))
    return Build(arch, "NVRTC 12 + ptxas 12", *parse_ptxas(done.stderr + done.stdout), instructions, listing)


@pytest.fixture(scope="session")
def builds(tmp_path_factory) -> dict[str, Build]:
    """One compile per architecture: nvcc where it targets it, else CUDA 12.9 from the PyPI wheels."""
    folder = tmp_path_factory.mktemp("kernels")
    supported = _supported_archs()
    cuda12 = None not in (NVRTC12, PTXAS12, HEADERS12)
    out = {}
    for arch in ARCHS:
        if arch in supported:
            out[arch] = _nvcc_build(folder, arch)
        elif cuda12:
            out[arch] = _cuda12_build(folder, arch)
    return out


def _build(builds: dict[str, Build], arch: str) -> Build:
    if arch not in builds:
        nvcc = (
            "no nvcc found"
            if NVCC is None
            else "this nvcc cannot target it (CUDA 13 dropped Maxwell, Pascal and Volta)"
        )
        pytest.skip(f"{arch}: {nvcc}, and CUDA 12.9 from PyPI is missing: pip install {CUDA12_WHEELS}")
    return builds[arch]


@pytest.mark.parametrize("arch", ARCHS)
def test_every_kernel_compiles_without_spills(builds, arch):
    build = _build(builds, arch)
    assert sorted(build.registers) == sorted(KERNELS)
    for name in KERNELS:
        assert 1 <= build.registers[name] <= 255, name
        assert build.spills[name] == (0, 0), name
    # the dot tiles are two 16×16 arrays of the accumulator type (float for f32/f16, double for f64)
    assert build.shared_bytes["gpuprof_dot_f32"] == 2 * 16 * 16 * 4
    assert build.shared_bytes["gpuprof_dot_f16"] == 2 * 16 * 16 * 4
    assert build.shared_bytes["gpuprof_dot_f64"] == 2 * 16 * 16 * 8
    assert build.shared_bytes["gpuprof_add_f32"] == 0


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", OPS)
def test_kernels_contain_the_ops_instructions(builds, arch, op):
    build = _build(builds, arch)
    table = SASS if build.listing == "SASS" else PTX
    for suffix in SUFFIX.values():
        needed = expected(table, op, suffix, arch)
        found = build.instructions[f"gpuprof_{op}_{suffix}"]
        assert needed <= set(found), (
            f"{op}_{suffix} on {arch} ({build.compiler}, {build.listing}) lacks {needed - set(found)}"
        )


@pytest.mark.parametrize("arch", ARCHS)
def test_dot_inner_loop_is_unrolled_over_the_tile(builds, arch):
    build = _build(builds, arch)
    for name, instruction in UNROLLED[build.listing].items():
        assert build.instructions[name][instruction] == UNROLLED_COUNT[name], f"{name} on {arch}: {instruction}"


def test_sm52_has_no_half_arithmetic(builds):
    """No FP16 units below compute capability 5.3: cuda_fp16.h converts, so float16 add/mul run in float32."""
    build = _build(builds, "sm_52")
    half = {"SASS": {"HADD2", "HMUL2"}, "PTX": {"add.f16", "mul.f16"}}[build.listing]
    for op in HALF_ARITHMETIC_OPS:
        assert not half & set(build.instructions[f"gpuprof_{op}_f16"]), op


def test_ptx_has_the_ops_instructions(builds, tmp_path):
    """The PTX table (used where no cuobjdump lists the SASS) holds for nvcc's PTX too, on its oldest target."""
    arch = min((a for a, b in builds.items() if b.compiler == "nvcc"), key=lambda a: int(a[3:]), default=None)
    if arch is None:
        pytest.skip("no nvcc that supports any of the target architectures")
    instructions = _nvcc_ptx(tmp_path, arch)
    for op, per_type in PTX.items():
        for suffix in per_type:
            assert expected(PTX, op, suffix, arch) <= set(instructions[f"gpuprof_{op}_{suffix}"]), f"{op}_{suffix}"


def test_kernels_compile_with_nvrtc_and_the_engines_options():
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from gpuprof.workloads import cuda_kernels

    try:
        nvrtc.getVersion()
    except Exception as error:  # the NVRTC library itself is a separate wheel / toolkit part
        pytest.skip(f"NVRTC library not loadable ({type(error).__name__}): pip install nvidia-cuda-nvrtc")
    program = nvrtc.createProgram(cuda_kernels.source(), SOURCE, [], [])
    nvrtc.compileProgram(program, ["--gpu-architecture=compute_80", *cuda_kernels.nvrtc_options()])
    ptx = nvrtc.getPTX(program)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    entries = re.findall(r"\.visible \.entry (\w+)\(", ptx)
    assert sorted(entries) == sorted(KERNELS)
    assert {cuda_kernels.kernel_name(op, dtype) for op in OPS for dtype in SUFFIX} == set(KERNELS)


# The sm_90 SASS the cuda-kernels engine gets: NVRTC 13 (nvidia-cuda-nvrtc) with the engine's options,
# listed by cuobjdump; cuda_fp16.h from a CUDA toolkit, else from the CUDA 12.9 runtime wheel.
NVRTC13 = _wheel_file("*/lib/libnvrtc.so.13")
FP16_HEADERS = next(
    (str(p) for p in (Path("/usr/local/cuda/include"), HEADERS12) if p is not None and (p / "cuda_fp16.h").is_file()),
    None,
)
_SASS_LINE = re.compile(r"/\*([0-9a-f]{4})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)([^;]*);")
# ncu's FLOP formula per thread instruction: add and mul 1, fma 2, by the precision of the opcode.
FLOP_WEIGHT = {
    "FADD": ("FP32", 1),
    "FMUL": ("FP32", 1),
    "FFMA": ("FP32", 2),
    "HADD2": ("FP16", 1),
    "HMUL2": ("FP16", 1),
    "HFMA2": ("FP16", 2),
    "DADD": ("FP64", 1),
    "DMUL": ("FP64", 1),
    "DFMA": ("FP64", 2),
}


def _acceptance():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "gpu_acceptance", KERNELS_DIR.parent.parent / "benchmarks" / "gpu_acceptance.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gpu_acceptance", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sm90_sass(tmp_path_factory) -> dict[str, list[tuple[int, str, str]]]:
    """(address, opcode, operands) per kernel of the sm_90 cubin NVRTC 13 builds with the engine's options."""
    cuobjdump = _tool("cuobjdump")
    if NVRTC13 is None or cuobjdump is None or FP16_HEADERS is None:
        pytest.skip(
            "needs NVRTC 13, cuobjdump and cuda_fp16.h: pip install nvidia-cuda-nvrtc nvidia-cuda-cuobjdump "
            "nvidia-cuda-runtime-cu12"
        )
    cubin = tmp_path_factory.mktemp("sm90") / "gpuprof_ops.cubin"
    cubin.write_bytes(
        nvrtc_compile(
            NVRTC13, SOURCE_PATH.read_text(), ["--gpu-architecture=sm_90", "-std=c++17", f"-I{FP16_HEADERS}"], "CUBIN"
        )
    )
    done = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True)
    found = {}
    for chunk in re.split(r"\n\s*Function : ", done.stdout)[1:]:
        name = re.match(r"\s*(\w+)", chunk).group(1)
        found[name] = [(int(a, 16), op, rest) for a, _, op, rest in _SASS_LINE.findall(chunk)]
    return found


def flops_per_thread(listing: list[tuple[int, str, str]]) -> dict[str, tuple[int, int]]:
    """Per precision, (FLOPs a thread executes once, FLOPs per trip of the kernel's one loop), every
    predicate taken as true (shapes are multiples of 16, so no thread is out of bounds): the loop is
    the range from a backward branch's target to the branch."""
    loops = [
        (int(rest.split("0x")[1], 16), address)
        for address, op, rest in listing
        if op == "BRA" and "0x" in rest and int(rest.split("0x")[1], 16) < address
    ]
    assert len(loops) == 1, loops
    start, end = loops[0]
    counts: dict[str, list[int]] = {}
    for address, op, _ in listing:
        if op.split(".")[0] in FLOP_WEIGHT:
            precision, weight = FLOP_WEIGHT[op.split(".")[0]]
            counts.setdefault(precision, [0, 0])[start <= address <= end] += weight
    return {precision: (once, per_trip) for precision, (once, per_trip) in counts.items()}


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("op", ["add", "mul", "scalar", "dot"])
def test_sm90_sass_work_and_idiom_counts_match_what_the_acceptance_run_expects(sm90_sass, op, dtype):
    """The precision that does the op's work counts exactly the analytic FLOPs (dot: 16 FFMA per
    16-wide tile = 2k per output element; elementwise: 1 per element per grid-stride trip); every
    other precision's FLOPs are the compiler's idioms the acceptance run reports beside it
    (HFMA2.MMA zeroing a register, HADD2.F32 converting half to float), predicted here from the SASS."""
    acceptance = _acceptance()
    counts = flops_per_thread(sm90_sass[f"gpuprof_{op}_{SUFFIX[dtype]}"])
    work = acceptance.work_precision(op, dtype)
    assert counts.pop(work) == ((0, 32) if op == "dot" else (0, 1))
    idioms = {precision: (once, per_tile) for precision, once, per_tile, _ in acceptance.IDIOMS.get((op, dtype), ())}
    assert counts == idioms
    if idioms:
        [(_, flops, reason)] = acceptance.idiom_flops(op, dtype, "1024x1024x1024")
        assert (2 * 1024**3 + flops) / (2 * 1024**3) == pytest.approx(
            1.0635 if dtype == "float16" else 1 + 2 / 2048, abs=1e-4
        )
        assert "HFMA2.MMA" in reason and ("HADD2.F32" in reason) == (dtype == "float16")
