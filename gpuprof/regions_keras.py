"""A Keras 3 callback that records regions: "train" around ``fit``, "epoch" per epoch, "batch" per
training batch, and "test"/"test batch", "predict"/"predict batch" for ``evaluate`` and ``predict``
(which ``fit`` also runs for validation: those nest inside the epoch)::

    model.fit(x, y, epochs=3, callbacks=[gpuprof.regions_keras.callback()])

Works with any Keras 3 backend; keras is imported when :func:`callback` is called.
"""

from __future__ import annotations

from typing import Any

from gpuprof import regions

# Keras hook name stem -> region name.
PAIRS = {
    "train": "train",
    "epoch": "epoch",
    "train_batch": "batch",
    "test": "test",
    "test_batch": "test batch",
    "predict": "predict",
    "predict_batch": "predict batch",
}


def _methods() -> dict[str, Any]:
    """on_<stem>_begin/on_<stem>_end for every pair: begin opens the region, end closes it."""
    made: dict[str, Any] = {}
    for stem, name in PAIRS.items():

        def begin(self: Any, *args: Any, _stem: str = stem, _name: str = name, **kwargs: Any) -> None:
            index = args[0] if args and isinstance(args[0], int) else None
            self._open[_stem] = regions.begin(_name, index)

        def end(self: Any, *args: Any, _stem: str = stem, **kwargs: Any) -> None:
            regions.end(self._open.pop(_stem, 0))

        made[f"on_{stem}_begin"], made[f"on_{stem}_end"] = begin, end
    return made


def callback() -> Any:
    """A new ``keras.callbacks.Callback`` that records the regions above."""
    import keras

    def __init__(self: Any) -> None:
        keras.callbacks.Callback.__init__(self)
        self._open: dict[str, int] = {}

    kind = type("GpuprofRegions", (keras.callbacks.Callback,), {"__init__": __init__, **_methods()})
    return kind()
