"""Scaling and EDP: the arithmetic on tables with known answers (the study's own S gives back its E),
per-phase entries from region instances (ranks side by side are not added), and ``gpuprof compare
--scaling`` over two real CPU profiles with the ResNet-34 study's published rows beside them."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.compare.scaling import published, reference_rows, scaling
from gpuprof.derive.scaling import ENTRY_COLUMNS, phase_entries, scaling_table
from gpuprof.errors import InputError
from gpuprof.model import TIMED, Launch, Metric, Run

ROOT = Path(__file__).resolve().parents[1]


def _entries(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame([dict(zip(ENTRY_COLUMNS, (*row, 1, ""))) for row in rows], columns=list(ENTRY_COLUMNS))


def test_speedup_efficiency_and_edp_on_a_table_with_known_answers() -> None:
    entries = _entries(
        [
            ("1gpu", 1, "train", 100.0, 30_000.0, 25_000.0),
            ("2gpu", 2, "train", 50.0, 40_000.0, 36_000.0),
            ("cpu", 1, "train", 1180.0, 600_000.0, 600_000.0),
        ]
    )
    table = scaling_table(entries, "1gpu").set_index("label")
    assert table.loc["2gpu", "S"] == pytest.approx(2.0) and table.loc["2gpu", "E (%)"] == pytest.approx(100.0)
    assert table.loc["2gpu", "EDP (norm.)"] == pytest.approx(50 * 40_000 / (100 * 30_000))  # 0.6667
    assert table.loc["2gpu", "EDP in use (norm.)"] == pytest.approx(50 * 36_000 / (100 * 25_000))  # 0.72
    assert table.loc["cpu", "S"] == pytest.approx(1 / 11.8)
    assert table.loc["cpu", "EDP (norm.)"] == pytest.approx(11.8 * 20)  # 11.8x the time, 20x the energy
    assert table.loc["1gpu", "EDP (norm.)"] == 1.0


def test_the_studys_numbers_give_back_its_columns() -> None:
    """Times and energies relative to one GPU, as the study's S and EDP imply them (T = 1/S, energy =
    EDP x S): the table must give back the published S, E and EDP, and E = S/x gives its 89.5 %."""
    rows = published()
    usable = rows[rows["phase"].eq("program") & rows["S"].notna()]
    entries = _entries([(r.setup, r.devices, "program", 1 / r.S, r.EDP_norm * r.S, None) for r in usable.itertuples()])
    table = scaling_table(entries, "1 GPU").set_index("label")
    for r in usable.itertuples():
        assert table.loc[r.setup, "S"] == pytest.approx(r.S)
        assert table.loc[r.setup, "EDP (norm.)"] == pytest.approx(r.EDP_norm)
    assert table.loc["2 GPUs", "E (%)"] == pytest.approx(89.5)  # 1.79 / 2, as published
    assert table.loc["1 GPU", "E (%)"] == pytest.approx(100.0)
    assert list(table["EDP (norm.)"].round(2)) == [86.65, 1.00, 0.56]  # the published column, in order
    # The energies the published S and EDP imply (derived, not published): 2 GPUs use one GPU's energy.
    assert table.loc["2 GPUs", "energy (J)"] == pytest.approx(0.56 * 1.79)
    assert table.loc["CPU", "energy (J)"] == pytest.approx(86.65 / 11.8)
    assert math.isnan(table.loc["2 GPUs", "EDP in use (norm.)"])  # no energy given: no number
    reference = reference_rows().set_index("label")
    assert (
        reference.loc["CPU (paper)", "EDP (norm.)"] == 86.65
        and reference.loc["1 GPU DDP (paper)", "EDP (norm.)"] == 1.02
    )
    assert math.isnan(reference.loc["CPU (paper)", "E (%)"])  # the study gives no E for its CPU run
    loop = reference_rows().query("phase == 'training loop'").iloc[0]
    assert loop["S"] == 1.97 and loop["E (%)"] == pytest.approx(98.5) and "E derived" in loop["basis"]


def test_a_missing_baseline_is_refused() -> None:
    with pytest.raises(InputError, match="--baseline 4gpu: no run with that label"):
        scaling_table(_entries([("1gpu", 1, "train", 1.0, None, None)]), "4gpu")


def _region(
    index: int, name: str, process: str, seconds: float, parent: str = "", energy: float | None = None
) -> Launch:
    metrics = [
        Metric("wall time", seconds, "second", None, TIMED),
        Metric("begin", float(index), "second", None, TIMED),
    ]
    if energy is not None:
        metrics += [
            Metric("energy (all devices)", energy, "joule", None, "derived"),
            Metric("energy (devices in use)", energy / 2, "joule", None, "derived"),
        ]
    return Launch(name, index, "", 1, {"kind": "region", "name": name, "parent": parent, "process": process}, metrics)


def test_phase_entries_sum_instances_per_process_and_keep_the_slowest_rank() -> None:
    launches = [
        Launch("cmd", 0, "", 1, {"phase": "process"}, [Metric("wall time", 9.0, "second", None, TIMED)]),
        _region(1, "epoch", "10", 4.0),
        _region(2, "train", "10", 3.0, "1", 30.0),
        _region(3, "epoch", "10", 4.0),
        _region(4, "train", "10", 3.5, "3", 35.0),
        _region(5, "epoch", "11", 4.2),
        _region(6, "train", "11", 3.4, "5", 34.0),
        _region(7, "epoch", "11", 4.2),
        _region(8, "train", "11", 3.4, "7", 34.0),
        _region(9, "step", "11", 0.1, "6", 1.0),
    ]
    run = Run(
        "profile",
        "timed",
        "x",
        launches=launches,
        environment={
            "label": "ddp2",
            "devices": 2,
            "wall_time": {"value": 9.0},
            "energy": {"all_j": 90.0, "in_use_j": 45.0},
        },
    )
    rows = {row["phase"]: row for row in phase_entries(run)}
    assert list(rows) == ["program", "epoch", "train"]  # step is deeper: not a default phase
    assert rows["program"]["time_s"] == 9.0 and rows["program"]["energy_j"] == 90.0
    assert rows["train"]["time_s"] == pytest.approx(6.8) and rows["train"]["energy_j"] == pytest.approx(68.0)  # rank 11
    assert rows["train"]["instances"] == 2 and rows["epoch"]["time_s"] == pytest.approx(8.4)
    assert rows["epoch"]["energy_j"] is None  # its instances were not metered
    assert [row["phase"] for row in phase_entries(run, ("step",))] == ["program", "step"]


SLEEPER = """
import sys, time, gpuprof
with gpuprof.region("train"):
    time.sleep(0.4 / int(sys.argv[1]))
with gpuprof.region("test"):
    time.sleep(0.05)
"""


def test_compare_scaling_over_two_cpu_profiles_with_the_studys_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    (tmp_path / "job.py").write_text(SLEEPER)
    store = str(tmp_path / "s.sqlite")
    for label, devices in (("one", "1"), ("two", "2")):
        result = CliRunner().invoke(
            main,
            [
                "profile",
                "--device",
                "cpu",
                "--torch-hooks",
                "none",
                "--label",
                label,
                "--devices",
                devices,
                "--store",
                store,
                "--",
                sys.executable,
                "job.py",
                devices,
            ],
        )
        assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        main, ["compare", "--scaling", "--baseline", "one", "--reference", "paper", "--store", store, "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    import io

    table = pd.read_csv(io.StringIO(result.stdout)).set_index(["phase", "label"])
    train = table.loc[("train", "two")]
    assert 1.5 < train["S"] < 2.1 and train["E (%)"] == pytest.approx(50 * train["S"])  # slept 0.4 s vs 0.2 s
    assert 0.7 < table.loc[("test", "two"), "S"] < 1.3
    assert table.loc[("program", "2 GPUs (paper)"), "EDP (norm.)"] == 0.56
    assert "no energy: the profiles were not metered" in result.stderr

    missing = CliRunner().invoke(main, ["compare", "--scaling", "--baseline", "four", "--store", store])
    assert missing.exit_code != 0 and "--baseline four: no run with that label (labels: one, two)" in missing.output


def test_efficiency_above_100_percent_is_flagged() -> None:
    def profile(label: str, devices: int, seconds: float) -> Run:
        return Run(
            "profile",
            "timed",
            label,
            launches=[Launch("cmd", 0, "", 1, {}, [])],
            environment={"label": label, "devices": devices, "wall_time": {"value": seconds}},
        )

    frame, notes = scaling([profile("one", 1, 10.0), profile("two", 2, 4.0)], "one")
    assert frame.set_index("label").loc["two", "E (%)"] == pytest.approx(125.0)
    assert any(n.startswith("E above 100 % (two program 125 %)") for n in notes)
