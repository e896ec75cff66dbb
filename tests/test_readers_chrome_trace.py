"""Framework traces (Kineto, TF1 timeline, TF2/JAX trace.json.gz) read from real public files, and
the tables derived from them checked against the numbers their authors and HTA publish."""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import SRAD

from gpuprof import readers, tracing
from gpuprof.cli import main
from gpuprof.derive import traces
from gpuprof.errors import FormatError, InputError

TRACES = Path(__file__).parent / "fixtures" / "traces"
KINETO = TRACES / "kineto_resnet50_v100_2021_worker0.pt.trace.json.gz"
RANKS = [TRACES / "hta_sampled_rank-0.json.gz", TRACES / "hta_sampled_rank-1.json.gz"]
TF1_I7 = TRACES / "tf1_timeline_inference_i7_6400_3200_1664_b1000.json"
TF1_GPU = TRACES / "tf1_timeline_inference_950M_6400_3200_1664_b1000.json"
JAX = TRACES / "local_capture_jax_0.10.2_cpu_matmul_two_steps.trace.json.gz"


def raw_events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return json.load(handle)["traceEvents"]


def kinds(run) -> Counter:
    return Counter(a["kind"] for a in run.launch_table["attributes"])


def test_gzip_is_recognised_by_its_bytes_for_any_reader(tmp_path: Path) -> None:
    packed = tmp_path / "metrics.bin"  # no .gz in the name: the magic bytes decide
    packed.write_bytes(gzip.compress(SRAD.read_bytes()))
    assert readers.detect(packed).NAME == readers.detect(SRAD).NAME == "nvprof-text-metrics"
    plain, unpacked = readers.read(SRAD), readers.read(packed)
    assert unpacked.source == str(packed)
    assert unpacked.launches == plain.launches
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.bin"]  # nothing written beside it


def test_tf1_core_i7_matmul_totals_the_studys_574719_us() -> None:
    run = readers.read(TF1_I7)
    assert run.environment["dialect"] == "tf1-timeline"
    table = traces.op_table(run).set_index("op")
    assert table.loc["MatMul", "total (s)"] == pytest.approx(574_719e-6, abs=1e-9)
    assert table.loc["MatMul", "calls"] == 4  # three hidden layers and the output layer
    assert table["calls"].sum() == sum(1 for e in raw_events(TF1_I7) if e["ph"] == "X")
    assert set(run.launch_table["device"]) == {"CPU:0"}


def test_tf1_gpu_timeline_reads_each_stream_once_and_links_kernels_to_ops() -> None:
    run = readers.read(TF1_GPU)
    raw = raw_events(TF1_GPU)
    names = {e["pid"]: e["args"]["name"] for e in raw if e["ph"] == "M"}
    on = {}
    for e in raw:
        if e["ph"] == "X" and names[e["pid"]].startswith("/device:GPU:0/"):
            on.setdefault(names[e["pid"]].split("/")[2].split()[0], set()).add((e["name"], e["ts"], e["dur"]))
    frame = traces.events(run)
    gpu = frame[frame["kind"].isin(traces.GPU_KINDS)]
    # stream:all and the memcpy process repeat events of the streams and are not read a second time
    assert on["stream:all"] <= on["stream:14"] | on["stream:15"] | on["stream:16"]
    assert on["memcpy"] <= on["stream:15"] | on["stream:16"]
    assert len(gpu) == len(on["stream:14"]) + len(on["stream:15"]) + len(on["stream:16"]) == 25
    assert set(gpu.loc[gpu["kind"] == "memcpy", "name"]) >= {"MEMCPYHtoD"}
    copies = run.launch_table["attributes"][gpu.index[gpu["kind"] == "memcpy"]]
    assert {a.get("direction") for a in copies} >= {"HtoD"}
    matmuls = gpu[gpu["name"] == "MatMul"]
    assert len(matmuls) == 4 and (matmuls["op"] == "MatMul").all()  # linked to the op of the same node


@pytest.mark.slow  # reads the real 6-step ResNet-50 trace: 3-8 s
def test_kineto_2021_resnet50_v100_six_steps() -> None:
    run = readers.read(KINETO)
    raw = raw_events(KINETO)
    assert run.environment["dialect"] == "kineto"
    assert run.environment["steps"] == ["5", "6", "7", "8", "9", "10"]
    assert run.device == {"name": "Tesla V100-DGXS-32GB", "cc": "7.0"}
    counted = kinds(run)
    raw_kernels = [e for e in raw if e.get("cat") == "Kernel"]
    assert counted["kernel"] == len(raw_kernels) == 8772
    assert counted["memcpy"] == 12 and counted["memset"] == 312 and counted["step"] == 6
    frame = traces.events(run)
    kernels = frame[frame["kind"] == "kernel"]
    assert kernels["duration"].sum() == pytest.approx(sum(e["dur"] for e in raw_kernels) * 1e-6)
    first = run.launches[int(kernels.index[0])]
    raw_first = raw_kernels[0]
    assert first.attributes["grid"] == "(" + ", ".join(map(str, raw_first["args"]["grid"])) + ")"
    assert first.value("registers per thread") == raw_first["args"]["registers per thread"]
    assert first.value("kernel_duration") == pytest.approx(raw_first["dur"] * 1e-6)
    # every kernel belongs to one of the six steps, through the op that launched it
    assert set(kernels["step"]) <= {"5", "6", "7", "8", "9", "10", ""}
    assert (kernels["op"] != "").mean() > 0.99
    ops = frame[frame["kind"] == "op"]
    assert (ops["self"] <= ops["duration"] + 1e-12).all() and (ops["self"] >= 0).all()
    steps = traces.step_table(run)
    raw_steps = {e["name"]: e["dur"] for e in raw if e.get("name", "").startswith("ProfilerStep#")}
    assert steps["host time (s)"].tolist() == pytest.approx(
        [raw_steps[f"ProfilerStep#{n}"] * 1e-6 for n in range(5, 11)]
    )
    assert (steps["GPU activities"] > 1000).all()
    table = traces.op_table(run).set_index("op")
    assert table.loc["aten::cudnn_convolution", "GPU time (s)"] > 0
    assert table["share of GPU time (%)"].sum() <= 100.0 + 1e-9


@pytest.mark.parametrize(
    ("path", "rank", "expected"),
    [
        (
            RANKS[0],
            0,
            {
                "kernel time (us)": 600058,
                "idle (us)": 321378,
                "compute (us)": 106252,
                "non-compute (us)": 172428,
                "idle (%)": 53.56,
                "compute (%)": 17.71,
                "non-compute (%)": 28.74,
                "comm-compute overlap (%)": 11.81,
            },
        ),
        (
            RANKS[1],
            1,
            {
                "kernel time (us)": 600674,
                "idle (us)": 328671,
                "compute (us)": 135548,
                "non-compute (us)": 136455,
                "idle (%)": 54.72,
                "compute (%)": 22.57,
                "non-compute (%)": 22.72,
                "comm-compute overlap (%)": 20.05,
            },
        ),
    ],
)
def test_current_kineto_spelling_reproduces_htas_breakdown_and_overlap(path: Path, rank: int, expected: dict) -> None:
    run = readers.read(path)
    assert run.environment["rank"] == rank and run.environment["world_size"] == 128
    assert kinds(run)["kernel"] == sum(1 for e in raw_events(path) if e.get("cat") == "kernel")
    row = traces.breakdown(run).iloc[0]
    for column, value in expected.items():
        digits = 2 if "%" in column else 0
        assert round(row[column], digits) == value, column


def test_jax_trace_json_steps_and_host_ops() -> None:
    run = readers.read(JAX)
    assert run.environment["dialect"] == "tf-trace"
    assert run.environment["steps"] == ["0", "1"]
    frame = traces.events(run)
    assert not frame["name"].str.startswith("$").any()  # Python tracer frames are left out
    ops = frame[frame["kind"] == "op"]
    assert set(ops["step"]) >= {"0", "1"}
    assert "PjitFunction(<lambda>)" in set(ops["name"])
    with pytest.raises(InputError, match="no GPU activity"):
        traces.breakdown(run)


@pytest.mark.parametrize(
    ("name", "shapes", "flops"),
    [
        ("aten::mm", {"inputs": [[64, 32], [32, 16]]}, 2 * 64 * 32 * 16),
        ("aten::addmm", {"inputs": [[16], [64, 32], [32, 16], [], []]}, 2 * 64 * 32 * 16),
        ("aten::bmm", {"inputs": [[4, 64, 32], [4, 32, 16]]}, 2 * 4 * 64 * 32 * 16),
        ("aten::linear", {"inputs": [[8, 10, 32], [16, 32], [16]]}, 2 * 80 * 32 * 16),
        ("aten::matmul", {"inputs": [[3, 1, 64, 32], [5, 32, 16]]}, 2 * 15 * 64 * 32 * 16),
        (
            "aten::conv2d",
            {
                "inputs": [[2, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], []],
                "concrete": ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"],
            },
            2 * 2 * 8 * 32 * 32 * 3 * 9,
        ),
        ("aten::conv2d", {"inputs": [[2, 3, 32, 32], [8, 3, 3, 3]]}, None),  # no stride/padding recorded
        ("MatMul", {"inputs": [[1000, 6400], [6400, 3200]]}, 2 * 1000 * 6400 * 3200),
        ("Conv2D", {"inputs": [[1, 28, 28, 1], [5, 5, 1, 32]], "outputs": [[1, 28, 28, 32]]}, 2 * 28 * 28 * 32 * 25),
        ("aten::relu", {"inputs": [[4, 4]]}, None),
    ],
)
def test_analytic_flops_from_recorded_shapes(name: str, shapes: dict, flops: float | None) -> None:
    got = traces.op_flops(name, json.dumps(shapes))
    assert math.isnan(got) if flops is None else got == flops


def _import(tmp_path: Path, path: Path):
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(main, ["import", "--store", str(store), str(path)])
    return result, store


def _stored(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            lambda: gzip.compress(KINETO.read_bytes()[:0] + gzip.decompress(KINETO.read_bytes()))[:50_000],
            "gzip stream is cut or corrupt",
        ),
        (lambda: gzip.decompress(KINETO.read_bytes())[:200_000], "not valid JSON"),
        (
            lambda: b'{"traceEvents": [{"ph": "X", "name": "draw", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}',
            "from no framework profiler",
        ),
        (
            lambda: json.dumps(
                {
                    "schemaVersion": 1,
                    "traceEvents": [
                        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
                        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
                    ],
                }
            ).encode(),
            "step window",
        ),
    ],
)
def test_bad_traces_get_one_line_and_store_nothing(tmp_path: Path, content, message: str) -> None:
    path = tmp_path / "bad.pt.trace.json"
    path.write_bytes(content())
    result, store = _import(tmp_path, path)
    assert result.exit_code != 0
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert "Traceback" not in result.output
    assert _stored(store) == 0


@pytest.mark.slow  # imports, stores and reads back a real 6-step ResNet-50 trace: 3-9 s
def test_import_stores_a_trace_and_reads_it_back(tmp_path: Path) -> None:
    result, store = _import(tmp_path, RANKS[0])
    assert result.exit_code == 0, result.output
    assert "ncclKernel_SendRecv" in result.output and "MeanBackward0" not in result.output  # kernels, not ops
    assert "gpuprof trace" in result.output
    from gpuprof.store import open_store

    with open_store(store) as reopened:
        (run,) = reopened.runs()
    assert run.format == "chrome-trace" and run.environment["rank"] == 0
    assert traces.breakdown(run).iloc[0]["idle (us)"] == pytest.approx(321378)


def test_unknown_reader_dialect_raises_format_error(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('[{"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]')
    with pytest.raises(FormatError, match="no framework profiler"):
        readers.read(path)


@pytest.mark.slow  # reads two real traces per command: 2-5 s
def test_trace_command_tables_and_two_traces_side_by_side_with_a_gate(tmp_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(main, ["trace", str(RANKS[0]), "--table", "breakdown", "--format", "csv"])
    assert shown.exit_code == 0, shown.output
    header, row = shown.output.strip().splitlines()[:2]
    assert "compute (%)" in header and ",17.7" in row
    same = runner.invoke(main, ["trace", str(RANKS[0]), "--against", str(RANKS[0]), "--fail-if", "op:+1%"])
    assert same.exit_code == 0, same.output
    both = runner.invoke(
        main,
        [
            "trace",
            str(RANKS[0]),
            "--against",
            str(RANKS[1]),
            "--format",
            "csv",
            "--fail-if",
            "op:+50%",
            "--fail-if",
            "step:+50%",
        ],
    )
    assert both.exit_code == 1  # some ops of rank 1 take more than 1.5x rank 0's time
    table = tracing.side_by_side(readers.read(RANKS[0]), readers.read(RANKS[1])).set_index("op")
    broken = tracing.gate(readers.read(RANKS[0]), readers.read(RANKS[1]), [tracing.Gate("op", 50.0)])
    assert set(broken["name"]) <= set(table.index)
    assert (broken["change (%)"] > 50).all() and len(broken) > 0
    assert all(name in both.output for name in broken["name"].head(3))
    cpu_only = runner.invoke(main, ["trace", str(JAX), "--table", "breakdown"])
    assert cpu_only.exit_code == 2 and cpu_only.output.count("\n") == 1 and "no GPU activity" in cpu_only.output
    lonely = runner.invoke(main, ["trace", str(RANKS[0]), "--fail-if", "op:+5%"])
    assert lonely.exit_code == 2 and "--against" in lonely.output
    assert list(tmp_path.iterdir()) == []  # read-only


XPLANE = TRACES / "local_capture_jax_0.10.2_cpu_matmul_two_steps.xplane.pb"


@pytest.mark.skipif(importlib.util.find_spec("xprof") is None, reason="needs xprof (the [xprof] extra)")
def test_xplane_through_xprof_matches_the_trace_json_and_writes_nothing_beside(tmp_path: Path) -> None:
    local = tmp_path / XPLANE.name
    local.write_bytes(XPLANE.read_bytes())
    assert readers.detect(local).NAME == "xplane"
    run = readers.read(local)
    assert sorted(p.name for p in tmp_path.iterdir()) == [XPLANE.name]  # xprof's cache went to a temporary folder
    assert run.environment["dialect"] == "tf-trace" and run.environment["steps"] == ["0", "1"]
    same_capture = readers.read(JAX)  # the trace.json.gz written in the same session
    ops = traces.op_table(run).set_index("op")
    assert ops.loc["PjitFunction(<lambda>)", "total (s)"] == pytest.approx(
        traces.op_table(same_capture).set_index("op").loc["PjitFunction(<lambda>)", "total (s)"]
    )
    assert "op-stats" in kinds(run)


def test_import_of_a_cpu_only_trace_stores_its_ops(tmp_path: Path) -> None:
    result, store = _import(tmp_path, TF1_I7)
    assert result.exit_code == 0, result.output
    assert _stored(store) == 1 and "ops only" in result.output


@pytest.mark.slow  # reads two real traces per command: 2-4 s
def test_diff_of_two_traces_gates_on_op_and_step_times() -> None:
    runner = CliRunner()
    passed = runner.invoke(main, ["diff", str(RANKS[0]), str(RANKS[1]), "--fail-if", "step:+2%", "--format", "csv"])
    assert passed.exit_code == 0, passed.output
    steps = tracing.step_pairs(readers.read(RANKS[0]), readers.read(RANKS[1]))
    assert steps["step A"].tolist() == ["551", "552"]
    assert (steps["host time (s) B"] / steps["host time (s) A"]).max() < 1.02  # so step:+2% passes
    failed = runner.invoke(main, ["diff", str(RANKS[0]), str(RANKS[1]), "--fail-if", "op:+50%"])
    assert failed.exit_code == 1 and "Gates broken" in failed.output
    wrong = runner.invoke(main, ["diff", str(RANKS[0]), str(RANKS[1]), "--fail-if", "time:+5%"])
    assert wrong.exit_code == 2 and wrong.output.strip().startswith("error: --fail-if 'time:+5%'")


def test_kineto_read_whole_when_its_keys_follow_the_events(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress(RANKS[0].read_bytes()))
    events = doc.pop("traceEvents")
    reordered = tmp_path / "rank0.pt.trace.json"
    reordered.write_text(json.dumps({"traceEvents": events, **doc}))  # not streamed: parsed whole
    streamed, whole = readers.read(RANKS[0]), readers.read(reordered)
    assert whole.environment["rank"] == streamed.environment["rank"] == 0
    assert whole.launch_table["kernel"].tolist() == streamed.launch_table["kernel"].tolist()
    assert traces.breakdown(whole).equals(traces.breakdown(streamed))


def test_streamed_chunks_never_cut_inside_an_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuprof.readers import _trace_events

    nested = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::mm",
        "pid": 1,
        "tid": 1,
        "dur": 5,
        "args": {"Input Dims": [[4, 8], [8, 2]], "note": "a },{ inside a string", "list": [{"a": 1}, {"b": 2}]},
    }
    events = [{**nested, "ts": 10 * i} for i in range(200)]
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, "distributedInfo": {"rank": 3}}))
    monkeypatch.setattr(_trace_events, "CHUNK", 100)  # a cut candidate inside nearly every event
    run = readers.read(path)
    assert len(run.launch_table) == 200 and run.environment["rank"] == 3
    assert traces.op_table(run).loc[0, "FLOP (analytic)"] == 200 * 2 * 4 * 8 * 2
