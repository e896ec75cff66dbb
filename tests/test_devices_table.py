"""The GPU device table: every row sourced and flagged, formulas agree with vendor figures,
names match the way NVML, the study and users spell them, and detection fails plainly here."""

from __future__ import annotations

import sys
import types

import pytest

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


@pytest.mark.parametrize("name", [
    "GeForce GT 710M", "Tesla K40", "GeForce GTX 980", "K80", "P100 PCIe", "P100 SXM2", "V100 SXM2",
    "V100 PCIe", "T4", "A100 SXM4 40", "A100 SXM4 80", "A100 PCIe 40", "A100 PCIe 80", "A10", "A30",
    "A40", "L4", "L40S", "RTX 3090", "RTX 4090", "RTX 5090", "RTX A6000", "H100 SXM", "H100 PCIe",
    "H200", "B200", "GH200"])
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
    assert gpu_table.lanes_for("8.6").status == {"fp64": "derived"}
    assert gpu_table.lanes_for("10.0").status["fp32"] == "unconfirmed"
    # ... and reach the Peaks a user sees
    notes = " ".join(gpu_table.peaks(gpu("b200")).notes)
    assert "sm_count is unconfirmed" in notes and "peak_clock_mhz is unconfirmed" in notes


@pytest.mark.parametrize(("name", "vendor_tflops"), [
    # Vendor-rounded FP32 figures quoted in gpu_peaks_notes.md / the research table.
    ("a100-sxm4-40gb", 19.5), ("v100-sxm2", 15.7), ("v100-pcie", 14.0), ("k40", 4.29), ("gtx-980", 4.98),
    ("t4", 8.1), ("h100-sxm5", 67.0), ("h100-pcie", 51.0), ("gt-710m", 0.2976), ("l40s", 91.6),
    ("a40", 37.4), ("rtx-4090", 82.6), ("p100-pcie", 9.3),
])
def test_fp32_formula_gives_the_vendor_figure(name: str, vendor_tflops: float) -> None:
    formula = gpu_table.fp32_formula(gpu(name))
    assert formula == pytest.approx(vendor_tflops * 1e12, rel=0.012)


def test_k40_peak_is_at_base_clock_and_boost_gives_the_volta_table_figure() -> None:
    k40 = gpu("k40")
    assert gpu_table.fp32_formula(k40) == pytest.approx(4291.2e9)            # 15 x 192 x 2 x 745 MHz
    assert gpu_table.fp32_formula(k40, k40.get("boost_clock_mhz")) == pytest.approx(5040e9)
    assert gpu_table.fp64_formula(k40) == pytest.approx(1430.4e9)            # datasheet 1.43 TF


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


@pytest.mark.parametrize(("query", "keys"), [
    ("a100", {"a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb"}),
    ("A100-SXM4-40GB", {"a100-sxm4-40gb"}),
    ("NVIDIA A100-SXM4-40GB", {"a100-sxm4-40gb"}),      # NVML's name
    ("Tesla K40c", {"k40"}),
    ("a10", {"a10"}),                                    # not the A100s
    ("GT710M", {"gt-710m"}), ("K40", {"k40"}), ("GTX980", {"gtx-980"}),   # the study's names
    ("h100", {"h100-sxm5", "h100-pcie"}),
    ("nothing like it", set()),
])
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
    def nvmlShutdown(self) -> None: self.shutdown = True
    def nvmlDeviceGetCount(self) -> int: return 1
    def nvmlDeviceGetHandleByIndex(self, i: int) -> int: return i
    def nvmlDeviceGetName(self, h: int) -> bytes: return b"NVIDIA A100-SXM4-40GB"
    def nvmlDeviceGetPciInfo(self, h: int) -> object: return types.SimpleNamespace(busId=b"00000000:07:00.0")
    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]: return (8, 0)
    def nvmlDeviceGetNumGpuCores(self, h: int) -> int: return 6912
    def nvmlDeviceGetMaxClockInfo(self, h: int, c: int) -> int: return {1: 1410, 2: 1215}[c]
    def nvmlDeviceGetClockInfo(self, h: int, c: int) -> int: raise self.NVMLError("not supported")
    def nvmlDeviceGetMemoryBusWidth(self, h: int) -> int: return 5120
    def nvmlDeviceGetMemoryInfo(self, h: int) -> object: return types.SimpleNamespace(total=40 * 2**30)
    def nvmlSystemGetDriverVersion(self) -> str: return "535.104.05"


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
