"""How a Slurm job that left the queue without a result is classified (gpuprof.sweep.slurm_state),
with sacct's answers and the clock stubbed: the classification must not depend on timing."""

from __future__ import annotations

import pytest

from gpuprof.sweep import slurm_state
from gpuprof.sweep.slurm_state import ACCOUNTING_WAIT_S, NEVER_STARTED, final_state, recorded_state


class Clock:
    """Stands in for the time module: sleeping moves the clock on and is counted."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(slurm_state, "time", fake)
    return fake


def accounting(monkeypatch: pytest.MonkeyPatch, answers: list[str | None]) -> list[str]:
    """sacct answers these states in turn (the last one from then on); the job ids asked come back."""
    asked: list[str] = []

    def state(job_id: str) -> str | None:
        asked.append(job_id)
        return answers[min(len(asked), len(answers)) - 1]

    monkeypatch.setattr(slurm_state, "accounting_state", state)
    return asked


def test_only_the_tasks_own_final_record_counts() -> None:
    # Lines as sacct printed them on the test cluster while array 4 ran, task 4_0 having been cancelled pending.
    assert recorded_state("4_[0-2]|PENDING\n", "4_0") is None
    assert recorded_state("4_2|RUNNING\n", "4_2") is None
    assert recorded_state("4_1|COMPLETED\n4_2|COMPLETED\n", "4_2") == "COMPLETED"
    assert recorded_state("1_1|CANCELLED by 0\n", "1_1") == "CANCELLED"
    assert recorded_state("11_1|FAILED\n", "1_1") is None
    assert recorded_state("", "4_0") is None


def test_a_state_squeue_lists_is_final_without_asking_accounting(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    asked = accounting(monkeypatch, [None])
    assert final_state("3_1", "TIMEOUT", "RUNNING", 0.3) == ("TIMEOUT", "ended without a result")
    assert asked == [] and clock.sleeps == 0


def test_a_task_gone_while_pending_is_cancelled_at_once(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    asked = accounting(monkeypatch, [None])
    assert final_state("11_0", None, "PENDING", 0.3) == ("CANCELLED", NEVER_STARTED)
    assert asked == ["11_0"] and clock.sleeps == 0
    assert NEVER_STARTED.startswith("cancelled before it started")
    accounting(monkeypatch, ["FAILED"])  # it ran, ended and aged out of squeue between two looks
    assert final_state("11_0", None, "PENDING", 0.3) == ("FAILED", "ended without a result")


def test_a_job_gone_after_it_ran_waits_for_accounting(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    asked = accounting(monkeypatch, [None, None, "OUT_OF_MEMORY"])
    assert final_state("7", None, "RUNNING", 0.5) == ("OUT_OF_MEMORY", "ended without a result")
    assert asked == ["7", "7", "7"] and clock.now == 1.0


def test_a_job_gone_after_it_ran_without_a_record_is_gone_after_a_bounded_wait(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    asked = accounting(monkeypatch, [None])
    assert final_state("7", None, "RUNNING", 2.0) == ("GONE", "left the queue without a result or an accounting record")
    assert clock.now == ACCOUNTING_WAIT_S and len(asked) == ACCOUNTING_WAIT_S / 2.0 + 1
