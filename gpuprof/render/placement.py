"""Chart labels placed where they overlap nothing, judged by the renderer's own text extents.

A label tries candidate spots (nearest first) and keeps the first whose box stays inside the axes
and clear of every box already taken (other labels, data markers). Estimating text sizes from
character counts, as this module's predecessor did, let labels collide; measuring cannot.
Call it only after the figure's layout is final (fixed), so the extents hold in the saved file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

Offset = tuple[float, float]  # points from the anchor, as ``annotate(textcoords="offset points")``


def ring(radius: float) -> list[Offset]:
    """Eight spots around an anchor at ``radius`` points: right, left, above, below, then diagonals."""
    d = radius * 0.75
    return [(radius, 0), (-radius, 0), (0, radius), (0, -radius), (d, d), (-d, d), (d, -d), (-d, -d)]


def _alignment(offset: Offset) -> dict[str, str]:
    """Text on the side of the anchor its offset points to."""
    dx, dy = offset
    return {
        "ha": "left" if dx > 0 else "right" if dx < 0 else "center",
        "va": "bottom" if dy > 0 else "top" if dy < 0 else "center",
    }


class Placer:
    """The boxes taken in one axes, and the labels placed so far."""

    def __init__(self, ax: Axes, taken: Iterable[Bbox] = ()) -> None:
        self.ax = ax
        self.renderer = ax.figure.canvas.get_renderer()
        self.taken: list[Bbox] = list(taken)

    def marker_boxes(self, xy: Iterable[tuple[float, float]], size: float = 4.5) -> None:
        """Take a square of ``size`` points around each data point (display coordinates)."""
        from matplotlib.transforms import Bbox

        half = size * self.ax.figure.dpi / 72
        self.taken += [Bbox([[x - half, y - half], [x + half, y + half]]) for x, y in xy]

    def free(self, box: Bbox) -> bool:
        inside = self.ax.bbox
        if box.x0 < inside.x0 or box.x1 > inside.x1 or box.y0 < inside.y0 or box.y1 > inside.y1:
            return False
        return not any(box.overlaps(other) for other in self.taken)

    def label(
        self,
        text: str,
        spots: Sequence[tuple[tuple[float, float], Offset, dict[str, Any]]],
        leader_beyond: float = 14.0,
        force: bool = True,
        **style: Any,
    ) -> Annotation | None:
        """Annotate ``text`` at the first free spot of ``spots`` ((data xy, offset, text options)
        each); spots further than ``leader_beyond`` points get a thin line back to their anchor.
        With no free spot: None when not ``force`` (the caller puts it elsewhere: a numbered note),
        else the first spot, for a label that is already as short as it gets."""
        from matplotlib.text import Text

        chosen = None
        for xy, offset, options in spots:
            far = max(abs(offset[0]), abs(offset[1])) > leader_beyond
            arrow = (
                {"arrowprops": {"arrowstyle": "-", "color": "0.45", "linewidth": 0.6, "shrinkA": 0, "shrinkB": 3}}
                if far
                else {}
            )
            note = self.ax.annotate(
                text,
                xy,
                xytext=offset,
                textcoords="offset points",
                annotation_clip=False,
                **{**_alignment(offset), **style, **options, **arrow},
            )
            note.update_positions(self.renderer)
            box = Text.get_window_extent(note, self.renderer)
            if self.free(box):
                if chosen is not None:
                    chosen[0].remove()
                self.taken.append(box)
                return note
            if chosen is None:
                chosen = (note, box)
            else:
                note.remove()
        note, box = chosen
        if not force:
            note.remove()
            return None
        self.taken.append(box)
        return note
