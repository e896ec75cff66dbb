"""``gpuprof compare --scaling --baseline LABEL``: set-ups of one job side by side, per phase and for
the whole program (:mod:`gpuprof.derive.scaling`), optionally with the ResNet-34 study's published rows.

The study trained ResNet-34 on a CPU, one GPU, one GPU under DistributedDataParallel and two GPUs,
and published per set-up the speed-up (11.8× from the CPU to one GPU, 1.79× from one to two GPUs,
1.97× for the training loop alone), the parallel efficiency (89.5 % on two GPUs) and the
energy-delay product normalised to one GPU (CPU 86.65, 1 GPU 1.00, 1 GPU DDP 1.02, 2 GPUs 0.56);
they ship as ``gpuprof/data/resnet_scaling_study.csv``. Its absolute times and energies are not
among them, so its rows carry S, E and EDP only.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from gpuprof.derive.scaling import ENTRY_COLUMNS, phase_entries, scaling_table
from gpuprof.errors import InputError
from gpuprof.model import Run

if TYPE_CHECKING:
    import pandas as pd

DATA_FILE = "resnet_scaling_study.csv"
STUDY = "ResNet-34 training study (CPU, 1 GPU, 1 GPU DDP, 2 GPUs)"
PUBLISHED_BASIS = "published (the study's own S, E and EDP normalised to one GPU)"


def published() -> pd.DataFrame:
    """The study's rows as shipped: setup, devices, phase, S, E_pct, EDP_norm, published."""
    import pandas as pd

    with resources.files("gpuprof.data").joinpath(DATA_FILE).open("r", encoding="utf-8") as handle:
        return pd.read_csv(handle)


def reference_rows() -> pd.DataFrame:
    """The study's rows in the scaling table's columns; E where the study gave only S for several
    devices is S / devices (derived, said in the basis)."""
    import pandas as pd

    rows = []
    for _, row in published().iterrows():
        derived = pd.isna(row["E_pct"]) and not pd.isna(row["S"]) and row["devices"] > 1
        rows.append(
            {
                "phase": row["phase"],
                "label": f"{row['setup']} (paper)",
                "devices": int(row["devices"]),
                "S": row["S"],
                "E (%)": 100 * row["S"] / row["devices"] if derived else row["E_pct"],
                "EDP (norm.)": row["EDP_norm"],
                "instances": None,
                "basis": PUBLISHED_BASIS + ("; E derived: S / devices" if derived else "") + f": {row['published']}",
            }
        )
    return pd.DataFrame(rows)


def scaling(
    runs: list[Run], baseline: str | None, phases: tuple[str, ...] = (), reference: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """The scaling table of ``runs`` (profiles with --label and --devices) against ``baseline``, the
    study's rows after them with ``reference``; and notes."""
    import pandas as pd

    profiles = [run for run in runs if run.kind == "profile"]
    notes = []
    if not profiles and not reference:
        raise InputError(
            "nothing to compare for --scaling: no profile runs in the store",
            "profile each set-up with gpuprof profile --label NAME --devices N -- CMD, or add --reference paper",
        )
    unlabelled = [run.run_id[:8] for run in profiles if not run.environment.get("label")]
    if unlabelled:
        notes.append(
            f"{len(unlabelled)} profile(s) without --label are listed under their run id: {', '.join(unlabelled)}"
        )
    labels = [str(run.environment.get("label") or run.run_id[:8]) for run in profiles]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        notes.append(f"label(s) {', '.join(repeated)} name several runs: the newest of each is used")
        newest: dict[str, Run] = {}
        for run, label in zip(profiles, labels):
            if label not in newest or run.created > newest[label].created:
                newest[label] = run
        profiles = list(newest.values())
    entries = pd.DataFrame(
        [row for run in profiles for row in phase_entries(run, phases or None)], columns=list(ENTRY_COLUMNS)
    )
    if entries["energy_j"].isna().all() and len(entries):
        notes.append(
            "no energy: the profiles were not metered (gpuprof profile --energy), or no meter was readable; "
            "energy and EDP are empty"
        )
    if profiles and not baseline:
        raise InputError("--scaling needs --baseline LABEL", f"labels here: {', '.join(dict.fromkeys(labels))}")
    frame = scaling_table(entries, baseline) if profiles and baseline else pd.DataFrame()
    above = frame[frame["E (%)"] > 100 + 1e-9] if len(frame) else frame
    if len(above):
        cases = ", ".join(
            f"{label} {phase} {e:.0f} %" for label, phase, e in zip(above["label"], above["phase"], above["E (%)"])
        )
        notes.append(
            f"E above 100 % ({cases}): a speed-up beyond the device ratio is unusual; check that the "
            "baseline ran under the same conditions (other load on the machine, threads per process, "
            "batch size per device) before believing it"
        )
    if reference:
        frame = pd.concat([frame, reference_rows()], ignore_index=True) if len(frame) else reference_rows()
        notes.append(
            f"rows marked (paper): {STUDY}, published S, E and EDP normalised to its one-GPU run "
            "(its absolute times and energies are not published with them)"
        )
    return frame, notes
