"""The GPU device table: every row sourced and flagged, formulas agree with vendor figures,
names match the way NVML, the study and users spell them, and detection fails plainly here."""

from __future__ import annotations

import csv
import io
import json
import sys
import types

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.devices import gpu_detect, gpu_table
from gpuprof.errors import DeviceError, InputError
from gpuprof.model import PEAK_TABLE

FLAGS = {"derived", "unconfirmed"}
# Fields whose flag means the formula inputs themselves are uncertain.
FORMULA_INPUTS = ("sm_count", "fp32_lanes_per_sm", "peak_clock_mhz", "memory_clock_mhz", "bus_width_bits")


def gpu(name: str) -> gpu_table.GpuSpec:
    return gpu_table.match(name)


def test_every_row_has_a_source_and_only_known_flags() -> None:
    table = gpu_table.load()
    keys = [g.key for g in table.gpus]
    assert len(keys) == len(set(keys))
    for g in table.gpus:
        assert "http" in g.source or "NVIDIA" in g.source, g.key
        assert set(g.status.values()) <= FLAGS, g.key
        assert g.cc in table.lanes, g.key
        assert g.get("peak_clock_mhz") and g.get("sm_count") and g.get("fp32_gflops"), g.key


@pytest.mark.parametrize(
    "name",
    [
        "GeForce GT 710M",
        "Tesla K40",
        "GeForce GTX 980",
        "K80",
        "P100 PCIe",
        "P100 SXM2",
        "V100 SXM2",
        "V100 PCIe",
        "T4",
        "A100 SXM4 40",
        "A100 SXM4 80",
        "A100 PCIe 40",
        "A100 PCIe 80",
        "A10",
        "A30",
        "A40",
        "L4",
        "L40S",
        "RTX 3090",
        "RTX 4090",
        "RTX 5090",
        "RTX A6000",
        "H100 SXM",
        "H100 PCIe",
        "H200",
        "B200",
        "GH200",
    ],
)
def test_the_devices_the_issue_lists_are_in_the_table(name: str) -> None:
    assert gpu_table.match(name).key


def test_unconfirmed_and_derived_values_stay_marked() -> None:
    # Marked so in gpu_peaks_research.csv.
    assert gpu("b200").flag("sm_count") == "unconfirmed"
    assert gpu("b200").flag("peak_clock_mhz") == "unconfirmed"
    assert gpu("k80").flag("sm_count") == "derived"
    assert gpu("l4").flag("sm_count") == "derived"
    assert gpu("l40s").flag("l2_mb") == "unconfirmed"
    assert gpu("a100-pcie-80gb").flag("base_clock_mhz") == "unconfirmed"
    assert gpu("a100-pcie-80gb").get("base_clock_mhz") is None
    assert gpu("rtx 5090").flag("fp64_gflops") == "unconfirmed"
    assert gpu("gh200").flag("fp32_gflops") == "derived"
    assert gpu_table.load().lanes["8.6"].status == {"fp64": "derived"}
    assert gpu_table.load().lanes["10.0"].status["fp32"] == "unconfirmed"
    # ... and reach the Peaks a user sees
    notes = " ".join(gpu_table.peaks(gpu("b200")).notes)
    assert "sm_count is unconfirmed" in notes and "peak_clock_mhz is unconfirmed" in notes


@pytest.mark.parametrize(
    ("name", "vendor_tflops"),
    [
        # Vendor-rounded FP32 figures quoted in gpu_peaks_notes.md / the research table.
        ("a100-sxm4-40gb", 19.5),
        ("v100-sxm2", 15.7),
        ("v100-pcie", 14.0),
        ("k40", 4.29),
        ("gtx-980", 4.98),
        ("t4", 8.1),
        ("h100-sxm5", 67.0),
        ("h100-pcie", 51.0),
        ("gt-710m", 0.2976),
        ("l40s", 91.6),
        ("a40", 37.4),
        ("rtx-4090", 82.6),
        ("p100-pcie", 9.3),
    ],
)
def test_fp32_formula_gives_the_vendor_figure(name: str, vendor_tflops: float) -> None:
    formula = gpu_table.fp32_formula(gpu(name))
    assert formula == pytest.approx(vendor_tflops * 1e12, rel=0.012)


def test_k40_peak_is_at_base_clock_and_boost_gives_the_volta_table_figure() -> None:
    k40 = gpu("k40")
    assert gpu_table.fp32_formula(k40) == pytest.approx(4291.2e9)  # 15 x 192 x 2 x 745 MHz
    assert gpu_table.fp32_formula(k40, k40.get("boost_clock_mhz")) == pytest.approx(5040e9)
    assert gpu_table.fp64_formula(k40) == pytest.approx(1430.4e9)  # datasheet 1.43 TF


def test_formulas_agree_with_every_confirmed_table_value() -> None:
    for g in gpu_table.load().gpus:
        if any(g.flag(f) for f in FORMULA_INPUTS):
            continue
        assert gpu_table.fp32_formula(g) == pytest.approx(g.get("fp32_gflops") * 1e9, rel=0.002), g.key
        if g.get("fp64_gflops") and not g.flag("fp64_gflops"):
            assert gpu_table.fp64_formula(g) == pytest.approx(g.get("fp64_gflops") * 1e9, rel=0.002), g.key
        # Datasheet bandwidth vs 2 x clock x bus/8: equal but for the rounded pin rates the notes
        # name (V100 897 vs 900, H100 PCIe 2039 vs 2000).
        assert gpu_table.bandwidth_formula(g) == pytest.approx(g.get("bandwidth_gbs") * 1e9, rel=0.02), g.key


def test_bandwidth_uses_the_cuda_memory_clock_of_the_study() -> None:
    # The study's Table 1 prints the CUDA-convention memory clocks: K40 3.004 GHz, 288 GB/s;
    # GT 710M 900 MHz DDR3 on 64 bit, 14 GB/s.
    assert gpu_table.bandwidth_formula(gpu("k40")) == pytest.approx(288.4e9, rel=1e-3)
    assert gpu_table.bandwidth_formula(gpu("gt710m")) == pytest.approx(14.4e9)
    assert gpu_table.bandwidth_formula(gpu("a100-sxm4-40gb")) == pytest.approx(1555.2e9)


@pytest.mark.parametrize(
    ("query", "keys"),
    [
        ("a100", {"a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb"}),
        ("A100-SXM4-40GB", {"a100-sxm4-40gb"}),
        ("NVIDIA A100-SXM4-40GB", {"a100-sxm4-40gb"}),  # NVML's name
        ("Tesla K40c", {"k40"}),
        ("a10", {"a10"}),  # not the A100s
        ("GT710M", {"gt-710m"}),
        ("K40", {"k40"}),
        ("GTX980", {"gtx-980"}),  # the study's names
        ("h100", {"h100-sxm5", "h100-pcie"}),
        ("nothing like it", set()),
    ],
)
def test_find_matches_names_as_people_and_tools_write_them(query: str, keys: set[str]) -> None:
    assert {g.key for g in gpu_table.find(query)} == keys


def test_match_says_which_candidates_an_ambiguous_name_has() -> None:
    with pytest.raises(InputError, match="a100-sxm4-40gb"):
        gpu_table.match("a100")
    with pytest.raises(InputError, match="gpuprof peaks"):
        gpu_table.match("Radeon")


def test_peaks_object_states_origin_clock_formula_and_citation() -> None:
    peaks = gpu_table.peaks(gpu("a100-sxm4-40gb"))
    assert peaks.origin == PEAK_TABLE
    assert peaks.clock_hz == 1410e6
    assert peaks.flops["float32"] == 19492e9 and peaks.flops["float64"] == 9746e9
    assert peaks.flops["float16-tensor"] == 312e12
    assert peaks.bandwidth == 1555e9
    assert "108 SM x 64 lanes x 2 x 1410 MHz" in peaks.source
    assert "techpowerup.com" in peaks.source
    assert any("1830 MHz" in n for n in gpu_table.peaks(gpu("h100 sxm")).notes)


def test_detection_without_a_driver_names_what_it_tried() -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    with pytest.raises(DeviceError, match=r"no NVIDIA driver/GPU found \(tried NVML: .*not found\)"):
        gpu_detect.detect()


class _FakeNvml(types.ModuleType):
    """pynvml's documented calls answering with the A100 deviceQuery values the research table
    cites (PC2 wiki: 108 SMs, 1410 MHz, 1215 MHz memory, 5120-bit): a check that the runtime
    path computes the same peaks as the table, not a GPU result."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    class NVMLError(Exception):
        pass

    NVMLError_LibraryNotFound = NVMLError_DriverNotLoaded = NVMLError

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.shutdown = False

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None:
        self.shutdown = True

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA A100-SXM4-40GB"

    def nvmlDeviceGetPciInfo(self, h: int) -> object:
        return types.SimpleNamespace(busId=b"00000000:07:00.0")

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return (8, 0)

    def nvmlDeviceGetNumGpuCores(self, h: int) -> int:
        return 6912

    def nvmlDeviceGetMaxClockInfo(self, h: int, c: int) -> int:
        return {1: 1410, 2: 1215}[c]

    def nvmlDeviceGetClockInfo(self, h: int, c: int) -> int:
        raise self.NVMLError("not supported")

    def nvmlDeviceGetMemoryBusWidth(self, h: int) -> int:
        return 5120

    def nvmlDeviceGetMemoryInfo(self, h: int) -> object:
        return types.SimpleNamespace(total=40 * 2**30)

    def nvmlSystemGetDriverVersion(self) -> str:
        return "535.104.05"


def test_runtime_peaks_follow_the_table_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(gpu_detect, "_cuda_attributes", lambda: ({}, "none"))
    [info] = gpu_detect.detect()
    assert fake.shutdown
    assert (info.name, info.cc, info.sm_count, info.sm_clock_hz) == ("NVIDIA A100-SXM4-40GB", "8.0", 108, None)
    assert "6912 / 64" in info.sm_count_source
    peaks = gpu_detect.runtime_peaks(info)
    row = gpu("A100-SXM4-40GB")
    assert peaks.flops["float32"] == pytest.approx(gpu_table.fp32_formula(row))
    assert peaks.bandwidth == pytest.approx(gpu_table.bandwidth_formula(row))


# --- ceilings: every roof per precision and kind, and the L1 / L2 / DRAM bandwidths ---------------

ORIGINS = {gpu_table.PUBLISHED, gpu_table.DERIVED, gpu_table.UNCONFIRMED}


@pytest.mark.parametrize(
    ("name", "precision", "kind", "tera"),
    [
        # Each value read by hand in the source its row or [sources] entry cites.
        ("h100-sxm5", "fp16", "tensor", 989.4),  # H100 datasheet (hpctech copy): 1979 sparse
        ("h100-sxm5", "fp64", "tensor", 67),  # same table
        ("h100-pcie", "fp64", "tensor", 51),
        ("a100-sxm4-40gb", "tf32", "tensor", 156),  # A100 whitepaper comparison table
        ("a100-sxm4-40gb", "fp16", "fma", 78),
        ("a100-sxm4-40gb", "bf16", "tensor", 312),
        ("a100-sxm4-40gb", "fp16", "tensor-f16acc", 312),
        ("a100-sxm4-40gb", "fp64", "tensor", 19.5),
        ("a100-sxm4-40gb", "int8", "tensor", 624),
        ("v100-sxm2", "fp16", "fma", 31.4),  # same table, V100 column
        ("v100-sxm2", "fp16", "tensor-f16acc", 125),
        ("p100-sxm2", "fp16", "fma", 21.2),  # same table, P100 column
        ("p100-pcie", "fp16", "fma", 18.7),  # Tom's Hardware P100 PCIe
        ("a40", "bf16", "tensor", 149.7),  # A40 datasheet (ecer copy)
        ("a40", "int8", "tensor", 299.3),
        ("a30", "fp64", "tensor", 10.3),
        ("l4", "int8", "tensor", 242.5),  # 485 TOPS with sparsity
        ("b200", "fp8", "tensor", 4500),  # HGX B200: 9 PF FP8 with sparsity
    ],
)
def test_published_ceilings_are_the_cited_figures(name: str, precision: str, kind: str, tera: float) -> None:
    found = gpu_table.ceiling(gpu(name), precision, kind)
    assert found is not None and found.origin == gpu_table.PUBLISHED
    assert found.value == pytest.approx(tera * 1e12)
    assert found.unit == ("OP/s" if precision == "int8" else "FLOP/s")


def test_formulas_reproduce_every_published_ceiling() -> None:
    # SMs x per-SM rate x clock against the vendor figure. Largest gaps: L40S tensor +1.2 % (NVIDIA's
    # tensor figures are at ~2.49 GHz, not 2.52), L4 TF32 +1.0 %, V100 PCIe +0.9 % (NVIDIA's 112 TF
    # at a rounded 1.37 GHz); a wrong per-SM rate is off by 2x.
    checked = 0
    for g in gpu_table.load().gpus:
        for precision, kind in gpu_table.compute_kinds():
            table, formula = gpu_table.ceiling(g, precision, kind), gpu_table.formula_ceiling(g, precision, kind)
            if table and formula and table.origin == formula.origin == gpu_table.PUBLISHED:
                raise AssertionError("a formula is never published")
            if table and formula and table.origin == gpu_table.PUBLISHED and formula.origin == gpu_table.DERIVED:
                assert formula.value == pytest.approx(table.value, rel=0.013), (g.key, precision, kind)
                checked += 1
    assert checked >= 90


def test_derived_ceilings_show_their_formula_and_clock() -> None:
    a30 = gpu("a30")
    bf16 = gpu_table.ceiling(a30, "bf16", "tensor")  # A30 has no published BF16 figure
    assert bf16.origin == gpu_table.DERIVED and bf16.value == pytest.approx(56 * 2048 * 1440e6)
    assert bf16.formula == "56 SM x 2048 FLOP x 1440 MHz" and "A100 Tensor Core GPU Architecture" in bf16.source
    assert (bf16.clock_mhz, bf16.clock) == (1440, "boost")
    fp16 = gpu_table.ceiling(gpu("t4"), "fp16", "fma")  # CUDA guide: 128 FP16 results/clk/SM on 7.x
    assert fp16.value == pytest.approx(40 * 128 * 2 * 1590e6) and "Arithmetic Instructions" in fp16.source


def test_no_fma_ceilings_are_half_the_fma_ones_and_always_derived() -> None:
    a100 = gpu("a100-sxm4-40gb")
    for precision in ("fp64", "fp32", "fp16"):
        fma, no_fma = gpu_table.ceiling(a100, precision, "fma"), gpu_table.ceiling(a100, precision, "no-fma")
        assert no_fma.value == fma.value / 2 and no_fma.origin == gpu_table.DERIVED
        assert no_fma.formula == f"{fma.name} / 2"
    assert gpu_table.ceiling(a100, "fp64", "no-fma").value == pytest.approx(4.873e12)
    # NERSC's ERT on a V100 (cyanguwa/nersc-roofline Plotting/data_hierarchical.txt) draws its
    # 'No-FMA' roof at 3535.79 GFLOP/s beside 'FMA' 7068.86: half, as here.
    assert 3535.79 == pytest.approx(7068.86 / 2, rel=0.001)


def test_hopper_tensor_ceilings_use_the_tensor_clock_but_dmma_the_boost_clock() -> None:
    h100 = gpu("h100-sxm5")
    fp8 = gpu_table.ceiling(h100, "fp8", "tensor")
    assert (fp8.clock_mhz, fp8.clock) == (1830, "tensor boost")
    assert fp8.value == pytest.approx(132 * 8192 * 1830e6)  # 1979 TF: the datasheet's 3958 sparse / 2
    dmma = gpu_table.formula_ceiling(h100, "fp64", "tensor")
    assert (dmma.clock_mhz, dmma.clock) == (1980, "boost")
    # NVIDIA's 67 / 51 TF FP64 tensor figures fit 256 FLOP/clk/SM at 1980 / 1755 MHz, not at the
    # 1830 / 1620 MHz tensor clocks (61.8 / 47.3 TF).
    assert dmma.value == pytest.approx(67e12, rel=0.002)
    assert gpu_table.formula_ceiling(gpu("h100-pcie"), "fp64", "tensor").value == pytest.approx(51e12, rel=0.005)
    assert gpu_table.ceiling(gpu("h200"), "int8", "tensor").clock_mhz == 1830
    assert gpu("h200").flag("tensor_clock_mhz") == "derived"


def test_geforce_boards_run_fp32_accumulate_at_half_rate() -> None:
    # Research notes 1.7: RTX 3090 71 vs 142 TF, RTX 4090 165.2 vs 330.3 TF; RTX 5090 838 sparse.
    for name, fp32acc, fp16acc in (("rtx-3090", 71.2e12, 142e12), ("rtx-4090", 165.2e12, 330.3e12)):
        assert gpu_table.formula_ceiling(gpu(name), "fp16", "tensor").value == pytest.approx(fp32acc, rel=0.003)
        assert gpu_table.formula_ceiling(gpu(name), "fp16", "tensor-f16acc").value == pytest.approx(fp16acc, rel=0.003)
    assert gpu_table.ceiling(gpu("rtx-5090"), "fp16", "tensor-f16acc").value == pytest.approx(419e12)
    # The pro board on the same die runs both at full rate (A40 datasheet).
    a40 = gpu("a40")
    assert gpu_table.ceiling(a40, "fp16", "tensor").value == gpu_table.ceiling(a40, "fp16", "tensor-f16acc").value
    assert gpu_table.rates_of(gpu("rtx-3090")).fp64 == gpu_table.load().lanes["8.6"].fp64 == 2


@pytest.mark.parametrize(
    ("name", "precision", "kind"),
    [
        ("v100-sxm2", "bf16", "tensor"),
        ("v100-sxm2", "tf32", "tensor"),
        ("t4", "fp64", "tensor"),
        ("k40", "fp16", "fma"),
        ("gtx-980", "fp16", "tensor"),
        ("a100-sxm4-40gb", "fp8", "tensor"),
        ("b200", "fp16", "fma"),  # B200's per-SM rates are unknown and NVIDIA gives no figure
    ],
)
def test_ceilings_a_gpu_lacks_are_none(name: str, precision: str, kind: str) -> None:
    assert gpu_table.ceiling(gpu(name), precision, kind) is None


def test_unknown_precision_or_level_names_the_choices() -> None:
    with pytest.raises(InputError, match="fp16/tensor-f16acc"):
        gpu_table.ceiling(gpu("a100-sxm4-40gb"), "fp4", "tensor")
    with pytest.raises(InputError, match="l1, l2, dram"):
        gpu_table.memory_ceiling(gpu("a100-sxm4-40gb"), "hbm")


def test_l2_bandwidth_is_nvidias_bytes_per_clock_at_the_sm_clock() -> None:
    # A100 whitepaper: 5120 byte/clk on A100, 2048 on V100, and "2.3x the L2 read bandwidth of V100".
    a100, v100 = gpu_table.memory_ceiling(gpu("a100-sxm4-40gb"), "l2"), gpu_table.memory_ceiling(gpu("v100-sxm2"), "l2")
    assert a100.value == pytest.approx(7219.2e9) and v100.value == pytest.approx(3133.44e9)
    assert round(a100.value / v100.value, 2) == 2.30
    assert a100.origin == gpu_table.DERIVED and "5120 Bytes/clk" in a100.source
    assert gpu_table.memory_ceiling(gpu("h100-sxm5"), "l2") is None  # NVIDIA publishes none


def test_memory_ceilings_bound_nerscs_measured_v100_roofs() -> None:
    # NERSC's Empirical Roofline Toolkit on a V100 (cyanguwa/nersc-roofline, data_hierarchical.txt):
    # L1 14336, L2 2996.77, HBM 828.758 GB/s. Measured roofs sit below the peaks, at 91 %, 96 %, 92 %.
    v100 = gpu("v100-sxm2")
    measured = {"l1": 14336e9, "l2": 2996.77e9, "dram": 828.758e9}
    for level, value in measured.items():
        peak = gpu_table.memory_ceiling(v100, level)
        assert 0.9 < value / peak.value < 1, level
    l1 = gpu_table.memory_ceiling(v100, "l1")
    assert l1.formula == "80 SM x 128 byte x 1530 MHz" and "32 bits per clock cycle" in l1.source


def test_dram_ceiling_is_the_table_bandwidth_else_the_formula() -> None:
    a100 = gpu_table.memory_ceiling(gpu("a100-sxm4-40gb"), "dram")
    assert (a100.value, a100.origin, a100.clock_mhz, a100.clock) == (1555e9, gpu_table.PUBLISHED, 1215, "memory")
    assert gpu_table.memory_ceiling(gpu("jetson-agx-orin"), "dram").origin == gpu_table.UNCONFIRMED


def test_every_ceiling_has_a_value_unit_origin_source_and_clock() -> None:
    table = gpu_table.load()
    for g in table.gpus:
        assert set(g.cite.values()) <= set(table.sources), g.key
        found = gpu_table.ceilings(g)
        assert len(found) >= 6, g.key  # FP64/FP32 with and without FMA, L1, DRAM
        for c in found:
            assert c.value > 0 and c.unit in ("FLOP/s", "OP/s", "byte/s") and c.origin in ORIGINS, (g.key, c)
            assert c.source and c.clock and (c.clock_mhz or c.kind == "dram"), (g.key, c)
            assert not (c.origin == gpu_table.PUBLISHED and c.formula), (g.key, c)
    for lanes in table.lanes.values():
        assert set(lanes.cite) == set(lanes.rates), lanes.cc
        assert set(lanes.cite.values()) <= set(table.sources), lanes.cc


def test_unconfirmed_inputs_make_a_derived_ceiling_unconfirmed() -> None:
    assert gpu_table.memory_ceiling(gpu("b200"), "l1").origin == gpu_table.UNCONFIRMED  # SMs, clock
    assert gpu_table.ceiling(gpu("rtx-3090"), "bf16", "tensor").origin == gpu_table.UNCONFIRMED
    assert gpu_table.ceiling(gpu("jetson-agx-orin"), "fp64", "fma").origin == gpu_table.UNCONFIRMED
    assert gpu_table.ceiling(gpu("l4"), "fp16", "fma").origin == gpu_table.UNCONFIRMED  # Ada FP16 rate
    assert gpu_table.memory_ceiling(gpu("gt-710m"), "l1").origin == gpu_table.UNCONFIRMED  # Fermi clock


def test_peaks_command_prints_every_ceiling_within_a_terminal_and_whole_as_csv() -> None:
    runner = CliRunner()
    fitted = runner.invoke(main, ["peaks", "--ceilings"], env={"COLUMNS": "80"})
    assert fitted.exit_code == 0 and max(map(len, fitted.stdout.splitlines())) <= 80
    overview = runner.invoke(main, ["peaks", "--ceilings", "--wide"])
    assert overview.exit_code == 0, overview.output
    lines = overview.stdout.splitlines()
    assert len(lines) == 2 + len(gpu_table.load().gpus) and max(map(len, lines)) <= 110
    assert lines[0].split() == [
        "key",
        "FP64",
        "FP32",
        "FP16",
        "TC-FP16",
        "TC-TF32",
        "TC-FP64",
        "TC-INT8",
        "TC-FP8",
        "L1",
        "L2",
        "DRAM",
    ]
    a100 = next(line for line in lines if line.startswith("a100-sxm4-40gb")).split()
    assert a100 == ["a100-sxm4-40gb", "9.75", "19.5", "78", "312", "156", "19.5", "624", "19492*", "7219*", "1555"]
    assert "* derived" in overview.stderr
    detail = runner.invoke(main, ["peaks", "H100 SXM", "--ceilings"], env={"COLUMNS": "120"})
    assert detail.exit_code == 0 and max(map(len, detail.stdout.splitlines()[:20])) <= 120
    assert "132 SM x 4096 FLOP x 1830 MHz" in detail.stdout and "[2] NVIDIA H100 Tensor Core" in detail.stdout
    rows = list(csv.DictReader(io.StringIO(runner.invoke(main, ["peaks", "--ceilings", "--format", "csv"]).stdout)))
    assert len(rows) == sum(len(gpu_table.ceilings(g)) for g in gpu_table.load().gpus)
    h100 = next(r for r in rows if r["key"] == "h100-sxm5" and r["ceiling"] == "FP64 tensor (DMMA)")
    assert float(h100["value"]) == 67e12 and "hpctech" in h100["source"] and h100["clock MHz"] == "1980"
    as_json = json.loads(runner.invoke(main, ["peaks", "a100-sxm4-40gb", "--ceilings", "--format", "json"]).stdout)
    assert {r["ceiling"] for r in as_json} >= {"L1/shared", "L2", "DRAM", "INT8 tensor"}
