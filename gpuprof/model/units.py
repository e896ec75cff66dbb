"""Units: every value gpuprof stores is in a base unit, converted here and only here.

Base units: ``second``, ``byte``, ``hertz``, ``byte/second``, ``FLOP``, ``FLOP/second``, ``%``,
and dimensionless counts kept under the unit the tool gave them (``inst``, ``cycle``, ``warp`` ...).
Profilers print scaled units: Nsight Compute ``Kbyte``, ``nsecond``, ``cycle/nsecond``; nvprof
``865.08MB/s`` or ``us`` columns. Decimal prefixes are 10**3 (as both tools use for rates and
Nsight Compute for sizes); binary prefixes (KiB, MiB) are 2**10.
"""

from __future__ import annotations

import math
import re

_TIME = {
    "ns": 1e-9,
    "nsecond": 1e-9,
    "nsec": 1e-9,
    "us": 1e-6,
    "usecond": 1e-6,
    "usec": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "msecond": 1e-3,
    "msec": 1e-3,
    "s": 1.0,
    "second": 1.0,
    "sec": 1.0,
    "seconds": 1.0,
}
_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_BYTE_WORDS = ("byte", "bytes", "B")
_HERTZ_WORDS = ("hz", "Hz", "HZ")
# Count units a tool may scale with an SI prefix ("Kinst", "Mcycle"); kept as their own unit.
_COUNTS = ("inst", "cycle", "warp", "thread", "block", "request", "sector", "transaction", "flop")

_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*+(.*\S|)\s*$")


def _scale_simple(unit: str) -> tuple[float, str] | None:
    """Scale and base unit of a unit with no '/', or None if unknown."""
    if unit in _TIME:
        return _TIME[unit], "second"
    for words, base in ((_BYTE_WORDS, "byte"), (_HERTZ_WORDS, "hertz")):
        for word in words:
            if unit.endswith(word):
                prefix = unit[: -len(word)]
                if prefix in _BINARY:
                    return float(_BINARY[prefix]), base
                if prefix in _PREFIX and not (word == "B" and prefix == "k"):
                    return _PREFIX[prefix], base
    for word in _COUNTS:
        if unit.endswith(word):
            prefix = unit[: -len(word)]
            if prefix in _PREFIX:
                return _PREFIX[prefix], word
    return None


def scale(unit: str) -> tuple[float, str]:
    """Factor that takes a value in ``unit`` to its base unit, and that base unit.

    Unknown units come back unchanged with factor 1, so a reader never loses a value it cannot
    convert; its unit simply stays as the tool printed it.
    """
    unit = (unit or "").strip()
    if unit in ("", "%"):
        return 1.0, unit
    if "/" in unit:
        top, _, bottom = unit.partition("/")
        if bottom == "s":
            bottom = "second"
        num = _scale_simple(top.strip())
        den = _scale_simple(bottom.strip())
        if num and den:
            base = f"{num[1]}/{den[1]}"
            # Nsight Compute prints clocks as cycles per time ("cycle/nsecond"); they are frequencies.
            # 15 significant digits: 1 / 1e-9 is 999999999.9999999 in binary floating point.
            factor = float(f"{num[0] / den[0]:.15g}")
            return factor, "hertz" if base == "cycle/second" else base
        return 1.0, unit
    found = _scale_simple(unit)
    return found if found else (1.0, unit)


def to_base(value: float, unit: str) -> tuple[float, str]:
    """``value`` in ``unit`` converted to the base unit: ``to_base(1.5, "Kbyte") == (1500.0, "byte")``."""
    factor, base = scale(unit)
    return value * factor, base


def parse_number(text: str) -> float | None:
    """A number as profilers print it ('5,323,503,232.00', '1.3746e+11', '28.05%'), or None.

    Thousands separators are the comma (Nsight Compute, nvprof, nsys). Locale-specific formats
    (decimal commas in perf output) are the perf reader's business, not this function's.
    """
    text = text.strip().rstrip("%").strip()
    if not text or text.lower() in ("n/a", "nan", "-", "--"):
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # 'inf', '1e999': no measurement


# Digit-grouping marks locales print: ',' '.' (de_DE, es_ES), apostrophes (de_CH), narrow and plain
# no-break spaces (fr_FR).
_GROUPING = ",.'’\u202f\u00a0"


# After the locale's marks are made plain: 'g' for each grouping mark, '.' for the decimal mark.
_LOCALE_NUMBER = re.compile(r"[-+]?+(?P<whole>\d[\dg]*+|)(?P<fraction>\.\d++)?+(?:[eE][-+]?+\d++)?+")


def parse_locale_number(text: str, decimal: str = ".") -> float | None:
    """A number printed under a locale whose decimal mark is ``decimal``: every other grouping mark
    is dropped ('3.642.649.330' with decimal ',' is 3642649330, '1.085.222,61' is 1085222.61).

    Whole tokens only, else None: digit groups as a locale prints them ('2,84.766,97' is not
    284.76697), a finite value ('nan' and 'inf' are not counts), nothing else in the cell."""
    plain = text.strip().translate({ord(mark): "." if mark == decimal else "g" for mark in _GROUPING})
    match = _LOCALE_NUMBER.fullmatch(plain)
    if not match or not (match["whole"] or len(match["fraction"] or "") > 1):
        return None
    first, *rest = match["whole"].split("g")
    western = len(first) <= 3 and all(len(group) == 3 for group in rest)
    lakh = bool(rest) and len(first) <= 2 and all(len(g) == 2 for g in rest[:-1]) and len(rest[-1]) == 3  # en_IN
    if rest and not (western or lakh):
        return None
    value = float(plain.replace("g", ""))
    return value if math.isfinite(value) else None


def split_value_unit(cell: str) -> tuple[float, str] | None:
    """A cell with its unit inside, as nvprof prints them: '865.08MB/s' -> (865.08, 'MB/s')."""
    match = _NUMBER.match(cell)
    if not match:
        return None
    number = parse_number(match.group(1))
    if number is None:
        return None
    return number, match.group(2)


_SI_UP = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))
_SI_DOWN = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))
_SHORT = {"second": "s", "byte": "B", "byte/second": "B/s", "hertz": "Hz", "FLOP/second": "FLOP/s"}
_SCALED = ("second", "byte", "byte/second", "hertz", "FLOP", "FLOP/second", "joule", "watt")


def human(value: float | None, unit: str, digits: int = 4) -> str:
    """A base-unit value for people: ``human(0.00512, "second") == "5.12 ms"``, ``"390.6 GFLOP/s"``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    short = _SHORT.get(unit, unit)
    magnitude = abs(value)
    if unit not in _SCALED:
        number = f"{value:,.0f}" if magnitude >= 10**digits else f"{value:.{digits}g}"
        return number + ("%" if unit == "%" else f" {short}" if short else "")
    if unit == "second" and 0 < magnitude < 1:
        for factor, prefix in _SI_DOWN:
            if magnitude >= factor:
                break
        return f"{value / factor:.{digits}g} {prefix}{short}"
    for factor, prefix in _SI_UP:
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{short}"
    return f"{value:.{digits}g} {short}"
