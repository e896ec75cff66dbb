"""One name per quantity (gpuprof.model.quantities): ``run --format json`` tags each quantity with its key,
and ``show``, ``compare``, ``diff`` (all ``--format json``) and the library name the same quantity the
way the vocabulary says, with the same value. Two tiny CPU runs of ``add``, measured once per module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import gpuprof
from gpuprof.cli import main
from gpuprof.model.quantities import BY_KEY, DIFF_EFFICIENCY, EFFICIENCY, column

# The keys of a CPU run without counters, in the order run reports them (efficiencies by ceiling).
FIXED = (
    "time",
    "time_min",
    "time_spread",
    "flops",
    "flop_rate",
    "flop_rate_mflops",
    "bytes",
    "bandwidth",
    "intensity",
    "clock",
)
# What diff calls the run's quantities: the same keys (efficiencies by kind: DIFF_EFFICIENCY).
DIFF_KEYS = ("time", "flops", "flop_rate", "bytes", "bandwidth", "intensity")
ARGS = ["--op", "add", "--size", "64KB", "--repeat", "3", "--warmup", "1", "--no-counters"]


def _json(*args: str) -> object:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    text = result.stdout
    return json.loads(text[text.index("[") if text.lstrip().startswith("[") else text.index("{") :])


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    store = tmp_path_factory.mktemp("names") / "s.sqlite"
    reports = [_json("run", *ARGS, "--format", "json", "--store", str(store)) for _ in range(2)]
    return store, reports


def _by_key(report: dict) -> dict[str, dict]:
    return {q["key"]: q for q in report["quantities"]}


def test_run_json_tags_every_quantity_with_its_key(measured) -> None:
    _, (report, _) = measured
    keys = [q["key"] for q in report["quantities"]]
    assert len(keys) == len(set(keys)), keys
    assert [k for k in keys if k in FIXED] == list(FIXED)
    for q in report["quantities"]:
        if q["key"] in BY_KEY:
            assert (q["quantity"], q["unit"]) == (BY_KEY[q["key"]].label, BY_KEY[q["key"]].unit)
        else:  # an efficiency or a ceiling, named by its ceiling set
            assert q["key"].startswith((EFFICIENCY, "peak_")), q


def test_show_compare_and_the_library_use_the_vocabulary_columns(measured) -> None:
    store, reports = measured
    report = reports[0]
    quantities = _by_key(report)
    (shown,) = [
        row for row in _json("show", "--store", str(store), "--format", "json") if row["run"] == report["run"][:8]
    ]
    (library,) = [row for row in gpuprof.results(store).to_dict("records") if row["run"] == report["run"][:8]]
    (compared,) = _json("compare", "--store", str(store), "--format", "json")  # the latest of equal runs
    latest = _by_key(next(r for r in reports if r["run"].startswith(compared["run"])))
    columns = {key: column(key) for key in quantities if column(key) is not None}
    assert {"time", "flop_rate", "bandwidth", "intensity"} <= set(columns)
    assert any(key.startswith(EFFICIENCY) for key in columns)
    for key, where in columns.items():
        value = quantities[key]["value"]
        if value is None:  # not known for this run (a roofline without a bandwidth ceiling): empty everywhere
            assert shown[where.name] is None and library[where.name] in (
                None,
                pytest.approx(float("nan"), nan_ok=True),
            ), key
            continue
        assert shown[where.name] == pytest.approx(value / where.per, rel=1e-12), key
        assert library[where.name] == pytest.approx(value / where.per, rel=1e-12), key
    for key in ("flop_rate", "bandwidth"):  # the study's table names them as show does
        assert compared[column(key).name] == pytest.approx(latest[key]["value"] / column(key).per, rel=1e-12)


def test_diff_names_the_run_quantities_by_their_keys(measured) -> None:
    store, (a, b) = measured
    rows = _json("diff", a["run"][:8], b["run"][:8], "--store", str(store), "--format", "json")
    compared = {row["metric"]: row for row in rows}
    for side, report in (("A", a), ("B", b)):
        quantities = _by_key(report)
        for key in DIFF_KEYS:
            assert compared[key]["A" if side == "A" else "B"] == pytest.approx(quantities[key]["value"], rel=1e-12)
            assert compared[key]["unit"] == BY_KEY[key].unit
        for against, name in DIFF_EFFICIENCY.items():  # the first ceiling set's efficiency of each kind
            first = next((q for k, q in quantities.items() if _against(k) == against and q["value"] is not None), None)
            if first is not None:
                assert compared[name][side] == pytest.approx(first["value"], rel=1e-12), name
    assert compared["flop_efficiency"]["A"] == pytest.approx(_by_key(a)["eff_theoretical_run_clock"]["value"])


def _against(key: str) -> str | None:
    """What an efficiency key divides by ('eff_theoretical_run_clock' -> 'run_clock'); None for other keys."""
    if not key.startswith(EFFICIENCY):
        return None
    return "roofline" if key == f"{EFFICIENCY}roofline" else key.removeprefix(EFFICIENCY).partition("_")[2]
