"""ncu 2023+ text details: rule paragraphs separated by '----- ------' lines are each kept whole
(issue 28, item 7), on a real RTX 5060 Laptop page pasted in a README (SOURCES.md)."""

from __future__ import annotations

import pytest
from fixture_paths import NCU_TEXT_RULE_SEPARATORS

from gpuprof import readers
from gpuprof.readers import ncu_text


def test_every_rule_paragraph_after_a_separator_is_kept_whole() -> None:
    assert readers.detect(NCU_TEXT_RULE_SEPARATORS) is ncu_text
    (launch,) = readers.read(NCU_TEXT_RULE_SEPARATORS).launches
    rules = launch.attributes["rules"].split("\n")
    assert len(rules) == 6
    assert rules[4] == (
        "OPT: Est. Speedup: 22.11% One or more SMSPs have a much higher number of active cycles "
        "than the average number of active cycles. Maximum instance value is 33.12% above the "
        "average, while the minimum instance value is 15.31% below the average."
    )
    assert rules[5].startswith("OPT: Est. Speedup: 22.08% One or more L1 Slices")
    assert rules[5].endswith("15.39% below the average.")


def test_the_separator_starts_no_table_and_the_metrics_stay_right() -> None:
    (launch,) = readers.read(NCU_TEXT_RULE_SEPARATORS).launches
    assert launch.kernel.startswith("gemv_kernel(const __half *")
    assert launch.value("kernel_duration") == pytest.approx(962.50e-6)  # Duration  us  962.50
    names = [metric.name for metric in launch.metrics]
    assert not any(name.startswith(("OPT", "One or more", "Maximum")) for name in names)
    assert launch.metric("Total SMSP Elapsed Cycles").value == 168_670_520
