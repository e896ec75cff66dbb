"""Running a STONNE binary the user built: found and probed like ncu, one GEMM per call.

STONNE has no clock and no GPU: it simulates an accelerator cycle by cycle and writes, into its
working folder, a statistics JSON and a ``.counters`` file per layer (read by
:mod:`gpuprof.readers.stonne`). Its command line is ``stonne -DenseGEMM -M=.. -N=.. -K=.. -num_ms=..
-dn_bw=.. -rn_bw=.. -T_K=.. -T_M=.. -T_N=..`` (MAERI), the same with a mesh and ``-mem_ctrl=TPU_OS_DENSE``
(TPU-like), or ``-SparseGEMM ... -MK_sparsity=..`` (SIGMA). Tiles are chosen to fit the multipliers:
on MAERI a tile of T_K inputs folded over several passes needs one more multiplier per virtual neuron,
so (T_K + 1) × T_M × T_N must fit (the study's sweep failed exactly where it did not).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpuprof.errors import InputError, ProfilerError
from gpuprof.model import Run
from gpuprof.readers import stonne as reader

ENV = "GPUPROF_STONNE"
SIMULATION = "simulation"  # a Run's kind: gpuprof ran a simulator (no timed repeats, unlike "run")
PROBE_TIMEOUT_S = 20


@dataclass(frozen=True)
class Gemm:
    """C[M×N] = A[M×K] · B[K×N] on one simulated accelerator."""

    m: int
    n: int
    k: int
    arch: str = "maeri"
    multipliers: int = 256
    dn_bw: int = 64
    rn_bw: int = 64
    sparsity: int = 0  # percent of A's (MK's) values that are zero; SIGMA only
    given_tiles: dict[str, int] | None = None  # T_K, T_M, T_N the user chose; else chosen to fit


def locate(given: str | None) -> str:
    """The STONNE executable: ``--stonne PATH``, else $GPUPROF_STONNE, else ``stonne`` on PATH."""
    text = given or os.environ.get(ENV) or shutil.which("stonne")
    if not text:
        raise ProfilerError(
            "no STONNE binary: none given, $GPUPROF_STONNE unset and no 'stonne' on PATH",
            "build STONNE (docs/simulators.md) and give --stonne PATH/TO/stonne",
        )
    path = Path(text)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ProfilerError(f"{path}: not an executable file", "give the stonne binary STONNE's make built")
    return str(path)


def probe(path: str) -> None:
    """``stonne -h`` prints ``Usage: ./stonne [-h | -CONV | -FC | -DenseGEMM ...``: anything else is not STONNE."""
    try:
        done = subprocess.run(
            [path, "-h"], check=False, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, errors="replace"
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ProfilerError(
            f"{path} is not STONNE: '{path} -h' failed ({error})", "give the stonne binary STONNE's make built"
        ) from None
    if "-DenseGEMM" not in done.stdout or "Usage" not in done.stdout:
        raise ProfilerError(
            f"{path} is not STONNE: its -h prints no STONNE usage line",
            "give the stonne binary STONNE's make built (stonne/stonne after make all)",
        )


def _largest_divisor(n: int, limit: int) -> int:
    return max((d for d in range(1, min(n, limit) + 1) if n % d == 0), default=1)


def tiles(gemm: Gemm) -> dict[str, int]:
    """T_K, T_M, T_N that fit the multipliers: the most of K first (fewest folds), then M, then N."""
    if gemm.given_tiles:
        return dict(gemm.given_tiles)
    if gemm.arch == "tpu":
        side = _mesh_side(gemm.multipliers)
        return {"T_M": _largest_divisor(gemm.m, side), "T_N": _largest_divisor(gemm.n, side), "T_K": 1}
    t_k = _largest_divisor(gemm.k, gemm.multipliers)
    if t_k < gemm.k:  # folding: one extra multiplier per virtual neuron
        t_k = _largest_divisor(gemm.k, gemm.multipliers - 1)
    width = t_k + (1 if t_k < gemm.k else 0)
    t_m = _largest_divisor(gemm.m, gemm.multipliers // width)
    t_n = _largest_divisor(gemm.n, gemm.multipliers // (width * t_m))
    return {"T_K": t_k, "T_M": t_m, "T_N": t_n}


def _check_fits(gemm: Gemm, chosen: dict[str, int]) -> None:
    """Given MAERI tiles must divide their dimensions and, folded, fit the multipliers."""
    for tile, size in (("T_K", gemm.k), ("T_M", gemm.m), ("T_N", gemm.n)):
        if size % chosen[tile]:
            raise InputError(
                f"{tile}={chosen[tile]} does not divide {tile[-1]}={size}",
                "give tiles that divide the GEMM's dimensions, or leave --tiles out",
            )
    needed = (chosen["T_K"] + (chosen["T_K"] < gemm.k)) * chosen["T_M"] * chosen["T_N"]
    if needed > gemm.multipliers:
        raise InputError(
            f"the tiles need {needed} multipliers ((T_K + 1 when folding) × T_M × T_N), more than {gemm.multipliers}",
            "give smaller tiles, or leave --tiles out",
        )


def _mesh_side(multipliers: int) -> int:
    side = round(multipliers**0.5)
    if side * side != multipliers:
        raise InputError(
            f"a TPU-like mesh needs a square number of multipliers, not {multipliers}", "give --num-ms 64, 256 or 1024"
        )
    return side


def argv(binary: str, gemm: Gemm) -> list[str]:
    """STONNE's command line for ``gemm``, as its README writes it."""
    common = [f"-M={gemm.m}", f"-N={gemm.n}", f"-K={gemm.k}"]
    bandwidth = [f"-dn_bw={gemm.dn_bw}", f"-rn_bw={gemm.rn_bw}"]
    if gemm.arch == "sigma":
        return [
            binary,
            "-SparseGEMM",
            *common,
            f"-num_ms={gemm.multipliers}",
            *bandwidth,
            f"-MK_sparsity={gemm.sparsity}",
            "-KN_sparsity=0",
            "-dataflow=MK_STA_KN_STR",
        ]
    if gemm.sparsity:
        raise InputError(f"--sparsity is for SIGMA, not {gemm.arch}", "use --device stonne:sigma for a sparse GEMM")
    chosen = tiles(gemm)
    if gemm.given_tiles and gemm.arch == "maeri":
        _check_fits(gemm, chosen)
    if gemm.arch == "tpu":
        side = _mesh_side(gemm.multipliers)
        return [
            binary,
            "-DenseGEMM",
            *common,
            f"-ms_rows={side}",
            f"-ms_cols={side}",
            *bandwidth,
            f"-T_N={chosen['T_N']}",
            f"-T_M={chosen['T_M']}",
            "-T_K=1",
            "-accumulation_buffer=1",
            "-rn_type=TEMPORALRN",
            "-mn_type=OS_MESH",
            "-mem_ctrl=TPU_OS_DENSE",
        ]
    return [
        binary,
        "-DenseGEMM",
        *common,
        f"-num_ms={gemm.multipliers}",
        *bandwidth,
        f"-T_K={chosen['T_K']}",
        f"-T_M={chosen['T_M']}",
        f"-T_N={chosen['T_N']}",
    ]


def simulate(binary: str, gemm: Gemm, name: str = "gemm", timeout_s: float = 3600) -> Run:
    """Run STONNE on ``gemm`` in a fresh folder and read what it wrote (one launch, named ``name``)."""
    command = argv(binary, gemm)
    with tempfile.TemporaryDirectory(prefix="gpuprof-stonne-") as folder:
        try:
            done = subprocess.run(
                command, check=False, cwd=folder, capture_output=True, text=True, timeout=timeout_s, errors="replace"
            )
        except subprocess.TimeoutExpired:
            raise ProfilerError(f"STONNE ran past {timeout_s:g} s on {name}", "give a smaller GEMM") from None
        except OSError as error:
            raise ProfilerError(f"could not start {binary}: {error.strerror}", "give the stonne binary") from None
        if done.returncode != 0 or not reader.sniff_dir(Path(folder)):
            last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            raise ProfilerError(
                f"STONNE failed on {name} (exit {done.returncode}): {last[0][:200]}",
                f"run it by hand to see why: {' '.join(command)}",
            )
        run = reader.read(Path(folder))
    launches = run.launches
    for launch in launches:
        launch.kernel = name
        launch.attributes.update({"stonne.argv": " ".join(command[1:]), "arch": gemm.arch})
    return Run(
        kind=SIMULATION,
        format="stonne",
        source=" ".join(command),
        device=run.device,
        workload={
            "op": "dot",
            "M": gemm.m,
            "N": gemm.n,
            "K": gemm.k,
            "arch": gemm.arch,
            "multipliers": gemm.multipliers,
            "sparsity": gemm.sparsity,
        },
        launches=launches,
        notes=[*run.notes, tile_note(gemm)],
    )


def tile_note(gemm: Gemm) -> str:
    if gemm.arch == "sigma":
        return "SIGMA maps the sparse GEMM itself (no tiles given)"
    chosen = ", ".join(f"{key}={value}" for key, value in tiles(gemm).items())
    if gemm.given_tiles:
        return f"tiles as given: {chosen}"
    return f"tiles chosen to fit {gemm.multipliers} multipliers: {chosen}"
