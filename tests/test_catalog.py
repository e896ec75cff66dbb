"""The metric catalog (gpuprof/data/metrics.toml): structure and NVIDIA's nvprof -> ncu mapping."""

from __future__ import annotations

import re

from gpuprof.model import catalog

_NCU_NAME = re.compile(r"^[a-z0-9]+__[a-z0-9_.]+$")


def test_every_entry_is_complete() -> None:
    for name, entry in catalog.entries().items():
        assert entry.description.endswith("."), name
        assert entry.ncu or entry.ncu_sum or entry.nvprof or entry.labels or entry.also, name
        assert all(_NCU_NAME.match(n) for n in (*entry.ncu, *entry.ncu_sum, *entry.also)), name
        assert not any(_NCU_NAME.match(label) for label in entry.labels), name


def test_no_name_maps_to_two_canonical_metrics() -> None:
    owner: dict[str, str] = {}
    for entry in catalog.entries().values():
        for name in {*entry.nvprof, *entry.ncu, *entry.labels, *entry.also}:
            assert owner.setdefault(name, entry.canonical) == entry.canonical, name


def test_flop_counts_are_nvidias_weighted_sums() -> None:
    for precision, op in (("sp", "f"), ("dp", "d"), ("hp", "h")):
        weights = catalog.entries()[f"flop_count_{precision}"].ncu_sum
        prefix = "smsp__sass_thread_inst_executed_op_"
        assert weights == {
            f"{prefix}{op}add_pred_on.sum": 1,
            f"{prefix}{op}mul_pred_on.sum": 1,
            f"{prefix}{op}fma_pred_on.sum": 2,
        }


def test_mapping_table_entries() -> None:
    assert catalog.canonical("smsp__warp_issue_stalled_no_instruction_per_warp_active.pct") == "stall_inst_fetch"
    assert (
        catalog.canonical("smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct") == "stall_memory_dependency"
    )
    assert catalog.entries()["stall_exec_dependency"].ncu_sum == {
        "smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct": 1,
        "smsp__warp_issue_stalled_wait_per_warp_active.pct": 1,
    }
    assert catalog.canonical("sm__warps_active.avg.pct_of_peak_sustained_active") == "achieved_occupancy"
    assert catalog.canonical("smsp__cycles_active.avg.pct_of_peak_sustained_elapsed") == "sm_efficiency"
    assert catalog.canonical("dram__bytes_read.sum.per_second") == "dram_read_throughput"
    assert catalog.canonical("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second") == "gld_throughput"
    assert (
        catalog.canonical(
            "smsp__sass_thread_inst_executed_ops_fadd_fmul_ffma_pred_on.sum.pct_of_peak_sustained_elapsed"
        )
        == "flop_sp_efficiency"
    )
    assert catalog.canonical("gpu__time_duration.sum") == "kernel_duration"
    assert catalog.canonical("flop_count_sp") == "flop_count_sp"
    assert catalog.canonical("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") == "flop_count_sp_fma"
    assert catalog.canonical("no_such_metric") is None


def test_section_labels_map_but_never_reach_the_metrics_list() -> None:
    assert catalog.canonical("SM Frequency") == "sm_clock"
    assert catalog.canonical("Duration") == "kernel_duration"
    names = catalog.ncu_metrics()
    assert "SM Frequency" not in names and "Duration" not in names
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" in names
    assert len(names) == len(set(names))


def test_other_spellings_are_read_but_never_requested() -> None:
    """NERSC's sm__ instruction counts and Blackwell's dram__bytes_op_* map like ncu's own names;
    the live --metrics list asks for each value once."""
    for op, key in (("f", "sp"), ("d", "dp"), ("h", "hp")):
        for kind in ("add", "mul", "fma"):
            assert (
                catalog.canonical(f"sm__sass_thread_inst_executed_op_{op}{kind}_pred_on.sum")
                == f"flop_count_{key}_{kind}"
            )
    assert catalog.canonical("dram__bytes_op_read.sum") == "dram_read_bytes"
    assert catalog.canonical("dram__bytes_op_write.sum") == "dram_write_bytes"
    assert catalog.canonical("smsp__inst_executed_pipe_tensor.sum") == "tensor_inst"
    requested = set(catalog.ncu_metrics())
    read_only = {name for entry in catalog.entries().values() for name in entry.also}
    assert read_only and not read_only & requested
    assert {"sm__inst_executed_pipe_tensor.sum", "l1tex__t_bytes.sum", "lts__t_bytes.sum"} <= requested


def test_tensor_entries_name_a_ceiling_and_cite_a_source() -> None:
    from gpuprof.devices import gpu_table

    tensor = {
        name: e for name, e in catalog.entries().items() if name.startswith("tensor_ops_") or name == "tensor_inst"
    }
    assert len(tensor) == 10
    for name, entry in tensor.items():
        assert entry.source, name
        if entry.ceiling:
            assert tuple(entry.ceiling.split("/")) in gpu_table.compute_kinds(), name
    assert catalog.entries()["tensor_inst"].flop_per_inst == {"7.0": 512}
    assert "512 x sm__inst_executed_pipe_tensor.sum" in catalog.entries()["tensor_inst"].source
    assert not catalog.entries()["tensor_ops_narrow"].ceiling
