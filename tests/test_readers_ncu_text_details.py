"""Nsight Compute details page printed to the console (ncu without --csv), from the CC 8.9 SGEMM
log (tests/fixtures/profiler-outputs/SOURCES.md, "Nsight Compute text details page"). Expected
values were read from the fixture by eye."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuprof import readers
from gpuprof.readers import ncu_text

LOG = Path(__file__).parent / "fixtures" / "profiler-outputs" / "ncu_text_details_page_cc89_sgemm_default_sections.log"


def test_details_page_is_ncu_text_not_ncu_csv() -> None:
    # the log has ==PROF== lines and no CSV, which ncu-csv would take for a failed run
    assert readers.detect(LOG) is ncu_text


def test_one_launch_with_its_launch_line() -> None:
    run = readers.read(LOG)
    (launch,) = run.launches
    assert launch.kernel == "ampere_sgemm_32x128_nn"
    assert launch.invocations == 1
    assert {k: launch.attributes[k] for k in ("grid", "block", "context", "stream", "device", "cc", "pid")} == {
        "grid": "13, 2, 2",
        "block": "256, 1, 1",
        "context": "1",
        "stream": "7",
        "device": "0",
        "cc": "8.9",
        "pid": "75876",
    }
    assert launch.attributes["sections"] == "GPU Speed Of Light Throughput; Launch Statistics; Occupancy"
    assert len(launch.metrics) == 10 + 10 + 8
    assert run.device == {"index": "0"}


def test_units_become_base_units() -> None:
    launch = readers.read(LOG).launches[0]
    duration = launch.metric("kernel_duration")  # Duration  usecond  24.54
    assert (duration.name, duration.value, duration.unit) == ("Duration", pytest.approx(24.54e-6), "second")
    assert launch.metric("sm_clock").value == pytest.approx(1.58e9)  # cycle/nsecond 1.58
    assert launch.metric("dram_clock").value == pytest.approx(6.86e9)  # cycle/nsecond 6.86
    shared = launch.metric("Shared Memory Configuration Size")  # Kbyte 102.40
    assert (shared.value, shared.unit) == (pytest.approx(102400), "byte")
    driver = launch.metric("Driver Shared Memory Per Block")  # Kbyte/block 1.02
    assert (driver.value, driver.unit) == (pytest.approx(1020), "byte/block")
    assert launch.value("Elapsed Cycles") == 38921
    assert launch.value("SM Active Cycles") == 29279.62
    assert launch.value("Achieved Occupancy") == 33.23


def test_empty_units_and_text_values() -> None:
    launch = readers.read(LOG).launches[0]
    block = launch.metric("Block Size")
    assert (block.value, block.unit) == (256, "")
    assert launch.value("Waves Per SM") == 0.54
    assert launch.value("Function Cache Configuration") == "CachePreferNone"


def test_rule_advice_is_kept_per_launch() -> None:
    rules = readers.read(LOG).launches[0].attributes["rules"].split("\n")
    assert len(rules) == 2
    assert rules[0].startswith("OPT: This kernel grid is too small to fill the available resources")
    assert rules[0].endswith("waves across all SMs. Look at Launch Statistics for more details.")
    assert rules[1].startswith("OPT: Estimated Speedup: 50.16%")


def _spanish(text: str) -> str:
    """The same page as ncu prints it under es_ES: '.' groups thousands, ',' is the decimal mark.
    Only the value column (the last field of a table row) is rewritten."""

    def value(match: re.Match[str]) -> str:
        whole, _, fraction = match.group(2).partition(".")
        grouped = f"{int(whole):,}".replace(",", ".")
        return match.group(1) + grouped + ("," + fraction if fraction else "")

    return re.sub(r"(?m)^(    \S.*?\s)(\d+(?:\.\d+)?)$", value, text)


def test_spanish_locale_numbers(tmp_path: Path) -> None:
    """Derived from the real log (no public es_ES sample was found): every number must read the
    same once re-printed as ncu does under a Spanish locale."""
    text = LOG.read_text()
    spanish = _spanish(text)
    assert "cycle        38.921" in spanish and "cycle     29.279,62" in spanish
    assert "Kbyte          102,40" in spanish and "thread           13.312" in spanish
    path = tmp_path / "es.log"
    path.write_text(spanish)
    run = readers.read(path)
    original = {m.name: m.value for m in readers.read(LOG).launches[0].metrics}
    assert {m.name: m.value for m in run.launches[0].metrics} == original
    assert "numbers use ',' as decimal mark (ncu follows the locale)" in run.notes


@pytest.mark.parametrize(
    ("line", "mark"),
    [
        ("    Elapsed Cycles                  cycle   39.173.590", ","),
        ("    SM Active Cycles                cycle 1.085.222,61", ","),
        ("    DRAM Frequency          cycle/nsecond         6,86", ","),
        ("    Elapsed Cycles                  cycle       14,059", "."),  # C locale grouping
        ("    SM Active Cycles                cycle    12,480.75", "."),
        ("    SM Frequency            cycle/nsecond        1.096", "."),
        ("    Elapsed Cycles                  cycle       38.921", "."),  # alone, not enough to decide
    ],
)
def test_decimal_mark(line: str, mark: str) -> None:
    assert ncu_text.decimal_mark([line]) == mark
