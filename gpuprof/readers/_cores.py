"""Every core for a parser while it runs: background work of the same import (the file's content
hash) pauses between its blocks while a multi-threaded parser holds the cores, and goes on in what
the single-threaded steps after the parse leave idle. A lowest-priority thread alone is not enough:
on two cores the kernel still gives it a third of the time the parser wanted."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_parsing = 0
_changed = threading.Condition()


@contextmanager
def held() -> Iterator[None]:
    """The cores held by the caller's parse for as long as it runs."""
    global _parsing
    with _changed:
        _parsing += 1
    try:
        yield
    finally:
        with _changed:
            _parsing -= 1
            _changed.notify_all()


def wait_free() -> None:
    """Return once no parse holds the cores (at once when none does)."""
    with _changed:
        _changed.wait_for(lambda: _parsing == 0)
