"""Sizes as users type them: ``6MB`` (10**6), ``6MiB`` (2**20), ``512KB``, ``1GB``, ``4096B``, ``4096``.

``--size`` is the total footprint of all operands of an operation, inputs and output, as the
reference study's "MB" column counts the data an operation processes.
"""

from __future__ import annotations

import re

from gpuprof.errors import InputError

UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_FIX = "give a positive size such as 6MB (10^6 bytes), 6MiB (2^20 bytes), 512KB or 1GB"


def parse_size(text: str) -> int:
    """Bytes in ``text``; InputError with the accepted forms when it is not a positive size."""
    match = _SIZE.match(text)
    if not match:
        raise InputError(f"--size '{text}' is not a size", _FIX)
    number, unit = float(match.group(1)), (match.group(2) or "B").upper()
    if unit not in UNITS:
        raise InputError(
            f"--size '{text}': unknown unit '{match.group(2)}'", "use B, KB, MB, GB (10^3) or KiB, MiB, GiB (2^10)"
        )
    size = int(number * UNITS[unit])
    if size <= 0:
        raise InputError(f"--size '{text}' is not a positive size", _FIX)
    return size


def format_bytes(count: float) -> str:
    """``6000000`` -> ``6.00 MB`` (decimal units, as --size reads them)."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(count) >= factor:
            return f"{count / factor:.2f} {unit}"
    return f"{count:.0f} B"
