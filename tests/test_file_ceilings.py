"""Issue 28 item 16: ceilings from the file itself when it carries them (Nsight Compute's roofline
section collects each FMA pipe's ``*.peak_sustained`` and DRAM's, beside the clocks it measured), else
the device table's; ``roofline --ceilings`` lists both with their sources. The file: the A100 text
excerpt (SOURCES.md), which names no GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import FIXTURES

from gpuprof.cli import main
from gpuprof.derive import counters, roofline
from gpuprof.importing import import_files, read_file

A100_TEXT = FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
SM_CLOCK, DRAM_CLOCK = 1.096418e9, 1.216574e9  # cycle/ns in the file
FP32_PEAK = 2 * 6912 * SM_CLOCK  # ffma peak_sustained 6912 inst/cycle
FP64_PEAK = 2 * 3456 * SM_CLOCK
DRAM_PEAK = 1280 * DRAM_CLOCK  # dram__bytes.sum.peak_sustained 1.28 Kbyte/cycle


def test_binding_from_the_files_own_ceilings_without_a_device() -> None:
    row = counters.frame(read_file(A100_TEXT)).iloc[0]
    assert row["peak_dram_bandwidth"] == pytest.approx(DRAM_PEAK, rel=1e-12)
    assert row["binding_ceiling"] == pytest.approx(FP32_PEAK, rel=1e-12)
    assert row["binding_name"].startswith("FP32 FMA 15.16 TFLOP/s from the file")
    assert row["binding_percent"] == pytest.approx(8.040823, rel=1e-6)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ceilings") / "s.db"
    import_files([A100_TEXT], path, gpu="a100-sxm4-40gb")
    return path


def test_ceiling_sources_list_both(store: Path) -> None:
    from gpuprof.store import open_store

    with open_store(store, read_only=True) as opened:
        runs = opened.runs()
    listed = roofline.ceiling_sources(runs).set_index("ceiling")
    assert listed.loc["FP32 FMA", "from the file"] == pytest.approx(FP32_PEAK, rel=1e-12)
    assert listed.loc["FP64 FMA", "from the file"] == pytest.approx(FP64_PEAK, rel=1e-12)
    assert listed.loc["DRAM", "from the file"] == pytest.approx(DRAM_PEAK, rel=1e-12)
    assert listed.loc["FP32 FMA", "from the device table"] == pytest.approx(19.49e12, rel=1e-3)  # at 1410 MHz boost
    assert listed.loc["DRAM", "from the device table"] == pytest.approx(1555e9, rel=1e-3)
    assert set(listed["used"]) == {"file"}
    assert "peak_sustained" in listed.loc["FP32 FMA", "file source"]
    assert listed.loc["DRAM", "table source"].startswith("published at 1215 MHz memory")


def test_cli_lists_the_ceilings_and_draws_nothing(store: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["roofline", "--store", str(store), "--ceilings"])
    assert result.exit_code == 0, result.output
    assert "FP32 FMA" in result.output and "dram__bytes.sum.peak_sustained" in result.output
    assert not any(tmp_path.iterdir())


def _charts(store: Path, tmp_path: Path, monkeypatch, *options: str) -> list:
    """The figures ``gpuprof roofline`` saves for ``store``."""
    from matplotlib.figure import Figure

    drawn, save = [], Figure.savefig

    def keep(self: Figure, *args: object, **kwargs: object) -> None:
        drawn.append(self)
        save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    result = CliRunner().invoke(main, ["roofline", "--store", str(store), "--out", str(tmp_path / "c.png"), *options])
    assert result.exit_code == 0, result.output
    return drawn


def _roofs(fig) -> tuple[list[float], list[float]]:
    """The compute roofs (horizontal lines) and memory slopes (y = bandwidth x AI) of the chart."""
    flat, slopes = [], []
    for line in fig.axes[0].get_lines():
        xs, ys = list(line.get_xdata()), list(line.get_ydata())
        if len(xs) == 2 and line.get_marker() in ("None", None, ""):
            (flat if ys[0] == ys[1] else slopes).append(ys[1] if ys[0] == ys[1] else ys[1] / xs[1])
    return flat, slopes


@pytest.mark.slow  # draws rooflines and reads them back: 3-6 s
def test_the_chart_draws_the_files_ceilings_as_the_table_uses_them(store: Path, tmp_path: Path, monkeypatch) -> None:
    [fig] = _charts(store, tmp_path, monkeypatch)
    flat, slopes = _roofs(fig)
    assert any(v == pytest.approx(FP32_PEAK, rel=1e-9) for v in flat), flat  # not the table's 19.5 T at this clock
    assert any(v == pytest.approx(FP32_PEAK / 2, rel=1e-9) for v in flat)  # the table's no-FMA roof, same clock
    assert slopes == [pytest.approx(DRAM_PEAK, rel=1e-9)]
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert "FP32 FMA (from the file): 15.2 TFLOP/s" in texts
    assert any("DRAM 1.56 TB/s (from the file)" in t for t in texts)
    notes = next(t for t in texts if t.startswith("Points:"))
    assert "FP32 FMA 15.2 TFLOP/s from the file (2 x sm__sass_thread_inst_executed_op_ffma" in notes.replace("\n", " ")


def test_a_file_naming_no_gpu_gets_its_own_roofs(tmp_path: Path, monkeypatch) -> None:
    unnamed = tmp_path / "u.db"
    import_files([A100_TEXT], unnamed)
    [fig] = _charts(unnamed, tmp_path, monkeypatch)
    flat, slopes = _roofs(fig)
    assert flat == [pytest.approx(FP32_PEAK, rel=1e-9)] and slopes == [pytest.approx(DRAM_PEAK, rel=1e-9)]
