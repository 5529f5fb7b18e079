"""A text label kept inside its Axes (dpmodels.output.plots; needs matplotlib, which
dpmodels.output.plots imports only when a plot is drawn)."""

from __future__ import annotations

from matplotlib.text import Annotation, Text

__all__ = ["InsideAnnotation", "annotate_inside"]

#: Room left between the label and the Axes' edge, in points (a label's
#: rounded background box reaches about a point beyond its text).
MARGIN_POINTS = 2.0


class InsideAnnotation(Annotation):
    """An `Annotation` placed with an offset (``textcoords="offset points"``)
    that is moved, each time it is positioned (drawing, its window extent), by
    the least amount that keeps its text inside its Axes: whatever the numbers
    (an estimate near the edge of the axis, a narrow panel), the label never
    runs into the tick labels, a neighbouring panel or the title.  A label
    wider (taller) than the Axes starts at its left (top) edge."""

    def __init__(self, text, xy, xytext, **kwargs):
        super().__init__(text, xy, xytext=xytext, **kwargs)
        self._nominal = (float(xytext[0]), float(xytext[1]))

    def update_positions(self, renderer):
        self.xyann = self._nominal  # from the requested place each time (resizes)
        super().update_positions(renderer)
        axes = self.axes
        if axes is None or renderer is None:
            return
        box, inside = Text.get_window_extent(self, renderer), axes.bbox
        margin = renderer.points_to_pixels(MARGIN_POINTS)
        dx = _shift(box.x0, box.x1, inside.x0 + margin, inside.x1 - margin)
        dy = -_shift(-box.y1, -box.y0, -inside.y1 + margin, -inside.y0 - margin)
        if dx or dy:
            per_point = renderer.points_to_pixels(1.0)
            self.xyann = (self._nominal[0] + dx / per_point, self._nominal[1] + dy / per_point)
            super().update_positions(renderer)


def _shift(lo: float, hi: float, start: float, end: float) -> float:
    """The least move of the span [lo, hi] into [start, end]; a span longer
    than the room starts at ``start``."""
    if lo < start or hi - lo > end - start:
        return start - lo
    if hi > end:
        return end - hi
    return 0.0


def annotate_inside(ax, text: str, xy, xytext, **kwargs) -> InsideAnnotation:
    """``ax.annotate(text, xy, xytext, textcoords="offset points", ...)`` with
    the label kept inside ``ax`` (`InsideAnnotation`)."""
    from matplotlib.transforms import IdentityTransform

    label = InsideAnnotation(text, xy, xytext, textcoords="offset points", **kwargs)
    label.set_transform(IdentityTransform())  # as Axes.annotate does
    ax._add_text(label)
    return label
