"""What every gpuprof chart shares so it stays readable: colours and markers that stay apart in grey
and for colour-blind readers, log axes with plain, distinct tick labels, and text wrapped to fit.

Colours are Okabe and Ito's palette ("Color Universal Design", 2008), which stays distinguishable
under the common colour-vision deficiencies; each series also gets its own marker shape (and bars
their own hatch), so a grey print still tells them apart.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
LINESTYLES = ("-", "--", "-.", ":")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")


def colour(i: int) -> str:
    return OKABE_ITO[i % len(OKABE_ITO)]


def series(i: int) -> dict[str, Any]:
    """Colour, marker and line style of the ``i``-th series: no two of the first 48 alike."""
    return {
        "color": colour(i),
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINESTYLES[(i // len(MARKERS)) % len(LINESTYLES)],
    }


def number(value: float) -> str:
    """A tick value as people write it: 1,000,000, 64, 2.5, 0.25 (never 1e+06 or 2^-2)."""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def log_ticks(axis: Axis, base: int = 10, most: int = 8) -> None:
    """Plain, distinct tick labels (at most about ``most``) on a log ``axis``: decades when the
    axis spans 2.5 or more, else 1-2-5 steps (base 10) or powers (base 2); never repeated labels
    such as "3, 3, 2" from rounding the minor ticks. Call it after the data or limits are set."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    low, high = sorted(getattr(axis.axes, f"get_{axis.axis_name}lim")())
    decades = math.log(high / low, base) if low > 0 else 0.0
    subs: tuple[float, ...] = (1.0,)
    if base == 10 and decades < 2.5:
        subs = (1.0, 2.0, 5.0) if decades >= 0.7 else (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
    axis.set_major_locator(LogLocator(base=base, subs=subs, numticks=most))
    axis.set_major_formatter(FuncFormatter(lambda v, _: number(v)))
    axis.set_minor_formatter(NullFormatter())


def wrap(text: str, fig: Figure, fontsize: float, share: float = 0.96) -> str:
    """``text`` broken into lines that fit ``share`` of the figure's width at ``fontsize``."""
    per_line = max(20, int(fig.get_figwidth() * 72 * share / (0.6 * fontsize)))
    return "\n".join(textwrap.fill(part, per_line, break_on_hyphens=False) for part in text.split("\n"))
