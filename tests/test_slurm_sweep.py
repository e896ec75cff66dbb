"""Cluster sweeps through a real one-node Slurm cluster (tests/slurm_cluster.py), and the pure parts
of gpuprof.sweep.slurm without one."""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster, slurm_cluster  # noqa: F401 - the fixture

from gpuprof.errors import InputError
from gpuprof.measure import RunSettings
from gpuprof.model import Run
from gpuprof.store import open_store
from gpuprof.store import runfile as export
from gpuprof.sweep import load_config
from gpuprof.sweep.slurm import (
    MANIFEST,
    SlurmOptions,
    SlurmPoint,
    SlurmProgress,
    _additional,
    _jobs_plan,
    run_points_on_slurm,
    sweep_on_slurm,
)

CONFIG = """\
name = "tiny"
repeat = 2
warmup = 1
counters = false
[[grid]]
ops = ["add", "mul"]
sizes = ["1MB"]
[[grid]]
ops = ["add"]
sizes = ["2MB"]
"""
KEYS = {
    "add:1000000B:float32:default:warm:r2:w1",
    "mul:1000000B:float32:default:warm:r2:w1",
    "add:2000000B:float32:default:warm:r2:w1",
}


def deadline(seconds: float = 45) -> Callable[[], bool]:
    """A stop() for the cluster calls: a broken wait fails the test instead of hanging the suite."""
    end = time.monotonic() + seconds
    return lambda: time.monotonic() > end


class Recorder:
    """A sweep listener that keeps what it was told."""

    def __init__(self) -> None:
        self.stored: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.total = self.skipped = -1

    def started(self, total: int, skipped: int) -> None:
        self.total, self.skipped = total, skipped

    def point_started(self, point: object) -> None:
        raise AssertionError("cluster sweeps do not know when a point starts")

    def point_stored(self, point: object, run: Run) -> None:
        self.stored.append(point.key)  # type: ignore[attr-defined]

    def point_failed(self, point: object, error: str) -> None:
        self.failed.append((point.key, error))  # type: ignore[attr-defined]


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster) -> SlurmCluster:
    """The running test cluster, for tests that also need submitit (the optional extra "slurm")."""
    pytest.importorskip("submitit", reason="the Slurm path needs submitit: pip install 'gpuprof-hpc[slurm]'")
    return slurm_cluster


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(CONFIG)
    return path


def _stored_keys(store: Path) -> list[str]:
    with open_store(store) as opened:
        return [r.workload["sweep"]["point"] for r in opened.runs()]


# ---- without a cluster ----------------------------------------------------------------------


def test_options_from_config_table_and_cli_overrides() -> None:
    options = SlurmOptions.from_table(
        {"partition": "gpu", "gpus": 2, "time": 15, "sbatch": ["--qos=short"]}, time_min=5, partition=None
    )
    assert (options.partition, options.gpus, options.time_min, options.sbatch) == ("gpu", 2, 5, ("--qos=short",))
    with pytest.raises(InputError, match="unknown key 'gpu_count'"):
        SlurmOptions.from_table({"gpu_count": 1})
    with pytest.raises(InputError, match="time must be an integer of at least 1"):
        SlurmOptions.from_table({"time": 0})
    with pytest.raises(InputError, match="poll must be a number of seconds above 0, got 'often'"):
        SlurmOptions.from_table({"poll": "often"})
    with pytest.raises(InputError, match="sbatch must be a list of strings"):
        SlurmOptions.from_table({"sbatch": "--qos=short"})


def test_extra_sbatch_options_become_submitit_parameters() -> None:
    assert _additional(["--account=proj", "qos=short", "--exclusive", "--mail-type=END"]) == {
        "account": "proj",
        "qos": "short",
        "exclusive": True,
        "mail_type": "END",
    }
    with pytest.raises(InputError, match="cannot read sbatch option '--account='"):
        _additional(["--account="])


def test_jobs_are_one_per_device_kind_then_chunks() -> None:
    def point(key: str, device: str) -> SlurmPoint:
        return SlurmPoint(key, RunSettings(op="add", size="1MB", device=device))

    points = [point("a", "cpu"), point("b", "cuda"), point("c", "cpu"), point("d", "cpu")]
    assert [(kind, [p.key for p in members]) for kind, members in _jobs_plan(points, 0)] == [
        ("cpu", ["a", "c", "d"]),
        ("cuda", ["b"]),
    ]
    assert [(kind, [p.key for p in members]) for kind, members in _jobs_plan(points, 2)] == [
        ("cpu", ["a", "c"]),
        ("cpu", ["d"]),
        ("cuda", ["b"]),
    ]


def test_without_sbatch_the_slurm_path_says_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("submitit", reason="the Slurm path needs submitit: pip install 'gpuprof-hpc[slurm]'")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="needs Slurm's sbatch and srun on PATH"):
        run_points_on_slurm([], SlurmOptions(), tmp_path / "out")


# ---- on a real cluster ----------------------------------------------------------------------


@pytest.mark.slow  # a sweep through a real Slurm: 5-13 s
def test_cpu_sweep_on_slurm_brings_every_point_back(cluster: SlurmCluster, config: Path, tmp_path: Path) -> None:
    store, results, listener = tmp_path / "s.sqlite", tmp_path / "cluster", Recorder()
    events: list[SlurmProgress] = []
    result = sweep_on_slurm(
        load_config(config),
        SlurmOptions(chunk=2, poll_s=0.3),
        results,
        listener,
        store,
        device="cpu",
        progress_callback=events.append,
        command="gpuprof sweep tiny.toml --slurm",
        stop=deadline(),
    )
    assert set(_stored_keys(store)) == KEYS and len(_stored_keys(store)) == 3
    assert sorted(listener.stored) == sorted(KEYS) and not listener.failed and not result.failed
    assert [e.event for e in events].count("submitted") == 2  # 3 points in chunks of 2: a 2-task array
    with open_store(store) as opened:
        runs = opened.runs()
    for run in runs:
        assert run.workload["sweep"]["host"] == platform.node()
        assert run.workload["sweep"]["config"] == "tiny" and run.workload["sweep"]["device"] == "cpu"
        assert run.environment["slurm"]["partition"] == "debug"
        assert all(launch.value("kernel_duration") > 0 for launch in run.launches)
        assert len(run.launches) == 2
    jobs = {r.environment["slurm"]["job"] for r in runs}
    assert len(jobs) == 2
    # Each job wrote its own portable run file on the shared folder; together they hold the three runs.
    lines = [run.run_id for path in results.glob("runs-*.jsonl") for run in export.load(path)[0]]
    assert sorted(lines) == sorted(r.run_id for r in runs)


@pytest.mark.slow  # a sweep through a real Slurm: 5-11 s
def test_cancelled_job_is_reported_and_resume_submits_only_it(
    cluster: SlurmCluster, config: Path, tmp_path: Path
) -> None:
    store, results, listener = tmp_path / "s.sqlite", tmp_path / "cluster", Recorder()
    cancelled: list[str] = []

    def cancel_first_while_running(event: SlurmProgress) -> None:
        if event.event != "submitted":
            return
        cluster.command("scontrol", "release", event.job_id)
        if cancelled:
            return
        cancelled.append(event.job_id)
        give_up = time.monotonic() + 20
        while "RUNNING" not in cluster.command("squeue", "-h", "-j", event.job_id, "-o", "%T"):
            assert time.monotonic() < give_up, "the first job did not start"
            time.sleep(0.1)
        cluster.command("scancel", event.job_id)

    # Held jobs wait for the callback; each job sleeps 3 s before gpuprof starts, time to cancel it.
    held = SlurmOptions(chunk=1, poll_s=0.3, sbatch=("--hold",), setup=("sleep 3",))
    result = sweep_on_slurm(
        load_config(config),
        held,
        results,
        listener,
        store,
        device="cpu",
        progress_callback=cancel_first_while_running,
        stop=deadline(),
    )
    assert len(result.failed) == 1 and len(result.stored) == 2
    point, message = result.failed[0]
    assert message.startswith(f"Slurm job {cancelled[0]} CANCELLED")
    assert "rerun with --resume" in message and f"{cancelled[0]}_0_log.err" in message
    assert point.key not in _stored_keys(store)

    events: list[SlurmProgress] = []
    again = Recorder()
    resumed = sweep_on_slurm(
        load_config(config),
        SlurmOptions(chunk=1, poll_s=0.3),
        results,
        again,
        store,
        device="cpu",
        resume=True,
        progress_callback=events.append,
        stop=deadline(),
    )
    assert again.skipped == 2 and again.stored == [point.key] and not resumed.failed
    assert [e.event for e in events] == ["submitted", "finished"]
    assert sorted(_stored_keys(store)) == sorted(KEYS)


@pytest.mark.slow  # a sweep through a real Slurm: 4-10 s
def test_killed_waiting_process_resumes_without_resubmitting(
    cluster: SlurmCluster, config: Path, tmp_path: Path
) -> None:
    store, results = tmp_path / "s.sqlite", tmp_path / "cluster"
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(f"""
        from gpuprof.sweep.slurm import SlurmOptions, sweep_on_slurm
        from gpuprof.sweep import load_config

        class Quiet:
            def __getattr__(self, name):
                return lambda *args: None

        options = SlurmOptions(chunk=1, poll_s=0.3, sbatch=("--hold",))
        sweep_on_slurm(load_config({str(config)!r}), options, {str(results)!r}, Quiet(), {str(store)!r}, device="cpu")
        """)
    )
    process = subprocess.Popen([sys.executable, str(driver)], start_new_session=True)
    try:
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            manifest = results / MANIFEST
            if manifest.exists() and len(manifest.read_text().splitlines()) == 3:
                break
            assert process.poll() is None, "the driver exited before submitting"
            time.sleep(0.1)
        else:
            pytest.fail("the driver did not submit 3 jobs in 30 s")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    submitted = [json.loads(line)["job_id"] for line in (results / MANIFEST).read_text().splitlines()]
    assert _stored_keys(store) == []
    for job in submitted:  # the jobs outlive the killed driver
        cluster.command("scontrol", "release", job)

    events: list[SlurmProgress] = []
    listener = Recorder()
    sweep_on_slurm(
        load_config(config),
        SlurmOptions(chunk=1, poll_s=0.3),
        results,
        listener,
        store,
        device="cpu",
        resume=True,
        progress_callback=events.append,
        stop=deadline(),
    )
    assert sorted(e.job_id for e in events if e.event == "attached") == sorted(submitted)
    assert not [e for e in events if e.event == "submitted"]
    assert len((results / MANIFEST).read_text().splitlines()) == 3
    assert sorted(_stored_keys(store)) == sorted(KEYS)


@pytest.mark.slow  # a sweep through a real Slurm: 3-8 s
def test_gpuprof_sweep_slurm_command_end_to_end(cluster: SlurmCluster, tmp_path: Path) -> None:
    config = tmp_path / "tiny.toml"
    config.write_text(CONFIG + '[slurm]\npartition = "debug"\ntime = 5\nchunk = 3\npoll = 0.3\n')
    store, folder = tmp_path / "s.sqlite", tmp_path / "cluster"
    gpuprof = Path(sys.executable).with_name("gpuprof")
    done = subprocess.run(
        [
            str(gpuprof),
            "sweep",
            str(config),
            "--slurm",
            "--device",
            "cpu",
            "--store",
            str(store),
            "--slurm-dir",
            str(folder),
            "--slurm-sbatch=--comment=gpuprof-e2e",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    submitted = re.search(r"^Slurm job (\d+) submitted \(3 point\(s\)\); 0 of 1 job\(s\) done", done.stderr, re.M)
    assert submitted
    # the extra sbatch option from the command line reached the job
    assert "Comment=gpuprof-e2e" in cluster.command("scontrol", "show", "job", submitted.group(1))
    assert f"sweep 'tiny' ({load_config(config).config_hash}): 3 point(s) stored in {store}" in done.stderr
    assert sorted(_stored_keys(store)) == sorted(KEYS)
    with open_store(store) as opened:
        assert {r.environment["slurm"]["partition"] for r in opened.runs()} == {"debug"}
    assert len(list(folder.glob("runs-*.jsonl"))) == 1  # chunk = 3: one job


def _accounting_lists_pending_array(cluster: SlurmCluster, array: str) -> None:
    """Wait (bounded) until sacct shows the held array as one pending range record, e.g. ``7_[0-2]``."""
    give_up = time.monotonic() + 30
    while f"{array}_[" not in cluster.command("sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", array):
        assert time.monotonic() < give_up, "slurmdbd did not record the pending array in 30 s"
        time.sleep(0.2)


@pytest.mark.slow  # a sweep through a real Slurm: 2-5 s each
@pytest.mark.parametrize("accounting", ["before", "after"])
def test_array_task_cancelled_before_it_started_is_reported_cancelled(
    cluster: SlurmCluster, config: Path, tmp_path: Path, accounting: str
) -> None:
    # A pending array task that is cancelled vanishes from squeue and never gets an accounting record:
    # the wait must still end, and call it cancelled however far accounting had got (issue 21: with
    # the array's pending range record already in sacct, submitit reported the task as PENDING).
    first: list[str] = []

    def cancel_first_while_held(event: SlurmProgress) -> None:
        if event.event != "submitted":
            return
        if first:
            cluster.command("scontrol", "release", event.job_id)
        else:
            if accounting == "after":
                _accounting_lists_pending_array(cluster, event.job_id.split("_")[0])
            cluster.command("scancel", event.job_id)
        first.append(event.job_id)

    result = sweep_on_slurm(
        load_config(config),
        SlurmOptions(chunk=1, poll_s=0.3, sbatch=("--hold",)),
        tmp_path / "cluster",
        Recorder(),
        tmp_path / "s.sqlite",
        device="cpu",
        progress_callback=cancel_first_while_held,
        stop=deadline(),
    )
    assert len(result.stored) == 2 and len(result.failed) == 1
    assert result.failed[0][1].startswith(f"Slurm job {first[0]} CANCELLED: cancelled before it started")
    assert result.failed[0][1].endswith("rerun with --resume to measure the missing points")
    assert "(logs:" not in result.failed[0][1]  # it never started, so Slurm wrote none


@pytest.mark.slow  # a real Slurm refuses the job: 3-7 s
def test_a_partition_slurm_does_not_have_is_one_clear_error(cluster: SlurmCluster, tmp_path: Path) -> None:
    point = SlurmPoint("add-1MB", RunSettings(op="add", size="1MB", device="cpu", counters=False))
    with pytest.raises(
        InputError,
        match=r"^Slurm refused the jobs: sbatch: error: Batch job submission failed: "
        r"Invalid partition name specified\. check the partition",
    ):
        run_points_on_slurm([point], SlurmOptions(partition="nosuchpartition"), tmp_path / "cluster")


@pytest.mark.slow  # a sweep through a real Slurm: 2-4 s
def test_a_point_that_fails_in_a_job_does_not_lose_the_others(cluster: SlurmCluster, tmp_path: Path) -> None:
    def point(size: str) -> SlurmPoint:
        return SlurmPoint(
            f"add-{size}",
            RunSettings(op="add", size=size, device="cpu", repeat=2, warmup=1, counters=False),
            {"config": "mixed"},
        )

    runs, failures = run_points_on_slurm(
        [point("100TB"), point("1MB")], SlurmOptions(poll_s=0.3), tmp_path / "c", stop=deadline()
    )
    assert [r.environment["slurm"]["point"] for r in runs] == ["add-1MB"]
    assert [(f.state, f.keys) for f in failures] == [("POINT-FAILED", ("add-100TB",))]
    assert "needs about" in failures[0].message and failures[0].stderr.endswith("_log.err")
    assert runs[0].workload["sweep"] == {"config": "mixed", "host": platform.node()}
