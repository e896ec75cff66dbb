"""The self-contained HTML report: escaping, caps with a message, and a real browser rendering it."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.compare import comparison
from gpuprof.compare.html_report import Limits, build
from gpuprof.devices.peaks import Peaks
from gpuprof.model import MEASURED, TIMED, Launch, Metric, Run
from gpuprof.store import open_store

HOSTILE = "void f<float>(T*) <script>alert(1)</script>"
PEAKS = Peaks("Test CPU", {"float32": 100e9}, None, 2e9, "derived", "2 cores x 2 GHz x 25")


def cpu_run(op: str, requested: str, seconds: float) -> Run:
    shape = [500, 500, 500] if op == "dot" else [1000, 1000]
    return Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        device={"name": "Test CPU", "kind": "cpu", "peaks": [asdict(PEAKS)]},
        workload={
            "op": op,
            "dtype": "float32",
            "shape": shape,
            "size_bytes": 0,
            "requested": requested,
            "engine": "numpy",
        },
        environment={"host": "h"},
        launches=[Launch(f"numpy:{op}", 0, metrics=[Metric("wall_time", seconds, "second", "kernel_duration", TIMED)])],
    )


def hostile_import() -> Run:
    metrics = [
        Metric("gpu__time_duration.sum", 2e-3, "second", "kernel_duration", MEASURED),
        Metric("flop_count_sp", 4e9, "FLOP", "flop_count_sp", MEASURED),
    ]
    return Run(
        kind="import",
        format="ncu-csv",
        source="/data/<b>evil.csv",
        device={"name": "GPU <i>x</i>"},
        launches=[Launch(HOSTILE, 0, "GPU <i>x</i>", 1, {}, metrics)],
    )


def runs() -> list[Run]:
    return [cpu_run("add", "6MB", 2e-3), cpu_run("add", "12MB", 3e-3), cpu_run("dot", "5MB", 1e-2), hostile_import()]


@pytest.mark.slow  # draws every chart of the report with the study's devices: 10-30 s
def test_names_from_files_are_escaped():
    steps = []
    report = build(comparison(runs(), reference=True), "t", ["s.sqlite"], progress=lambda *step: steps.append(step))
    assert "<script" not in report.html and "<i>x" not in report.html and "<b>evil" not in report.html
    assert html_text(HOSTILE) in report.html
    assert "&lt;b&gt;evil.csv" in report.html
    assert report.html.count("data:image/png;base64,") >= 4  # efficiency, roofline-relative, bars, rooflines
    assert 'src="http' not in report.html and "<link" not in report.html  # self-contained
    # each chart is announced before it is drawn (a terminal shows them as a bar)
    assert steps[:3] == [
        ("chart of FLOP efficiency against size per op", 0, 3),
        ("chart of roofline-relative efficiency against size per op", 1, 3),
        ("chart of best MFLOP/s per device and op", 2, 3),
    ]
    rooflines = [step[0] for step in steps[3:]]
    assert "roofline of K40 (paper)" in rooflines and any(name.startswith("roofline of Test") for name in rooflines)


def html_text(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def test_imported_kernel_mflops_is_counted_flops_over_time():
    imported = comparison(runs()).imported
    assert imported.iloc[0]["MFLOP/s"] == pytest.approx(4e9 / 2e-3 / 1e6)


@pytest.mark.slow  # draws every chart of the report with the study's devices: 10-30 s
def test_caps_trim_rows_and_devices_and_say_which_option():
    report = build(comparison(runs(), reference=True), "t", ["s"], Limits(max_rows=2, max_series=2))
    assert any("--max-rows" in t for t in report.trimmed)
    assert any("showing 2 of 4" in t and "--max-series" in t for t in report.trimmed)
    assert "GTX980 (paper)" not in report.html.split("<h2>Charts</h2>")[0]


@pytest.mark.slow  # draws every chart of the report with the study's devices: 10-30 s
def test_cli_writes_the_report_and_reports_trimming_on_stderr(tmp_path):
    store = tmp_path / "s.sqlite"
    with open_store(store) as opened:
        for run in runs():
            opened.add(run)
    out = CliRunner().invoke(
        main,
        [
            "compare",
            "--store",
            str(store),
            "--reference",
            "paper",
            "--html",
            str(tmp_path / "r.html"),
            "--max-series",
            "3",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "trimmed: devices: showing 3 of 4" in out.stderr and "--max-series" in out.stderr
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BROWSER_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.slow  # a report drawn and rendered in headless Chromium: 10-30 s
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_chromium_renders_tables_and_images(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(build(comparison(runs(), reference=True), "gpuprof comparison", ["s"]).html)
    argv = [CHROMIUM, *BROWSER_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*argv, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert dom.count("<table>") >= 4 and dom.count("<img ") >= 4
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>alert" not in dom
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*argv, f"--screenshot={shot}", "--window-size=1400,2000", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (2000, 1400)
    assert pixels.std() > 0.05  # not a blank page


@pytest.mark.slow  # draws every chart of the report with the study's devices: 5-15 s
def test_study_tables_group_each_devices_columns_under_its_name():
    page = build(comparison(runs(), reference=True), "t", ["s"]).html
    assert '<th colspan="4">GT710M (paper)</th>' in page  # MFLOP/s, Efic.%, roof.%, bound
    assert '<th colspan="2">Test</th>' in page  # "Test CPU" shortened; no bandwidth: no roofline columns
    assert '<th rowspan="2">size (MB)</th>' in page


@pytest.mark.slow  # draws the report's charts: 3-8 s
def test_imported_kernels_with_flops_bytes_and_time_get_a_roofline():
    from gpuprof.importing import read_file

    ncu = read_file(
        Path(__file__).parent / "fixtures" / "profiler-outputs" / "ncu_csv_details_a100_roofline_printfp.csv"
    )
    without = build(comparison(runs()), "t", ["s"]).html.count(">Roofline: ")
    with_import = build(comparison([*runs(), ncu]), "t", ["s"]).html
    assert with_import.count(">Roofline: ") == without + 1
    assert html_text("void gemm_v1<float>(float *, float *, float *, int, int, int)") in with_import
