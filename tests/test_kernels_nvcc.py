"""The hand-written kernels compile with this machine's nvcc for each target architecture, use a sane
number of registers, and contain the instructions each op must execute (SASS via cuobjdump; PTX
when cuobjdump is missing). Also: they compile through NVRTC with the options the cuda-kernels
engine passes at run time. Each architecture is compiled once per session (about a second).
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpuprof.workloads.cuda_kernels import KERNELS_DIR, SOURCE, SUFFIX

OPS = ("add", "mul", "scalar", "sigmoid", "tanh", "dot")
ARCHS = ("sm_52", "sm_70", "sm_75", "sm_80", "sm_90")
KERNELS = [f"gpuprof_{op}_{s}" for op in OPS for s in SUFFIX.values()]
SOURCE_PATH = KERNELS_DIR / SOURCE
_PTXAS_FUNCTION = re.compile(r"Function properties for (\w+)")
_PTXAS_USAGE = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_SASS_OP = re.compile(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_PTX_OP = re.compile(r"^\s*\{?\s*((?:add|sub|mul|fma|div|rcp|ex2|cvt)\.[\w.]+)", re.MULTILINE)

# What each kernel must execute. SASS opcodes are matched exactly (FFMA, not FFMA.SAT).
# float16 add/mul/scalar use __hadd/__hmul (HADD2/HMUL2); float16 transcendentals and the dot product's
# accumulation run in float32, so they show FP32 instructions. Without --use_fast_math expf is a
# MUFU.EX2 plus FFMA refinement and the IEEE division a MUFU.RCP plus FFMA; double exp is a DFMA
# polynomial, double division starts from MUFU.RCP64H.
SASS = {
    "add": {"f32": {"FADD"}, "f64": {"DADD"}, "f16": {"HADD2"}},
    "mul": {"f32": {"FMUL"}, "f64": {"DMUL"}, "f16": {"HMUL2"}},
    "scalar": {"f32": {"FMUL"}, "f64": {"DMUL"}, "f16": {"HMUL2"}},
    "dot": {"f32": {"FFMA"}, "f64": {"DFMA"}, "f16": {"FFMA"}},
    "sigmoid": {"f32": {"MUFU.EX2", "MUFU.RCP", "FFMA"}, "f64": {"DFMA", "MUFU.RCP64H"},
                "f16": {"MUFU.EX2", "MUFU.RCP"}},
    "tanh": {"f32": {"MUFU.EX2", "FFMA"}, "f64": {"DFMA", "MUFU.RCP64H"}, "f16": {"MUFU.EX2"}},
}
PTX = {
    "add": {"f32": {"add.f32"}, "f64": {"add.f64"}, "f16": {"add.f16"}},
    "mul": {"f32": {"mul.f32"}, "f64": {"mul.f64"}, "f16": {"mul.f16"}},
    "scalar": {"f32": {"mul.f32"}, "f64": {"mul.f64"}, "f16": {"mul.f16"}},
    "dot": {"f32": {"fma.rn.f32"}, "f64": {"fma.rn.f64"}, "f16": {"fma.rn.f32"}},
    "sigmoid": {"f32": {"ex2.approx.ftz.f32", "rcp.rn.f32"}, "f64": {"fma.rn.f64", "rcp.rn.f64"},
                "f16": {"ex2.approx.ftz.f32"}},
    "tanh": {"f32": {"ex2.approx.ftz.f32", "fma.rn.f32"}, "f64": {"fma.rn.f64"}, "f16": {"ex2.approx.ftz.f32"}},
}


def _tool(name: str) -> str | None:
    """A CUDA tool on PATH, in the CUDA toolkit, or from NVIDIA's pip wheels (nvidia-cuda-cuobjdump)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/local/cuda/bin")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    wheels = sorted(p for root in nvidia.__path__ for p in Path(root).glob(f"*/bin/{name}"))
    return str(wheels[-1]) if wheels else None


NVCC = _tool("nvcc")


@dataclass
class Build:
    arch: str
    registers: dict[str, int]
    shared_bytes: dict[str, int]
    spills: dict[str, tuple[int, int]]
    instructions: dict[str, collections.Counter]
    listing: str  # "SASS (cuobjdump)" or "PTX"


def _supported_archs() -> set[str]:
    done = subprocess.run([NVCC, "--list-gpu-code"], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def parse_ptxas(log: str) -> tuple[dict[str, int], dict[str, int], dict[str, tuple[int, int]]]:
    """Registers, static shared memory and spill bytes per kernel from ``-Xptxas -v`` output."""
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


@pytest.fixture(scope="session")
def builds(tmp_path_factory) -> dict[str, Build]:
    """One nvcc compile per supported architecture (registers from ptxas, instructions listed)."""
    if NVCC is None:
        pytest.skip("nvcc not found (PATH or /usr/local/cuda/bin): install a CUDA toolkit to compile the kernels")
    folder = tmp_path_factory.mktemp("kernels")
    supported = _supported_archs()
    cuobjdump = _tool("cuobjdump")
    out = {}
    for arch in ARCHS:
        if arch not in supported:
            continue
        cubin = folder / f"{arch}.cubin"
        done = subprocess.run([NVCC, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", str(cubin), str(SOURCE_PATH)],
                              capture_output=True, text=True, check=True)
        registers, shared, spills = parse_ptxas(done.stderr + done.stdout)
        if cuobjdump:
            sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
            listing, instructions = "SASS (cuobjdump)", _per_function(sass, r"\n\s*Function : ", _SASS_OP)
        else:
            listing, instructions = "PTX", _ptx_instructions(folder, arch)
        out[arch] = Build(arch, registers, shared, spills, instructions, listing)
    return out


def _ptx_instructions(folder: Path, arch: str) -> dict[str, collections.Counter]:
    ptx = folder / f"{arch}.ptx"
    subprocess.run([NVCC, f"-arch=compute_{arch[3:]}", "-ptx", "-o", str(ptx), str(SOURCE_PATH)], check=True)
    return _per_function(ptx.read_text(), r"\.visible \.entry ", _PTX_OP)


def _build(builds: dict[str, Build], arch: str) -> Build:
    if arch not in builds:
        pytest.skip(f"this nvcc cannot target {arch} (not in `nvcc --list-gpu-code`; CUDA 13 dropped "
                    "Maxwell, Pascal and Volta): compile with CUDA 12.x or older for it")
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
    expected = SASS if build.listing.startswith("SASS") else PTX
    for suffix, needed in expected[op].items():
        found = build.instructions[f"gpuprof_{op}_{suffix}"]
        assert needed <= set(found), f"{op}_{suffix} on {arch} ({build.listing}) lacks {needed - set(found)}"


@pytest.mark.parametrize("arch", ARCHS)
def test_dot_inner_loop_is_unrolled_over_the_tile(builds, arch):
    build = _build(builds, arch)
    if not build.listing.startswith("SASS"):
        pytest.skip("needs SASS: pip install nvidia-cuda-cuobjdump")
    assert build.instructions["gpuprof_dot_f32"]["FFMA"] == 16
    assert build.instructions["gpuprof_dot_f64"]["DFMA"] == 16
    assert build.instructions["gpuprof_add_f32"]["FADD"] == 1


def test_ptx_has_the_ops_instructions(builds, tmp_path):
    """The PTX table (used when cuobjdump is missing) holds too, checked here on the oldest target."""
    arch = min(builds, key=lambda a: int(a[3:]), default=None)
    if arch is None:
        pytest.skip("this nvcc supports none of the target architectures")
    instructions = _ptx_instructions(tmp_path, arch)
    for op, per_type in PTX.items():
        for suffix, needed in per_type.items():
            assert needed <= set(instructions[f"gpuprof_{op}_{suffix}"]), f"{op}_{suffix}"


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
