"""The ``stonne:`` device and ``gpuprof simulate dlrm`` (issue 32): STONNE's argv as its README writes it,
tiles that fit the multipliers, the stand-in (tests/fakes/stonne) replaying the study's real recorded
sanity GEMM, DLRM planned as GEMMs (hand-computed shapes), and one line for each bad input."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof import simulate
from gpuprof.errors import InputError
from gpuprof.launch import stonne

FAKE = Path(__file__).parent / "fakes" / "stonne"
RUN = Path(__file__).parent / "fixtures" / "stonne" / "run_0001_TM2_TN1_TK64"
SANITY = "-DenseGEMM -M=20 -N=20 -K=256 -num_ms=256 -dn_bw=64 -rn_bw=64 -T_K=64 -T_M=2 -T_N=1"


def gpuprof(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuprof", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def replaying(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"GPUPROF_FAKE_STONNE_RUN": str(RUN), "GPUPROF_FAKE_RECORD": str(tmp_path / "calls.jsonl"), **extra}


def test_argv_is_the_readme_command_of_the_sanity_gemm() -> None:
    gemm = stonne.Gemm(m=20, n=20, k=256, given_tiles={"T_K": 64, "T_M": 2, "T_N": 1})
    assert stonne.argv("stonne", gemm) == ["stonne", *SANITY.split()]


def test_tiles_fit_the_multipliers_as_the_studys_sweep_found() -> None:
    # folding needs T_K + 1 multipliers per virtual neuron: the sweep's T_M=2 T_N=2 T_K=64 (4 × 65 = 260)
    # failed on 256 multipliers, T_M=2 T_N=1 T_K=64 (130) ran
    assert stonne.tiles(stonne.Gemm(m=20, n=20, k=256)) == {"T_K": 256, "T_M": 1, "T_N": 1}
    assert stonne.tiles(stonne.Gemm(m=20, n=20, k=512)) == {"T_K": 128, "T_M": 1, "T_N": 1}  # 129 ≤ 256
    assert stonne.tiles(stonne.Gemm(m=20, n=20, k=32)) == {"T_K": 32, "T_M": 5, "T_N": 1}  # 32 × 5 = 160 ≤ 256
    for m, n, k, ms in ((20, 20, 256, 128), (7, 13, 1000, 64), (64, 1, 13, 256)):
        t = stonne.tiles(stonne.Gemm(m=m, n=n, k=k, multipliers=ms))
        assert (t["T_K"] + (t["T_K"] < k)) * t["T_M"] * t["T_N"] <= ms
        assert k % t["T_K"] == 0 and m % t["T_M"] == 0 and n % t["T_N"] == 0


def test_sigma_and_tpu_argv() -> None:
    sparse = stonne.argv("stonne", stonne.Gemm(m=20, n=20, k=256, arch="sigma", multipliers=128, sparsity=80))
    assert sparse[1:] == [
        "-SparseGEMM",
        "-M=20",
        "-N=20",
        "-K=256",
        "-num_ms=128",
        "-dn_bw=64",
        "-rn_bw=64",
        "-MK_sparsity=80",
        "-KN_sparsity=0",
        "-dataflow=MK_STA_KN_STR",
    ]
    tpu = stonne.argv("stonne", stonne.Gemm(m=4, n=4, k=16, arch="tpu", multipliers=16, dn_bw=8, rn_bw=16))
    assert tpu[1:] == [
        "-DenseGEMM",
        "-M=4",
        "-N=4",
        "-K=16",
        "-ms_rows=4",
        "-ms_cols=4",
        "-dn_bw=8",
        "-rn_bw=16",
        "-T_N=4",
        "-T_M=4",
        "-T_K=1",
        "-accumulation_buffer=1",
        "-rn_type=TEMPORALRN",
        "-mn_type=OS_MESH",
        "-mem_ctrl=TPU_OS_DENSE",
    ]
    with pytest.raises(InputError, match="SIGMA"):
        stonne.argv("stonne", stonne.Gemm(m=4, n=4, k=16, sparsity=50))


@pytest.mark.slow  # runs through the stand-in simulator in a child: 3-7 s
def test_run_on_the_stand_in_reads_6200_cycles_and_6_45_percent(tmp_path: Path) -> None:
    done = gpuprof(
        "run",
        "--op",
        "dot",
        "--shape",
        "20x256x20",
        "--device",
        "stonne:maeri",
        "--stonne",
        str(FAKE),
        "--tiles",
        "T_K=64,T_M=2,T_N=1",
        "--store",
        str(tmp_path / "s.db"),
        "--format",
        "csv",
        env=replaying(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    row = next(csv.DictReader(done.stdout.splitlines()))
    assert float(row["cycles"]) == 6200 and float(row["MACs"]) == 102_400
    assert round(float(row["utilisation (%)"]), 2) == 6.45
    assert "tiles as given: T_K=64, T_M=2, T_N=1" in done.stderr
    calls = [json.loads(line)["argv"][1:] for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert calls == [["-h"], SANITY.split()]  # probed, then run exactly as STONNE's README writes it
    assert not list(Path.cwd().glob("output_stats_layer_*"))  # STONNE wrote into a temporary folder
    shown = gpuprof("show", "--store", str(tmp_path / "s.db"))  # a simulation has no timed repeats to summarise
    assert shown.returncode == 0 and shown.stdout.splitlines()[2].split()[1] == "simulation", shown.stdout


@pytest.mark.slow  # runs through the stand-in simulator in a child: 2-4 s
def test_chosen_tiles_are_said_and_a_failed_simulation_is_one_line(tmp_path: Path) -> None:
    done = gpuprof(
        "run",
        "--op",
        "dot",
        "--shape",
        "20x256x20",
        "--device",
        "stonne:maeri",
        "--stonne",
        str(FAKE),
        "--store",
        str(tmp_path / "s.db"),
        env=replaying(tmp_path),
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "STONNE failed on dot 20x256x20" in done.stderr and "-T_K=256 -T_M=1 -T_N=1" in done.stderr


@pytest.mark.slow  # runs through a foreign binary in a child: 1-3 s
def test_a_binary_that_is_not_stonne_is_one_line(tmp_path: Path) -> None:
    done = gpuprof(
        "run",
        "--op",
        "dot",
        "--shape",
        "20x256x20",
        "--device",
        "stonne:maeri",
        "--stonne",
        sys.executable,
        "--store",
        str(tmp_path / "s.db"),
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{sys.executable} is not STONNE" in done.stderr


def test_other_ops_are_not_simulated_by_stonne(tmp_path: Path) -> None:
    done = gpuprof(
        "run",
        "--op",
        "add",
        "--shape",
        "64x64",
        "--device",
        "stonne:maeri",
        "--stonne",
        str(FAKE),
        "--store",
        str(tmp_path / "s.db"),
        env=replaying(tmp_path),
    )
    assert done.returncode != 0 and "--op add is not simulated by STONNE" in done.stderr
    assert "Traceback" not in done.stderr


def test_interaction_width_of_four_tables_and_a_64_32_bottom_mlp_is_42() -> None:
    assert simulate.interaction_width(4, 32) == 42  # 32 + C(5, 2) = 32 + 10
    assert simulate.interaction_width(26, 16) == 16 + 27 * 26 // 2  # DLRM's Criteo Kaggle config: 367


def test_dlrm_plan_by_hand() -> None:
    dense, sparse = stonne.Gemm(1, 1, 1), stonne.Gemm(1, 1, 1, arch="sigma", multipliers=128)
    layers = simulate.plan_dlrm("1000-1000-500-2000", 32, "64-32", "16-1", 10, 8, dense, sparse)
    shapes = [
        (
            layer.component,
            layer.name,
            layer.gemm.arch,
            layer.gemm.m,
            layer.gemm.k,
            layer.gemm.n,
            layer.gemm.sparsity,
            layer.count,
        )
        for layer in layers
    ]
    assert shapes == [
        ("bottom MLP", "bot_fc0", "maeri", 32, 64, 8, 0, 1),  # Linear(64 → 32) on a batch of 8
        ("EmbeddingBags", "emb0", "sigma", 8, 1000, 32, 99, 1),  # 10 of 1000 rows per lookup: 99 % zeros
        ("EmbeddingBags", "emb1", "sigma", 8, 1000, 32, 99, 1),
        ("EmbeddingBags", "emb2", "sigma", 8, 500, 32, 98, 1),
        ("EmbeddingBags", "emb3", "sigma", 8, 2000, 32, 99, 1),  # 99.5 % floored: at least 10 nonzeros
        ("interaction", "interaction", "maeri", 5, 32, 5, 0, 8),  # (1 + 4) × 32 × (1 + 4) per sample
        ("top MLP", "top_fc0", "maeri", 16, 42, 8, 0, 1),  # 42 = 32 + C(5, 2)
        ("top MLP", "top_fc1", "maeri", 1, 16, 8, 0, 1),
    ]
    assert all(layer.gemm.multipliers == 128 for layer in layers if layer.gemm.arch == "sigma")
    with pytest.raises(InputError, match="sparse-feature-size is 16"):
        simulate.plan_dlrm("1000", 16, "64-32", "1", 10, 8, dense, sparse)


@pytest.mark.slow  # a whole model through the stand-in simulator: 3-8 s
def test_simulate_dlrm_prints_the_component_table_on_the_stand_in(tmp_path: Path) -> None:
    """Plumbing only: the stand-in replays the one recorded run for every layer (GPUPROF_FAKE_STONNE_ANY), so
    every layer reads 6,200 cycles, 108,720 reads and 1,600 writes: the sums and shares are checked, not DLRM."""
    done = gpuprof(
        "simulate",
        "dlrm",
        "--arch-embedding-size",
        "1000-1000-1000-1000",
        "--arch-sparse-feature-size",
        "32",
        "--arch-mlp-bot",
        "64-32",
        "--arch-mlp-top",
        "16-1",
        "--batch",
        "2",
        "--stonne",
        str(FAKE),
        "--store",
        str(tmp_path / "s.db"),
        "--format",
        "csv",
        env=replaying(tmp_path, GPUPROF_FAKE_STONNE_ANY="1"),
    )
    assert done.returncode == 0, done.stderr
    rows = {row["component"]: row for row in csv.DictReader(done.stdout.splitlines())}
    assert list(rows) == ["bottom MLP", "EmbeddingBags", "interaction", "top MLP"]
    runs = {"bottom MLP": 1, "EmbeddingBags": 4, "interaction": 2, "top MLP": 2}  # interaction: once per sample
    for component, count in runs.items():
        assert float(rows[component]["cycles"]) == 6200 * count
        assert float(rows[component]["reads"]) == 108_720 * count and float(rows[component]["writes"]) == 1600 * count
        assert float(rows[component]["share of cycles (%)"]) == pytest.approx(100 * count / 9)
    sparse = [
        json.loads(line)["argv"]
        for line in (tmp_path / "calls.jsonl").read_text().splitlines()
        if "-SparseGEMM" in line
    ]
    assert len(sparse) == 4 and all("-num_ms=128" in argv and "-MK_sparsity=99" in argv for argv in sparse)


def test_simulate_dlrm_plan_needs_no_stonne() -> None:
    done = gpuprof(
        "simulate",
        "dlrm",
        "--arch-embedding-size",
        "1000-1000-1000-1000",
        "--arch-sparse-feature-size",
        "32",
        "--arch-mlp-bot",
        "64-32",
        "--arch-mlp-top",
        "16-1",
        "--batch",
        "4",
        "--plan",
        "--format",
        "csv",
    )
    assert done.returncode == 0, done.stderr
    top = [row for row in csv.DictReader(done.stdout.splitlines()) if row["layer"] == "top_fc0"]
    assert top[0]["K"] == "42" and top[0]["M"] == "16" and top[0]["N"] == "4"


@pytest.mark.slow  # runs through the stand-in simulator in a child: 1-3 s
def test_given_tiles_that_do_not_fit_are_one_line(tmp_path: Path) -> None:
    # the study's failed sweep point: T_M=2 T_N=2 T_K=64 needs 4 × 65 = 260 multipliers of 256
    with pytest.raises(InputError, match="need 260 multipliers"):
        stonne.argv("stonne", stonne.Gemm(m=20, n=20, k=256, given_tiles={"T_K": 64, "T_M": 2, "T_N": 2}))
    done = gpuprof(
        "run",
        "--op",
        "dot",
        "--shape",
        "20x256x20",
        "--device",
        "stonne:maeri",
        "--stonne",
        str(FAKE),
        "--tiles",
        "T_K=48,T_M=2,T_N=1",
        "--store",
        str(tmp_path / "s.db"),
        env=replaying(tmp_path),
    )
    assert done.returncode != 0 and "T_K=48 does not divide K=256" in done.stderr and "Traceback" not in done.stderr
