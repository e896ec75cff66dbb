"""Run a command on a pseudo-terminal of a chosen width, as a person's terminal would."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios


def in_terminal(argv: list[str], columns: int, stdout_too: bool = True) -> tuple[str, str]:
    """What ``argv`` showed on a pseudo-terminal of ``columns`` that has its stderr (and stdout),
    and what it wrote to stdout when stdout is a pipe instead (a small output: the pipe is read
    after the terminal closes)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    child = subprocess.Popen(
        argv,
        stdout=follower if stdout_too else subprocess.PIPE,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env={**env, "TERM": "xterm"},
    )
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            child.kill()
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    piped = child.stdout.read().decode() if child.stdout else ""
    child.wait(timeout=60)
    os.close(leader)
    return seen.decode(errors="replace"), piped
