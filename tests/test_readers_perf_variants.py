"""perf stat variants from issue #15: -M GFLOPS pasted without its header, AMD fp_ret_sse_avx_ops
.all beside its .mac_flops umask, and --topdown with --per-core, -A and --per-socket. Truth values
were read by hand from the fixtures (tests/fixtures/cpu-counters/SOURCES.md, sections 1h, 1i and 2g);
the -A and --per-socket files are written from perf's documented layout (sections 2i and 2j) and hold
the values chosen there."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.derive.cpu_flops import flops_by_dtype, flops_from_events
from gpuprof.derive.topdown import topdown_breakdowns
from gpuprof.errors import FormatError
from gpuprof.readers import detect, perf_stat, perf_topdown, read

CPU = Path(__file__).parent / "fixtures" / "cpu-counters"
GFLOPS = CPU / "perf-stat-M-GFLOPS-no-header-hpl-openblas-jliberma.txt"  # 1h
AMD = CPU / "perf-stat-amd-zen3-fp-ret-all-and-mac-flops-multiplexed-5600X-gemm.txt"  # 1i
PER_CORE = CPU / "perf-stat-topdown-per-core-metric-only-intel-6c12t.txt"  # 2g
PER_SOCKET_STAT = CPU / "perf-stat-per-socket-2s-224t-system-wide-sglang-notes.txt"  # 1j
PER_CPU = CPU / "perf-stat-topdown-A-per-cpu-metric-only-written-from-docs.txt"  # 2i (written)
PER_SOCKET = CPU / "perf-stat-topdown-per-socket-metric-only-written-from-docs.txt"  # 2j (written)


def test_1h_metric_group_block_without_header_is_perf_stat() -> None:
    assert detect(GFLOPS) is perf_stat
    run = read(GFLOPS)
    (launch,) = run.launches
    assert launch.kernel == "./xhpl"  # from the '$ OMP_NUM_THREADS=16 perf stat -M GFLOPS ./xhpl' line
    assert launch.value("fp_arith_inst_retired.scalar_single") == 300
    assert launch.value("fp_arith_inst_retired.scalar_double") == 24724472806
    assert launch.value("fp_arith_inst_retired.128b_packed_double") == 5370827566
    assert launch.value("fp_arith_inst_retired.256b_packed_double") == 5880914182784
    assert launch.value("fp_arith_inst_retired.256b_packed_single") == 0
    gflops = launch.metric("fp_arith_inst_retired.scalar_single: GFLOPs")  # '#    129.3 GFLOPs'
    assert (gflops.value, gflops.unit, gflops.origin) == (129.3e9, "FLOP/second", "derived")
    assert any("trimmed paste" in note for note in run.notes)


def test_1h_counted_flops_agree_with_perfs_own_rate() -> None:
    metrics = read(GFLOPS).launches[0].metrics
    # 300 + 24724472806 + 2 x 5370827566 + 4 x 5880914182784, by hand
    assert flops_by_dtype(metrics) == {"float32": 300, "float64": 23559122859074}
    total, _ = flops_from_events(metrics)
    # perf divided the same counts by duration_time: 129.3 GFLOP/s implies a 182.2 s run (HPL's own
    # timer, 79.63 s in the file, covers only the solve).
    assert total / 129.3e9 == pytest.approx(182.2, abs=0.1)


def test_1i_amd_all_already_counts_flops_and_mac_flops_is_not_added() -> None:
    assert detect(AMD) is perf_stat
    launch = read(AMD).launches[0]
    assert launch.value("fp_ret_sse_avx_ops.all") == 189842679235
    assert launch.value("fp_ret_sse_avx_ops.all:running") == 49.90
    assert launch.value("fp_ret_sse_avx_ops.mac_flops") == 188717586731
    assert launch.value("fp_ret_sse_avx_ops.mac_flops:running") == 37.46
    total, basis = flops_from_events(launch.metrics)
    assert total == 189842679235  # not .all + .mac_flops = 378560265966
    assert "mac_flops also counted: part of .all, not added again" in basis
    assert "49.9% of the time" in basis  # read as perf scaled it, and said so
    assert launch.value("time elapsed") == pytest.approx(1.424528639)


def test_1j_per_socket_rows_keep_the_socket_and_its_cpu_count() -> None:
    assert detect(PER_SOCKET_STAT) is perf_stat
    run = read(PER_SOCKET_STAT)
    s0, s1, whole = run.launches
    assert (s0.attributes, s1.attributes) == ({"aggregate": "S0", "cpus": "112"}, {"aggregate": "S1", "cpus": "112"})
    assert s0.value("cycles") == 6_887_216_716_185 and s0.value("task-clock") == pytest.approx(44_802.56279)
    assert s1.value("context-switches") == 50_412_443 and s1.value("major-faults") == 78
    assert whole.value("time elapsed") == pytest.approx(400.018603371)
    # the same row as perf's -x, CSV prints it (CSV FORMAT: "optional CPU, core, or socket identifier",
    # "optional number of logical CPUs aggregated"): the count is kept there too
    count = perf_stat.parse_csv_fields("S0,112,6887216716185,,cycles,400018603371,100.00,0.154,GHz".split(","))
    assert (count.aggregate, count.cpus, count.value, count.event) == ("S0", 112, 6887216716185.0, "cycles")
    assert perf_stat.parse_csv_fields("CPU3,1234,,cycles,1000,100.00,,".split(",")).cpus is None


def test_2g_topdown_per_core_rows() -> None:
    assert detect(PER_CORE) is perf_topdown
    run = read(PER_CORE)
    cores = {b.scope: {s.key: s.percent for s in b.shares} for b in topdown_breakdowns(run)}
    assert list(cores) == [f"S0-D0-C{i}" for i in range(6)]
    assert cores["S0-D0-C0"] == {
        "bad_speculation": 6.1,
        "backend_bound": 41.1,
        "retiring": 10.5,
        "frontend_bound": 42.3,
    }
    assert cores["S0-D0-C2"]["backend_bound"] == 64.5
    assert cores["S0-D0-C5"]["frontend_bound"] == 30.8
    assert {launch.attributes["cpus"] for launch in run.launches} == {"2"}
    assert run.launches[0].kernel == "./lab"


@pytest.mark.parametrize(
    ("path", "rows", "workload", "elapsed"),
    [
        # -A: 'CPU0' and no count of CPUs (perf prints none for a single CPU)
        (
            PER_CPU,
            {
                "CPU0": ({}, (31.2, 44.9, 19.6, 4.3)),
                "CPU1": ({}, (12.0, 20.5, 55.1, 12.4)),
                "CPU2": ({}, (9.8, 18.7, 60.3, 11.2)),
                "CPU3": ({}, (10.6, 19.9, 58.0, 11.5)),
            },
            "taskset -c 0 ./lab",
            1.003484615,
        ),
        # --per-socket: 'S0' then the 16 CPUs perf summed on that socket
        (
            PER_SOCKET,
            {"S0": ({"cpus": "16"}, (28.4, 41.7, 22.5, 7.4)), "S1": ({"cpus": "16"}, (14.9, 23.6, 50.2, 11.3))},
            "./lab",
            2.004713360,
        ),
    ],
    ids=["A", "per-socket"],
)
def test_2i_2j_topdown_one_launch_per_cpu_or_socket(path: Path, rows: dict, workload: str, elapsed: float) -> None:
    assert detect(path) is perf_topdown and not perf_stat.sniff(path, path.read_text())
    run = read(path)
    expected = [{"core": scope, **extra} for scope, (extra, _) in rows.items()]
    assert [launch.attributes for launch in run.launches] == expected
    assert {launch.kernel for launch in run.launches} == {workload} and run.device["vendor"] == "Intel"
    levels = {b.scope: {s.key: s.percent for s in b.shares} for b in topdown_breakdowns(run)}
    keys = ("retiring", "backend_bound", "frontend_bound", "bad_speculation")
    assert levels == {scope: dict(zip(keys, values)) for scope, (_, values) in rows.items()}
    assert run.launches[-1].value("seconds time elapsed") == pytest.approx(elapsed)


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("$ OMP_NUM_THREADS=16 perf stat -M GFLOPS ./xhpl", "./xhpl"),
        ("$ perf stat --topdown --per-core -a ./lab", "./lab"),
        ("$ sudo perf stat -e cycles -- taskset -c 0 ./lab b", "taskset -c 0 ./lab b"),
        ("$ perf record ./lab", None),
    ],
)
def test_prompt_command(line: str, command: str | None) -> None:
    assert perf_stat.prompt_command([line]) == command


def test_counts_without_perfs_own_annotation_are_not_claimed(tmp_path: Path) -> None:
    # two lines that look like counts but carry no '# value words': HPL.dat lines, not perf output
    path = tmp_path / "HPL.dat"
    path.write_text("6            device out (6=stdout,7=stderr,file)\n1            PMAP process mapping\n")
    with pytest.raises(FormatError, match="gpuprof reads: .*perf-stat.*ncu-text"):
        detect(path)
