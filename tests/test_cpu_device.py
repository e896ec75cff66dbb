"""CPU description and theoretical peaks, from this build VM's real /proc/cpuinfo and lscpu text."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.devices import cpu

# /proc/cpuinfo of the build VM (KVM guest, 2 vCPUs), copied verbatim except the 'bugs' and
# 'power management' lines.
FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss "
    "ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq "
    "pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx "
    "f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault fsgsbase tsc_adjust bmi1 hle avx2 smep "
    "bmi2 erms invpcid rtm avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni "
    "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 arat avx512vbmi umip "
    "avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote movdiri "
    "movdir64b fsrm serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 arch_capabilities"
)


def _block(n: int) -> str:
    return f"""processor\t: {n}
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 167
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 1
microcode\t: 0x1
cpu MHz\t\t: 2599.998
cache size\t: 491520 KB
physical id\t: 0
siblings\t: 2
core id\t\t: {n}
cpu cores\t: 2
apicid\t\t: {n}
initial apicid\t: {n}
fpu\t\t: yes
fpu_exception\t: yes
cpuid level\t: 36
wp\t\t: yes
flags\t\t: {FLAGS}
bogomips\t: 5199.99
clflush size\t: 64
cache_alignment\t: 64
address sizes\t: 48 bits physical, 57 bits virtual
"""


CPUINFO = _block(0) + "\n" + _block(1)

# lscpu of the same VM (the lines gpuprof reads, verbatim).
LSCPU = """Architecture:                            x86_64
CPU(s):                                  2
On-line CPU(s) list:                     0,1
Vendor ID:                               GenuineIntel
Model name:                              Intel(R) Xeon(R) Processor
CPU family:                              6
Model:                                   167
Thread(s) per core:                      1
Core(s) per socket:                      2
Socket(s):                               1
Hypervisor vendor:                       KVM
Virtualization type:                     full
L1d cache:                               96 KiB (2 instances)
L2 cache:                                4 MiB (2 instances)
L3 cache:                                480 MiB (1 instance)
"""

L3_BYTES = 480 * 2**20  # 491520 KB in /proc/cpuinfo, 491520K in sysfs, 480 MiB in lscpu


def test_parse_build_vm_cpuinfo() -> None:
    info = cpu.parse(CPUINFO)
    assert info["vendor"] == "GenuineIntel"
    assert (info["family"], info["model"]) == (6, 167)
    assert info["name"] == "Intel(R) Xeon(R) Processor"
    assert (info["logical_cpus"], info["physical_cores"], info["sockets"]) == (2, 2, 1)
    assert {"amx_tile", "avx512_fp16", "avx512f", "avx2", "fma", "sse2"} <= set(info["isa"])
    assert info["clock_hz"] == pytest.approx(2599.998e6)
    assert info["clock_source"] == "/proc/cpuinfo cpu MHz"
    assert info["hypervisor"] == "unknown hypervisor"  # only the 'hypervisor' flag, no lscpu
    assert any("host's nominal clock" in n for n in info["notes"])
    # No sysfs, no lscpu: /proc/cpuinfo 'cache size' × sockets.
    assert info["llc_bytes"] == L3_BYTES
    assert "cache size" in info["llc_source"]


def test_lscpu_names_the_hypervisor_and_llc() -> None:
    info = cpu.parse(CPUINFO, LSCPU)
    assert info["hypervisor"] == "KVM"
    assert info["llc_bytes"] == L3_BYTES
    assert info["llc_source"].startswith("lscpu 'L3 cache: 480 MiB")


def test_amx_flags_overrule_the_vm_model_number() -> None:
    info = cpu.parse(CPUINFO)
    assert info["fp_units"]["vector_bits"] == 512 and info["fp_units"]["fma_units"] == 2
    assert "Sapphire Rapids" in info["fp_units"]["label"]
    assert any("hypervisor CPU model" in n for n in info["notes"])


def test_theoretical_peaks_of_the_build_vm() -> None:
    peaks = cpu.theoretical_peaks(cpu.parse(CPUINFO, LSCPU))
    f = 2599.998e6
    assert peaks.flops["float32"] == pytest.approx(2 * f * (512 / 32) * 2 * 2)  # 332.8 GFLOP/s
    assert peaks.flops["float64"] == pytest.approx(2 * f * (512 / 64) * 2 * 2)
    assert peaks.flops["float16"] == pytest.approx(2 * f * (512 / 16) * 2 * 2)  # avx512_fp16 is native
    assert peaks.clock_hz == pytest.approx(f)
    assert peaks.origin == "derived"
    assert peaks.bandwidth is None
    assert any("gpuprof calibrate" in n for n in peaks.notes)
    assert any("NumPy computes float16 in software" in n for n in peaks.notes)
    assert (
        "2 cores × 2.600 GHz (/proc/cpuinfo cpu MHz) × 512-bit vectors / element bits (16 float32, 8 float64 "
        "lanes) × 2 FMA units × 2 FLOP per FMA [Intel Sapphire Rapids+ (AMX)]"
    ) == peaks.source


def test_float16_without_native_fma_runs_at_float32_rate() -> None:
    plain = CPUINFO.replace(" avx512_fp16", "")
    peaks = cpu.theoretical_peaks(cpu.parse(plain))
    assert peaks.flops["float16"] == peaks.flops["float32"]
    assert any("no native half-precision FMA" in n for n in peaks.notes)


# Hand-checked: the i7-1185G7 of perf fixture 1a is Tiger Lake, family 6 model 140 (0x8C), 4 cores,
# base 3.0 GHz as its model name says, AVX-512 with one 512-bit FMA pipe on client parts.
TIGER_LAKE = "".join(
    f"processor\t: {n}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 140\n"
    f"model name\t: 11th Gen Intel(R) Core(TM) i7-1185G7 @ 3.00GHz\ncpu MHz\t\t: 1800.000\n"
    f"physical id\t: 0\ncore id\t\t: {n // 2}\nflags\t\t: fpu sse sse2 avx fma avx2 avx512f f16c\n\n"
    for n in range(8)
)


def test_model_name_clock_and_client_avx512() -> None:
    info = cpu.parse(TIGER_LAKE)
    assert (info["logical_cpus"], info["physical_cores"]) == (8, 4)
    assert info["clock_hz"] == 3.0e9 and info["clock_source"] == "base clock in the model name"
    assert info["fp_units"]["fma_units"] == 1 and info["fp_units"]["assumed"]
    peaks = cpu.theoretical_peaks(info)
    assert peaks.flops["float64"] == pytest.approx(4 * 3.0e9 * 8 * 1 * 2)  # 192 GFLOP/s
    assert any("FMA units assumed" in n for n in peaks.notes)


def test_clock_precedence_cpufreq_then_lscpu() -> None:
    assert cpu.parse(TIGER_LAKE, "", "4800000\n")["clock_hz"] == 4.8e9
    assert cpu.parse(TIGER_LAKE, "", "4800000\n")["clock_source"] == "cpufreq cpuinfo_max_freq"
    lscpu = cpu.parse(TIGER_LAKE, "CPU max MHz:                        4800.0000\n")
    assert lscpu["clock_hz"] == 4.8e9 and lscpu["clock_source"] == "lscpu CPU max MHz"


def test_unknown_clock_gives_no_flop_peak() -> None:
    # An Arm Neoverse N1 block as Linux prints it (hand-written: no MHz line on Arm).
    arm = (
        "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 asimdhp\n"
        "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd0c\n"
    )
    info = cpu.parse(arm)
    assert info["clock_hz"] is None and info["clock_source"] == "unknown"
    assert info["fp_units"]["label"] == "Arm Neoverse N1"
    peaks = cpu.theoretical_peaks(info)
    assert peaks.flops == {} and peaks.clock_hz is None
    assert any("physical core count unknown" in n for n in peaks.notes)


@pytest.mark.parametrize(
    ("vendor", "family", "model", "flags", "bits", "units"),
    [
        ("AuthenticAMD", 0x17, 0x01, {"avx2", "fma"}, 128, 2),  # Zen 1
        ("AuthenticAMD", 0x17, 0x31, {"avx2", "fma"}, 256, 2),  # Zen 2
        ("AuthenticAMD", 0x19, 0x61, {"avx2", "fma", "avx512f"}, 256, 2),  # Zen 4: double-pumped
        ("AuthenticAMD", 0x1A, 0x44, {"avx2", "fma", "avx512f"}, 512, 2),  # Zen 5
        ("GenuineIntel", 6, 0x9E, {"avx", "avx2", "fma"}, 256, 2),  # Coffee Lake
        ("GenuineIntel", 6, 0x55, {"avx2", "fma", "avx512f"}, 512, 2),  # Skylake-SP
        ("GenuineIntel", 6, 0x2A, {"avx"}, 256, 1),  # Sandy Bridge
    ],
)
def test_fp_unit_table(vendor: str, family: int, model: int, flags: set[str], bits: int, units: int) -> None:
    found = cpu.fp_units(vendor, family, model, frozenset(flags))
    assert (found.vector_bits, found.fma_units) == (bits, units)


def _cache(root: Path, cpu_no: int, index: int, level: int, kind: str, size: str, shared: str) -> None:
    folder = root / f"cpu{cpu_no}" / "cache" / f"index{index}"
    folder.mkdir(parents=True)
    for name, value in (("level", str(level)), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
        (folder / name).write_text(value + "\n")


def test_llc_from_sysfs_counts_each_instance_once(tmp_path: Path) -> None:
    for n in (0, 1):  # the build VM: private L1/L2, one shared 491520K L3
        _cache(tmp_path, n, 0, 1, "Data", "48K", str(n))
        _cache(tmp_path, n, 1, 1, "Instruction", "64K", str(n))
        _cache(tmp_path, n, 2, 2, "Unified", "2048K", str(n))
        _cache(tmp_path, n, 3, 3, "Unified", "491520K", "0-1")
    assert cpu.llc_from_sysfs(tmp_path) == (L3_BYTES, "sysfs cache L3: 1 instance(s) of 491520 KiB")
    _cache(tmp_path, 2, 3, 3, "Unified", "491520K", "2-3")  # a second socket
    assert cpu.llc_from_sysfs(tmp_path)[0] == 2 * L3_BYTES


def test_describe_this_machine() -> None:
    info = cpu.describe()
    assert info["logical_cpus"] >= 1 and info["host"]
    index3 = Path("/sys/devices/system/cpu/cpu0/cache/index3/size")
    if index3.exists():
        assert cpu.last_level_cache_bytes() >= cpu.cache_bytes(index3.read_text())
    peaks = cpu.theoretical_peaks(info)
    if info["clock_hz"]:
        assert peaks.flops["float32"] == pytest.approx(2 * peaks.flops["float64"])
