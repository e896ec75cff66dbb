"""The fast slice of the reader fuzzing: 150 mutated fixtures per reader (40 .ncu-rep), sniff and detect.

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


@pytest.mark.parametrize("target", [pytest.param(t, marks=pytest.mark.slow) if t in HEAVY else t for t in TARGETS])
def test_reader_survives_mutated_inputs(target, all_seeds):
    inputs = INPUTS_OF.get(target, INPUTS)
    tally = reader_fuzz.fuzz_target(
        target, inputs, base_seed=0, limit=2.0, own=reader_fuzz.own_seeds(target, all_seeds)
    )
    assert tally.inputs == inputs
    failures = list(reader_fuzz.iter_failures([tally]))
    assert failures == [], (
        f"{failures}; rebuild one with: python benchmarks/fuzz_readers.py --show {failures[0].split()[0]}"
    )
    if target not in ("nsys-rep", "numbers"):  # nsys-rep always answers with the nsys command to run
        assert tally.counts[reader_fuzz.IMPORTED] > 0 and tally.counts[reader_fuzz.CLEAN] > 0
