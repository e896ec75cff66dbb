"""A private one-node Slurm cluster on localhost, for tests that submit real jobs.

Import the fixture in a test module (``from tests.slurm_cluster import slurm_cluster``). It starts
munge, a private MariaDB, slurmdbd, slurmctld and slurmd from configuration files in a temporary
folder (no system service is touched), points ``SLURM_CONF`` at them, and stops every process it
started at teardown. Accounting (slurmdbd + database) is there because submitit needs ``sacct`` to
notice jobs that die without a result, such as cancelled ones. Settings and why: see
``/work/shared/reference/slurm_notes.md`` and the comments below. Skips, with the reason, when a
program is missing or the tests do not run as root.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PROGRAMS = (
    "munged",
    "mariadb-install-db",
    "mariadbd",
    "slurmdbd",
    "slurmctld",
    "slurmd",
    "sbatch",
    "srun",
    "sacct",
    "squeue",
    "scancel",
    "sinfo",
)
INSTALL_HINT = "run .ci/install-slurm.sh as root (slurm-wlm munge slurmdbd mariadb-server)"
# slurmctld only starts on the host named in SlurmctldHost; the node takes the same name.
NODE = socket.gethostname().split(".")[0]
START_TIMEOUT = 30.0


def missing_reason() -> str | None:
    """Why a cluster cannot start here, or None when it can."""
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        return f"Slurm test cluster needs {', '.join(missing)}: {INSTALL_HINT}"
    if os.geteuid() != 0:
        return "Slurm test cluster runs its daemons as root (SlurmUser=root); run the tests as root"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _node_resources() -> tuple[int, int]:
    """CPUs and RealMemory (MB) as slurmd itself reports them."""
    text = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    fields = dict(item.split("=", 1) for item in text.split() if "=" in item)
    return int(fields["CPUs"]), int(fields["RealMemory"])


@dataclass
class SlurmCluster:
    """The running cluster: its folder, config path and the daemons it started."""

    root: Path
    conf: Path = field(init=False)
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conf = self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def command(self, *argv: str) -> str:
        """Run a Slurm client command against this cluster; its stdout."""
        done = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        return done.stdout

    def _daemon(self, name: str, argv: list[str]) -> None:
        log = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 - closed when the process ends
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        self.processes.append((name, process))

    def _wait(self, what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for name, process in self.processes:
                if process.poll() is not None:
                    log = (self.root / f"{name}.out").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{name} exited with {process.returncode} while waiting for {what}:\n{log}")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what} (logs in {self.root})")

    def start(self) -> None:
        root = self.root
        for sub in ("state", "spool", "db", "munge"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        munge_socket = root / "munge" / "munge.socket"
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._daemon(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",
                f"--key-file={key}",
                f"--socket={munge_socket}",
                f"--pid-file={root / 'munge' / 'munged.pid'}",
                f"--log-file={root / 'munge' / 'munged.log'}",
                f"--seed-file={root / 'munge' / 'munged.seed'}",
            ],
        )
        self._wait("munge socket", munge_socket.exists)

        db_port, dbd_port, ctld_port, slurmd_port = (_free_port() for _ in range(4))
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={root / 'db'}",
                "--user=root",
                "--skip-test-db",
                "--auth-root-authentication-method=normal",
            ],
            capture_output=True,
            check=True,
            timeout=60,
        )
        # No grant tables: the private server is reachable only on 127.0.0.1 and lives for one test session.
        self._daemon(
            "mariadbd",
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={root / 'db'}",
                "--user=root",
                f"--socket={root / 'db.sock'}",
                f"--port={db_port}",
                "--bind-address=127.0.0.1",
                f"--pid-file={root / 'db.pid'}",
                "--skip-grant-tables",
                "--innodb-buffer-pool-size=16M",
                "--skip-log-bin",
            ],
        )
        self._wait("MariaDB", lambda: _listening(db_port))

        dbd_conf = root / "slurmdbd.conf"
        dbd_conf.write_text(
            "\n".join(
                [
                    f"AuthInfo=socket={munge_socket}",
                    "AuthType=auth/munge",
                    "DbdAddr=127.0.0.1",
                    "DbdHost=localhost",
                    f"DbdPort={dbd_port}",
                    "SlurmUser=root",
                    f"PidFile={root / 'slurmdbd.pid'}",
                    f"LogFile={root / 'slurmdbd.log'}",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    f"StoragePort={db_port}",
                    "StorageUser=root",
                    "StorageLoc=slurm_acct_db",
                ]
            )
            + "\n"
        )
        dbd_conf.chmod(0o600)
        cpus, memory = _node_resources()
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=gpuproftest",
                    f"SlurmctldHost={NODE}(127.0.0.1)",
                    f"SlurmctldPort={ctld_port}",
                    f"SlurmdPort={slurmd_port}",
                    f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory}",
                    "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    # cred_expire=10: a requeued job otherwise waits 120 s before it may start again.
                    f"AuthInfo=socket={munge_socket},cred_expire=10",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core",
                    "AccountingStorageType=accounting_storage/slurmdbd",
                    "AccountingStorageHost=127.0.0.1",
                    f"AccountingStoragePort={dbd_port}",
                    # Slurm 22.05 ignores AuthInfo's socket on connections to slurmdbd; this setting is what it reads.
                    f"AccountingStoragePass={munge_socket}",
                    # submitit ignores SIGTERM: without this a cancel waits the default 30 s.
                    "KillWait=2",
                    # Batch jobs start in 0.2-1 s instead of ~3 s.
                    "SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1",
                    # A request the node cannot meet fails at submission instead of pending forever.
                    "EnforcePartLimits=ALL",
                    "MailProg=/bin/true",
                    "ReturnToService=2",
                    f"StateSaveLocation={root / 'state'}",
                    f"SlurmdSpoolDir={root / 'spool'}",
                    f"SlurmctldPidFile={root / 'slurmctld.pid'}",
                    f"SlurmdPidFile={root / 'slurmd.pid'}",
                    f"SlurmctldLogFile={root / 'slurmctld.log'}",
                    f"SlurmdLogFile={root / 'slurmd.log'}",
                ]
            )
            + "\n"
        )
        # slurmdbd reads slurmdbd.conf from the folder of $SLURM_CONF (it has no -f option).
        self._daemon("slurmdbd", ["slurmdbd", "-D"])
        self._wait("slurmdbd", lambda: _listening(dbd_port))
        self._daemon("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait("slurmctld", lambda: _listening(ctld_port))
        self._daemon("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", NODE])
        self._wait("node idle", self._node_idle)

    def _node_idle(self) -> bool:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env)
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def stop(self) -> None:
        """Cancel jobs, then stop the daemons in reverse start order (SIGTERM, then SIGKILL)."""
        if any(name == "slurmctld" and p.poll() is None for name, p in self.processes):
            subprocess.run(["scancel", "--full", "--user=root"], env=self.env, capture_output=True, timeout=30)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                jobs = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=self.env)
                if jobs.returncode != 0 or not jobs.stdout.strip():
                    break
                time.sleep(0.2)
        for _, process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes.clear()


def _die_with_parent() -> None:
    """In the daemon before exec: SIGTERM it when pytest dies, even by SIGKILL, so nothing is orphaned."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A running one-node cluster with ``SLURM_CONF`` set for this process; stopped at session end."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    previous = os.environ.get("SLURM_CONF")
    # A SIGTERM (e.g. from `timeout`) would end pytest without teardown and orphan the daemons:
    # turn it into an interrupt, which pytest unwinds through this fixture's finally.
    previous_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        cluster.start()
        os.environ["SLURM_CONF"] = str(cluster.conf)
        yield cluster
    finally:
        cluster.stop()
        signal.signal(signal.SIGTERM, previous_term)
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
