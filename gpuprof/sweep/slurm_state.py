"""What became of a Slurm job: read from slurmctld (squeue) and accounting (sacct) directly.

Not through submitit's watcher: it keeps every sacct line it has read and spreads an array's
pending range record (``7_[0-2]``) over each of its tasks, so a task cancelled while pending
(which leaves squeue at once and never gets a record of its own) stayed PENDING in that cache or
was unknown, depending on whether slurmdbd had recorded the pending array yet. Here a job that left
the queue is classified once, from states that no longer change.
"""

from __future__ import annotations

import subprocess
import time

# States after which a job produces nothing more.
FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
    }
)
# How long accounting may lag behind a job that ran and then aged out of squeue.
ACCOUNTING_WAIT_S = 10.0
NEVER_STARTED = (
    "cancelled before it started (Slurm drops an array task cancelled while pending from the queue "
    "and keeps no record of it)"
)


def queue() -> dict[str, str] | None:
    """State of each of this user's jobs slurmctld still knows (array tasks one by one); None if squeue failed.

    squeue, not sacct, says when a job has ended: an array task cancelled while pending never reaches
    accounting. Ended jobs stay listed (with ``--states=all``) for slurmctld's MinJobAge, 300 s by default.
    """
    done = _run(["squeue", "--me", "--noheader", "--array", "--states=all", "--format=%i|%T"])
    return None if done is None else dict(line.split("|", 1) for line in done.splitlines() if "|" in line)


def recorded_state(sacct_output: str, job_id: str) -> str | None:
    """The final state sacct's ``JobID|State`` lines hold for exactly ``job_id``, or None.

    An array's range record (``7_[0-2]``) is not the task's own, and a non-final state there is
    accounting lagging behind slurmctld: neither says how the job ended.
    """
    for line in sacct_output.splitlines():
        found, _, state = line.partition("|")
        if found == job_id:
            word = (state.split() or [""])[0].upper()  # "CANCELLED by 0"
            return word if word in FINAL_STATES else None
    return None


def accounting_state(job_id: str) -> str | None:
    """The final state sacct has recorded for ``job_id``; None without one (or without accounting)."""
    done = _run(["sacct", "--allocations", "--noheader", "--parsable2", "--format=JobID,State", f"--jobs={job_id}"])
    return None if done is None else recorded_state(done, job_id)


def final_state(job_id: str, listed: str | None, seen: str, poll_s: float) -> tuple[str, str]:
    """(state, message) of a job without a result that squeue lists as ended (``listed``) or no longer lists.

    ``seen`` is the last state squeue showed for it (PENDING from submission on). A job squeue no
    longer lists either ran and aged out, so accounting holds its end (waited for a bounded time if
    it ran, in case slurmdbd lags), or never started: then it was cancelled while pending.
    """
    if listed in FINAL_STATES:
        return listed, "ended without a result"
    give_up = time.monotonic() + (0.0 if seen == "PENDING" else ACCOUNTING_WAIT_S)
    while (state := accounting_state(job_id)) is None and time.monotonic() < give_up:
        time.sleep(poll_s)
    if state is not None:
        return state, "ended without a result"
    if seen == "PENDING":
        return "CANCELLED", NEVER_STARTED
    return "GONE", "left the queue without a result or an accounting record"


def _run(argv: list[str]) -> str | None:
    """A Slurm client's stdout; None when it cannot run or fails (the caller asks again or gives up)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
