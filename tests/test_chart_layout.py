"""Every chart kind gpuprof draws, rendered from real inputs through the commands users run, checked
the way a reader sees it: no two texts overlap, no text leaves the canvas, the tick labels of an
axis all differ, and no legend or text covers a data point.

Each figure is checked when it is saved (``Figure.savefig`` is wrapped), so the check sees exactly
what goes into the PNG, SVG or HTML report; the text extents are matplotlib's own, after a draw.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner
from extras import NCU_REPORT
from fixture_paths import A100, FIXTURES, K40C
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

import gpuprof
from gpuprof.cli import main
from gpuprof.store import open_store

RTX3080 = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
A100_SGEMM = FIXTURES / "ncu_csv_a100_nersc_roofline_metrics_with_duration_sgemm.csv"
A100_BERT = FIXTURES / "ncu_csv_a100_nersc_rule_columns_unnamed_ns_bert_EXCERPT.csv"
A100_TEXT = FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
TOPDOWN = FIXTURES.parent / "cpu-counters" / "perf-stat-topdown-per-core-metric-only-intel-6c12t.txt"
SLACK = 1.0  # pixels: extents that touch are not an overlap


def drawn_texts(fig: Figure) -> list[tuple[Text, Bbox]]:
    """Every text the renderer actually draws (visible, non-empty, not clipped away), with its extent."""
    drawn: list[tuple[Text, Bbox]] = []
    draw = Text.draw

    def record(self: Text, renderer: object) -> None:
        draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append((self, Text.get_window_extent(self, renderer)))  # the text, not an arrow

    with mock.patch.object(Text, "draw", record):
        fig.draw_without_rendering()
    return drawn


def _overlap(a: Bbox, b: Bbox) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK) and (min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK)


def _data_points(fig: Figure) -> Iterator[tuple[float, float]]:
    """Display positions of every marker drawn inside an axes (lines with markers, scatters)."""
    for ax in fig.axes:
        box = ax.bbox
        for line in ax.get_lines():
            if line.get_visible() and line.get_marker() not in (None, "None", "", " "):
                for x, y in ax.transData.transform(line.get_xydata()):
                    if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1:
                        yield x, y
        for collection in ax.collections:
            if collection.get_visible() and len(collection.get_offsets()):
                for x, y in collection.get_offset_transform().transform(collection.get_offsets()):
                    if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1:
                        yield x, y


def layout_problems(fig: Figure) -> list[str]:
    """What a reader would trip over in ``fig``, one line each; [] when it reads cleanly."""
    texts = drawn_texts(fig)
    canvas = fig.bbox
    problems = []
    for text, box in texts:
        if box.x0 < -SLACK or box.y0 < -SLACK or box.x1 > canvas.x1 + SLACK or box.y1 > canvas.y1 + SLACK:
            problems.append(
                f"{text.get_text()!r} leaves the canvas: x {box.x0:.0f}..{box.x1:.0f}, "
                f"y {box.y0:.0f}..{box.y1:.0f} of {canvas.x1:.0f} x {canvas.y1:.0f}"
            )
    for (a, box_a), (b, box_b) in itertools.combinations(texts, 2):
        if _overlap(box_a, box_b):
            problems.append(f"{a.get_text()!r} overlaps {b.get_text()!r}")
    drawn = {id(text) for text, _ in texts}
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t.get_text() for t in axis.get_ticklabels(which="both") if id(t) in drawn]
            repeated = sorted({label for label in labels if labels.count(label) > 1})
            if repeated:
                problems.append(f"{axis.axis_name}-axis tick labels repeat: {labels}")
    points = list(_data_points(fig))
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    for legend in legends:
        box = legend.get_window_extent()
        hidden = [p for p in points if box.x0 <= p[0] <= box.x1 and box.y0 <= p[1] <= box.y1]
        if hidden:
            problems.append(f"a legend covers {len(hidden)} data point(s)")
    legend_texts = {id(t) for legend in legends for t in [*legend.get_texts(), legend.get_title()]}
    for text, box in texts:
        covered = [p for p in points if box.x0 < p[0] < box.x1 and box.y0 < p[1] < box.y1]
        if covered and id(text) not in legend_texts:
            problems.append(f"{text.get_text()!r} covers {len(covered)} data point(s)")
    return problems


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The layout problems of every figure saved while the test runs, one list per figure."""
    found: list[list[str]] = []
    save = Figure.savefig

    def checking(self: Figure, *args: object, **kwargs: object) -> None:
        found.append(layout_problems(self))
        save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", checking)
    return found


def assert_readable(saved: list[list[str]], at_least: int) -> None:
    assert len(saved) >= at_least, f"only {len(saved)} figure(s) drawn"
    problems = [f"figure {i + 1}: {p}" for i, figure in enumerate(saved) for p in figure]
    assert problems == [], "\n".join(problems)


@pytest.fixture(scope="module")
def cpu_runs() -> list[gpuprof.model.Run]:
    """Runs gpuprof makes on this machine's CPU: the study's six ops at two sizes."""
    return [
        gpuprof.run(op, size, device="cpu", save=False, repeat=3, warmup=1, counters=False)
        for op in gpuprof.workloads.ops.OPS
        for size in ("1MB", "4MB")
    ]


def invoke(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output


def stored(path: Path, runs: list[gpuprof.model.Run] = (), files: list[Path] = (), *options: str) -> Path:
    with open_store(path) as store:
        for run in runs:
            store.add(run)
    if files:
        invoke("import", "--store", str(path), *options, *map(str, files))
    return path


V100_NERSC = sorted(FIXTURES.glob("ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.*.csv"))
# name: (files, import options, roofline options); each chart is drawn for every FLOP count it has
ROOFLINES = {
    "a100-ncu-csv": ([A100], [], ["--peaks", "a100-pcie-40gb"]),
    "a100-nersc-method": ([A100_SGEMM, A100_BERT, A100], [], ["--peaks", "a100-pcie-40gb"]),
    "v100-nersc-joined": (V100_NERSC, ["--join", "--gpu", "v100-sxm2"], []),
    "rtx3080-ncu-rep": ([RTX3080], [], []),
}


@pytest.mark.slow
@pytest.mark.parametrize("files, imports, options", ROOFLINES.values(), ids=ROOFLINES.keys())
def test_roofline_of_real_profiles_reads_cleanly(
    tmp_path: Path, saved: list[list[str]], files: list[Path], imports: list[str], options: list[str]
) -> None:
    store = stored(tmp_path / "s.sqlite", (), files, *imports)
    for precision in ("all", "fp32", "fp16"):
        result = CliRunner().invoke(
            main,
            ["roofline", "--store", str(store), "--out", str(tmp_path / precision), "--precision", precision, *options],
        )
        assert result.exit_code == 0 or "no stored run" in result.stderr, result.output
    assert_readable(saved, 4)  # PNG and SVG of two counts at least


@pytest.mark.slow  # measures CPU runs and reads the chart's layout back: 5-10 s
def test_roofline_of_cpu_runs_reads_cleanly(tmp_path: Path, saved: list[list[str]], cpu_runs) -> None:
    store = stored(tmp_path / "s.sqlite", cpu_runs)
    invoke("roofline", "--store", str(store), "--out", str(tmp_path / "out"))
    assert_readable(saved, 2)


@pytest.mark.slow
@NCU_REPORT
def test_html_report_charts_read_cleanly(tmp_path: Path, saved: list[list[str]], cpu_runs) -> None:
    store = stored(tmp_path / "s.sqlite", cpu_runs)
    invoke(
        "compare",
        "--store",
        str(store),
        "--reference",
        "paper",
        "--import",
        str(A100),
        "--import",
        str(RTX3080),
        "--import",
        str(K40C),
        "--html",
        str(tmp_path / "r.html"),
    )
    assert_readable(saved, 8)  # efficiency, roofline-relative, bars, five rooflines


@pytest.mark.slow  # draws a whole report and reads its layout back: 7-17 s
def test_html_report_of_this_machine_alone_reads_cleanly(tmp_path: Path, saved: list[list[str]], cpu_runs) -> None:
    store = stored(tmp_path / "s.sqlite", cpu_runs)
    invoke("compare", "--store", str(store), "--html", str(tmp_path / "r.html"))
    assert_readable(saved, 3)


@pytest.mark.slow  # draws stall charts of real profiles: 3-12 s each
@pytest.mark.parametrize(
    "profile", [K40C, pytest.param(RTX3080, marks=NCU_REPORT), A100_TEXT, TOPDOWN], ids=lambda p: p.name[:24]
)
def test_stall_charts_read_cleanly(tmp_path: Path, saved: list[list[str]], profile: Path) -> None:
    invoke("stalls", str(profile), "--plot", str(tmp_path / "stalls.png"))
    assert_readable(saved, 1)


def test_the_check_catches_overlaps_texts_off_the_canvas_and_repeated_ticks() -> None:
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.plot([1, 2], [1, 2], marker="o")
    ax.text(1, 1, "on the point", ha="center", va="center")
    ax.text(1.5, 1.5, "one label")
    ax.text(1.5, 1.5, "another label")
    fig.text(0.9, 0.5, "a title that runs off the right edge")
    ax.set_xticks([1, 2], ["3", "3"])
    problems = layout_problems(fig)
    assert "'one label' overlaps 'another label'" in problems
    assert any(p.startswith("'a title that runs off the right edge' leaves the canvas") for p in problems)
    assert "x-axis tick labels repeat: ['3', '3']" in problems
    assert "'on the point' covers 1 data point(s)" in problems
    clean = Figure(figsize=(4, 3))
    clean.add_subplot().plot([1, 2], [1, 2], marker="o")
    assert layout_problems(clean) == []


A100_ERROR_LINES = FIXTURES / "ncu_csv_details_a100_with_error_lines.csv"


@pytest.mark.slow  # draws rooflines until a label fits nowhere: 4-9 s
def test_a_label_that_fits_nowhere_becomes_a_numbered_note(
    tmp_path: Path, saved: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two real A100 ncu CSVs on one chart at 765 MHz: the L1 slope's label has no spot clear of the
    points and the DRAM and L2 labels, so a number marks the slope and the text is a note under the chart."""
    drawn: list[Figure] = []
    save = Figure.savefig

    def keep(self: Figure, *args: object, **kwargs: object) -> None:
        drawn.append(self)
        save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    store = stored(tmp_path / "s.sqlite", (), [A100, A100_ERROR_LINES])
    invoke("roofline", "--store", str(store), "--out", str(tmp_path / "r.png"), "--peaks", "a100-pcie-40gb")
    assert_readable(saved, 1)
    [fig] = drawn
    notes = next(t.get_text() for t in fig.axes[1].texts if t.get_text().startswith("Points:"))
    numbered = [line.split(": ", 1) for line in notes.splitlines() if line.split(":")[0].isdigit()]
    assert [text for _, text in numbered] == ["L1/shared 10.6 TB/s (derived)"]
    key = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any(t.startswith("2  randomInit<float> (2 launches) ×2: ") for t in key), key  # one from each file
    on_chart = [t.get_text() for t in fig.axes[0].texts]
    assert numbered[0][0] in on_chart and not any(t.startswith("L1/shared") for t in on_chart)
