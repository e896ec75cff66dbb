"""The fast slice of the reader fuzzing: 150 mutated fixtures per reader (40 .ncu-rep), sniff and detect.
The quick loop (``-m "not slow"``) reads the first ``QUICK`` of each; the rest are marked slow.

Every input must import (a Run the store can hold) or raise a one-line GpuprofError, within 2 s.
The full run (10,000 inputs per target) is ``python benchmarks/fuzz_readers.py``; a failure here
prints the case id, and ``benchmarks/fuzz_readers.py --show TARGET:INDEX`` rebuilds its bytes.
"""

from __future__ import annotations

import pytest
import reader_fuzz

INPUTS = 150
# .ncu-rep cases are read in a fresh interpreter each (crash containment): a quarter as many keeps the slice
# under a minute; the full run reads 10,000 of them like any other target
INPUTS_OF = {"ncu-rep": 40}
TARGETS = reader_fuzz.targets()
# The command-level targets store and render each input (about 0.5 s each): fewer inputs, and slow.
HEAVY = {"import": 25, "runfile": 25, "numbers": 30}
INPUTS_OF.update(HEAVY)
QUICK = 15  # cases per reader target in the quick loop


def _slices() -> list[object]:
    """(target, first, end) per slice: the first QUICK cases of a reader, then the rest (slow)."""
    found: list[object] = []
    for target in TARGETS:
        inputs = INPUTS_OF.get(target, INPUTS)
        if target in HEAVY:
            found.append(pytest.param(target, 0, inputs, marks=pytest.mark.slow, id=target))
            continue
        found.append(pytest.param(target, 0, QUICK, id=f"{target}-first"))
        found.append(pytest.param(target, QUICK, inputs, marks=pytest.mark.slow, id=f"{target}-rest"))
    return found


@pytest.fixture(scope="module")
def all_seeds() -> dict[str, bytes]:
    return reader_fuzz.seeds()


def test_every_reader_and_fixture_is_covered(all_seeds):
    from gpuprof.readers import modules

    assert len(TARGETS) == len(modules()) + len(reader_fuzz.SPECIAL_TARGETS)
    owned = {target: reader_fuzz.own_seeds(target, all_seeds) for target in TARGETS}
    # the readers with a real fixture of their own start from it; nvprof-text-summary's fixture
    # is the only one for its format
    assert "nvprof_text_summary_titanxp_babelstream.txt" in owned["nvprof-text-summary"]
    assert sum(1 for target in TARGETS if owned[target]) >= len(TARGETS) - 2


def test_mutations_are_reproducible_by_seed(all_seeds):
    own = reader_fuzz.own_seeds("ncu-csv", all_seeds)
    first = [reader_fuzz.build_case("ncu-csv", i, 0, all_seeds, own) for i in range(30)]
    again = [reader_fuzz.build_case("ncu-csv", i, 0, all_seeds, own) for i in range(30)]
    other = [reader_fuzz.build_case("ncu-csv", i, 1, all_seeds, own) for i in range(30)]
    assert first == again and first != other
    assert len({m for case in first for m in case.mutations}) >= 8


@pytest.mark.parametrize(("target", "first", "end"), _slices())
def test_reader_survives_mutated_inputs(target, first, end, all_seeds):
    tally = reader_fuzz.fuzz_target(
        target, end, base_seed=0, limit=2.0, own=reader_fuzz.own_seeds(target, all_seeds), first=first
    )
    assert tally.inputs == end - first
    failures = list(reader_fuzz.iter_failures([tally]))
    assert failures == [], (
        f"{failures}; rebuild one with: python benchmarks/fuzz_readers.py --show {failures[0].split()[0]}"
    )
    # over the whole slice (not the quick loop's few cases) both outcomes occur; nsys-rep always
    # answers with the nsys command to run
    if end - first > QUICK and target not in ("nsys-rep", "numbers"):
        assert tally.counts[reader_fuzz.IMPORTED] > 0 and tally.counts[reader_fuzz.CLEAN] > 0
