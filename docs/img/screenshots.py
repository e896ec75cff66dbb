"""Make docs/img/report-*.png: the HTML report of real inputs as headless Chromium shows it.

Run from the repository root with the project's virtual environment:
``.venv/bin/python docs/img/screenshots.py`` (needs ``chromium``: ``.ci/system-packages.sh``).
The report is the one ``gpuprof compare --html`` writes for this machine's CPU runs, the study's
published rows and three real profiles (NERSC's V100 files joined as ``gpuprof import --join`` does); each image is a slice of one full-page screenshot, cut at
the report's own headings (their positions read back from the page Chromium laid out).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "profiler-outputs"
IMPORTS = ["ncu_csv_details_a100_roofline_printfp.csv", "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"]
NERSC_V100 = "ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.*.csv"  # 12 one-metric runs, joined
WIDTH, HEIGHT = 1400, 16000
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
# image name -> (the heading id it starts at, "" for the top; the id prefix of the heading it stops at)
SLICES = {
    "report-charts.png": ("charts", "roofline-"),
    "report-roofline-k40-paper.png": ("roofline-k40-paper", ""),
    "report-roofline-v100.png": ("roofline-tesla-v100-sxm2-16-32-gb", ""),
}
POSITIONS = """<script>document.body.dataset.positions = JSON.stringify(Object.fromEntries(
  [...document.querySelectorAll('[id]')].map(e => [e.id, e.getBoundingClientRect().top + window.scrollY])
  .concat([['', document.body.scrollHeight]])));</script></body>"""  # '' = the end of the page


def gpuprof(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "gpuprof", *args], check=True, cwd=ROOT)


def chromium(profile: Path, *args: str) -> str:
    argv = ["chromium", *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", *args]
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=300).stdout


def main() -> None:
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store = work / "s.sqlite"
        for op, size in [
            ("add", "6MB"),
            ("add", "24MB"),
            ("mul", "6MB"),
            ("dot", "6MB"),
            ("dot", "24MB"),
            ("scalar", "6MB"),
            ("sigmoid", "6MB"),
            ("tanh", "6MB"),
        ]:
            gpuprof("run", "--op", op, "--size", size, "--device", "cpu", "--store", str(store))
        gpuprof(
            "import",
            "--store",
            str(store),
            "--join",
            "--gpu",
            "v100-sxm2",
            *map(str, sorted(FIXTURES.glob(NERSC_V100))),
        )
        report = work / "report.html"
        gpuprof(
            "compare",
            "--store",
            str(store),
            "--reference",
            "paper",
            "--html",
            str(report),
            *[f"--import={FIXTURES / name}" for name in IMPORTS],
        )
        probe = work / "probe.html"
        probe.write_text(report.read_text().replace("</body>", POSITIONS))
        dom = chromium(work / "profile", "--dump-dom", probe.as_uri())
        found = re.search(r'data-positions="([^"]*)"', dom)
        positions = json.loads(found.group(1).replace("&quot;", '"'))
        shot = work / "page.png"
        chromium(work / "profile", f"--screenshot={shot}", report.as_uri())
        page = Image.open(shot)
        for name, (start, stop) in SLICES.items():
            top = positions[start] if start else 0
            bottom = min(y for key, y in positions.items() if key.startswith(stop) and y > top + 1)
            top, bottom = int(top), int(bottom)
            part = page.crop((0, max(0, top - 8), WIDTH, min(bottom, page.height))).convert("RGB")
            part.quantize(256).save(ROOT / "docs" / "img" / name, optimize=True)  # 256 colours: a third the size
            print(f"docs/img/{name}: {WIDTH} x {bottom - top} px of the report (y {top}-{bottom})")


if __name__ == "__main__":
    main()
