"""perf stat counting outputs: the real fixtures' truth values (tests/fixtures/cpu-counters/SOURCES.md)
and real outputs of perf 6.1 on the build VM for the layouts no fixture has."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.errors import FormatError
from gpuprof.readers import detect, perf_stat, read_head

FIXTURES = Path(__file__).parent / "fixtures" / "cpu-counters"
SUANPAN = FIXTURES / "perf-stat-human-fp512-i7-1185G7-suanpan.txt"  # 1a
CPUBOPS = FIXTURES / "perf-stat-csv-interval-cgroup-fp-cpubops.csv"  # 1b
LECTURE = FIXTURES / "perf-stat-human-fp-multiplexed-intel-simd-lecture.txt"  # 1e
ITMO = FIXTURES / "perf-stat-o-pid-hybrid-not-counted-itmo-linreg.txt"  # 1f
TILED = FIXTURES / "perf-stat-o-hybrid-locale-de-comma-decimal-tiled-matmul.profile"  # 1g
TOPDOWN = sorted(FIXTURES.glob("perf-stat-topdown-*")) + [
    FIXTURES / "perf-stat-default-TopdownL1-cpu_core-intel-perfbook.txt",
    FIXTURES / "perf-stat-M-PipelineL1-L2-amd-zen4-7950X-perfbook.txt",
]


def _values(path: Path, launch: int = 0) -> dict[str, object]:
    run = perf_stat.read(path)
    return {m.name: m.value for m in run.launches[launch].metrics}


@pytest.mark.parametrize("path", [SUANPAN, CPUBOPS, LECTURE, ITMO, TILED], ids=lambda p: p.name[:30])
def test_counting_fixtures_are_mine(path: Path) -> None:
    assert perf_stat.sniff(path, read_head(path))
    assert detect(path) is perf_stat


@pytest.mark.parametrize("path", TOPDOWN + [FIXTURES / "papi_avail-5.4.1-amd-a6-5350m.txt"], ids=lambda p: p.name[:30])
def test_topdown_and_papi_are_not_mine(path: Path) -> None:
    assert not perf_stat.sniff(path, read_head(path))


def test_1a_human_after_program_output() -> None:
    values = _values(SUANPAN)
    assert values["fp_arith_inst_retired.512b_packed_double"] == 563539901688
    assert values["fp_arith_inst_retired.scalar_double"] == 122202329
    assert values["fp_arith_inst_retired.256b_packed_double"] == 3849289
    assert values["time elapsed"] == pytest.approx(39.428329959)
    run = perf_stat.read(SUANPAN)
    assert run.launches[0].kernel == "suanpan -f b"
    assert run.format == "perf-stat" and run.kind == "import"
    assert any("program output" in n for n in run.notes)


def test_1b_csv_interval_cgroup_crlf() -> None:
    assert b"\r\n" in CPUBOPS.read_bytes()
    run = perf_stat.read(CPUBOPS)
    first = run.launches[0]
    assert first.attributes == {"time_s": "1.002034594", "cgroup": "task_ramp_test"}
    assert first.value("fp_arith_inst_retired.scalar_double") == 8693488
    assert first.value("fp_arith_inst_retired.scalar_double:running") == 33.42
    assert first.value("uops_executed.core") == 12155448696
    for width in ("128b_packed", "256b_packed", "512b_packed"):
        for precision in ("single", "double"):
            assert first.value(f"fp_arith_inst_retired.{width}_{precision}") == 0
    assert first.value("fp_arith_inst_retired.scalar_single") == 0
    # The excerpt stops after 3 of the second interval's 12 events.
    assert run.launches[1].attributes["time_s"] == "2.003076967"
    assert len([m for m in run.launches[1].metrics if m.unit == "event"]) == 3


def test_1e_multiplexed_percentages() -> None:
    values = _values(LECTURE)
    assert values["fp_arith_inst_retired.256b_packed_single"] == 164619622
    assert values["fp_arith_inst_retired.256b_packed_single:running"] == 28.97
    assert values["fp_arith_inst_retired.scalar_single"] == 159755
    assert values["fp_arith_inst_retired.scalar_single:running"] == 57.51
    assert values["fp_arith_inst_retired.scalar_double"] == 19914
    assert values["fp_arith_inst_retired.scalar_double:running"] == 43.14
    assert values["cycles"] == 158019334
    assert values["instructions: insn per cycle"] == 1.80
    assert any("multiplexed" in n for n in perf_stat.read(LECTURE).notes)


def test_1f_not_counted_and_started_header() -> None:
    run = perf_stat.read(ITMO)
    values = {m.name: m.value for m in run.launches[0].metrics}
    assert values["cpu_core/instructions"] == 49184385612
    assert values["cpu_core/instructions: insn per cycle"] == 5.20
    assert values["cpu_atom/instructions"] == "<not counted>"
    assert values["cpu_core/cycles"] == 9458407423
    assert values["task-clock"] == pytest.approx(3.02584)  # 3025.84 msec
    assert values["time elapsed"] == pytest.approx(4.004842306)
    assert run.environment["started"] == "Fri Feb 28 14:40:11 2025"
    assert run.launches[0].kernel == "process id '378972'"
    assert any("<not counted>" in n for n in run.notes)


def test_1g_de_locale_decimal_comma() -> None:
    values = _values(TILED)
    assert values["cpu_core/instructions"] == 11012810078
    assert values["cpu_core/instructions:running"] == 88.71
    assert values["cpu_atom/cycles"] == 3642649330
    assert values["cpu_atom/cycles:running"] == 0.68
    assert values["task-clock"] == pytest.approx(1.10101)  # 1.101,01 msec
    assert values["time elapsed"] == pytest.approx(1.101976138)
    assert perf_stat.read(TILED).environment["started"] == "Fri May 16 23:04:11 2025"


@pytest.mark.parametrize(
    ("text", "decimal", "value"),
    [
        ("3.642.649.330", ",", 3642649330),  # de_DE
        ("1.101,01", ",", 1101.01),
        ("1’234’567", ".", 1234567),  # de_CH
        ("1'234'567.89", ".", 1234567.89),
        ("1,23,45,678", ".", 12345678),  # en_IN lakh grouping
        ("1\u202f234\u202f567,5", ",", 1234567.5),  # fr_FR narrow no-break space
        ("563,539,901,688", ".", 563539901688),
    ],
)
def test_locale_numbers(text: str, decimal: str, value: float) -> None:
    assert perf_stat.perf_number(text, decimal) == value


def test_detect_decimal_from_fixture_text() -> None:
    assert perf_stat.detect_decimal(TILED.read_text()) == ","
    assert perf_stat.detect_decimal(SUANPAN.read_text()) == "."


# Real outputs of perf 6.1.187 on the build VM (KVM: no PMU, so hardware events are <not supported>).
VM_CSV = """0.61,msec,task-clock,611614,100.00,0.724,CPUs utilized
48,,page-faults,611614,100.00,78.481,K/sec
0,,context-switches,611614,100.00,0.000,/sec
<not supported>,,cycles,0,100.00,,
"""
VM_PER_CORE_CSV = """S0-D0-C0,1,101.43,msec,task-clock,101430255,100.00,1.000,CPUs utilized
S0-D0-C1,1,101.48,msec,task-clock,101478399,100.00,1.000,CPUs utilized
"""
VM_PER_CPU_CSV = """CPU0,101.61,msec,task-clock,101608459,100.00,1.000,CPUs utilized
CPU1,101.63,msec,task-clock,101628637,100.00,1.000,CPUs utilized
CPU0,32,,context-switches,101610352,100.00,314.934,/sec
CPU1,26,,context-switches,101629236,100.00,255.833,/sec
"""
VM_PER_CPU_HUMAN = """
 Performance counter stats for 'system wide':

CPU0                   101.64 msec task-clock                       #    1.000 CPUs utilized          
CPU1                   101.64 msec task-clock                       #    1.000 CPUs utilized          

       0.101617456 seconds time elapsed
"""
VM_INTERVAL_CSV = """     0.100154402,0.74,msec,task-clock,739313,100.00,0.007,CPUs utilized
     0.100154402,<not supported>,,cycles,0,100.00,,
     0.150289026,0.06,msec,task-clock,57961,100.00,0.001,CPUs utilized
     0.150289026,<not supported>,,cycles,0,100.00,,
"""
VM_INTERVAL_HUMAN = """#           time             counts unit events
     0.100282941               0.75 msec task-clock                       #    0.008 CPUs utilized          
     0.100282941                  1      context-switches                 #    1.329 K/sec                  
     0.200615143      <not counted> msec task-clock                                                  
     0.200615143      <not counted>      context-switches                                            
     0.251478339               0.07 msec task-clock                       #    0.001 CPUs utilized          
"""
VM_PER_CORE_HUMAN = """
 Performance counter stats for 'system wide':

S0-D0-C0           1             101.58 msec task-clock                       #    1.000 CPUs utilized          
S0-D0-C0           1                 55      context-switches                 #  541.441 /sec                   
S0-D0-C1           1             101.62 msec task-clock                       #    1.000 CPUs utilized          
S0-D0-C1           1                 59      context-switches                 #  580.574 /sec                   

       0.101601348 seconds time elapsed
"""
VM_REPEAT = """
 Performance counter stats for 'true' (3 runs):

              0.62 msec task-clock                       #    0.653 CPUs utilized            ( +-  2.21% )
                49      page-faults                      #   78.324 K/sec                    ( +-  0.68% )

         0.0009530 +- 0.0000869 seconds time elapsed  ( +-  9.12% )
"""


def test_vm_csv_not_supported() -> None:
    stat = perf_stat.parse_csv(VM_CSV)
    by_event = {c.event: c for c in stat.counts}
    assert by_event["task-clock"].value == 0.61 and by_event["task-clock"].unit == "msec"
    assert by_event["cycles"].value == "<not supported>"
    metrics = {m.name: m for c in stat.counts for m in perf_stat.count_metrics(c)}
    assert metrics["task-clock"].value == pytest.approx(0.00061) and metrics["task-clock"].unit == "second"
    assert metrics["page-faults"].value == 48 and metrics["page-faults"].unit == "event"


def test_vm_per_core_csv_and_human() -> None:
    csv_counts = perf_stat.parse_csv(VM_PER_CORE_CSV).counts
    assert [(c.aggregate, c.value) for c in csv_counts] == [("S0-D0-C0", 101.43), ("S0-D0-C1", 101.48)]
    stat = perf_stat.parse_human(VM_PER_CORE_HUMAN)
    launches = perf_stat.launches(stat, stat.target or "")
    assert [l.device for l in launches[:2]] == ["S0-D0-C0", "S0-D0-C1"]
    assert launches[1].value("context-switches") == 59
    assert launches[-1].attributes == {"scope": "whole run"}
    assert launches[-1].value("time elapsed") == pytest.approx(0.101601348)


def test_vm_per_cpu_csv_and_human() -> None:
    launches = perf_stat.launches(perf_stat.parse_csv(VM_PER_CPU_CSV), "system wide")
    assert [(l.device, l.value("context-switches")) for l in launches] == [("CPU0", 32), ("CPU1", 26)]
    assert launches[1].value("task-clock") == pytest.approx(0.10163)
    human = perf_stat.launches(perf_stat.parse_human(VM_PER_CPU_HUMAN), "system wide")
    assert [l.device for l in human] == ["CPU0", "CPU1", ""]
    assert human[0].value("task-clock") == pytest.approx(0.10164)


def test_vm_intervals_csv_and_human() -> None:
    csv_launches = perf_stat.launches(perf_stat.parse_csv(VM_INTERVAL_CSV), "x")
    assert [l.attributes["time_s"] for l in csv_launches] == ["0.100154402", "0.150289026"]
    assert csv_launches[1].value("task-clock") == pytest.approx(0.00006)
    human = perf_stat.launches(perf_stat.parse_human(VM_INTERVAL_HUMAN), "x")
    assert len(human) == 3
    assert human[0].value("task-clock") == pytest.approx(0.00075)
    assert human[1].value("context-switches") == "<not counted>"


def test_vm_repeat_spreads() -> None:
    stat = perf_stat.parse_human(VM_REPEAT)
    assert stat.runs == 3 and stat.target == "true"
    launch = perf_stat.launches(stat, "true")[0]
    assert launch.value("page-faults") == 49 and launch.invocations == 3
    assert launch.value("page-faults:spread") == 0.68
    assert launch.value("time elapsed") == pytest.approx(0.0009530)
    assert launch.value("time elapsed:spread") == 9.12


def test_header_without_counts_is_a_format_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text(" Performance counter stats for 'x':\n\n       0.1 seconds time elapsed\n")
    with pytest.raises(FormatError, match="no perf stat counter lines"):
        perf_stat.read(empty)
