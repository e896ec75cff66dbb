"""The store's category encoding of a text column (kernel and device names) is pandas.Categorical's:
sorted categories, the same codes, whether the names are one, many, unicode or missing."""

from __future__ import annotations

import pandas as pd
import pytest

from gpuprof.store import columns

NAMES = ["void k<float>(T1 *)", "Ä_kernel", "a_kernel", "void k<float>(T1 *)", "B", "ä", "a_kernel"]


@pytest.mark.parametrize(
    "values",
    [NAMES, ["same"] * 5, [], [*NAMES, None], ["x", float("nan"), "y"]],
    ids=["many", "one", "none", "with None", "with NaN"],
)
def test_category_encoding_is_pandas(values: list) -> None:
    series = pd.Series(values, dtype=object)
    ours, theirs = columns._categorical(series), pd.Categorical(series)
    assert list(ours.categories) == list(theirs.categories)
    assert ours.codes.tolist() == theirs.codes.tolist() and ours.codes.dtype == theirs.codes.dtype
