"""Fuzz every profiler-output reader and print, per reader, what 10,000 mutated inputs did.

Each input is a fixture from tests/fixtures/ mutated by a seeded mutator (truncation, flipped and
inserted bytes, shuffled/duplicated/deleted lines, missing fields, extreme numbers, UTF-16/Latin-1/
BOM encodings, CRLF/CR line ends, lines over 1 MB, binary garbage, another tool's file spliced in).
Target: zero tracebacks, zero hangs (per-input limit, default 2 s), zero crashes.

    python benchmarks/fuzz_readers.py                      # 10,000 inputs per target, 2 workers
    python benchmarks/fuzz_readers.py --inputs 500 --target ncu-csv
    python benchmarks/fuzz_readers.py --show ncu-csv:1234 --out case.bin   # rebuild one input

Exit status 1 when any target had a traceback, hang or crash. See tests/fuzz/reader_fuzz.py.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fuzz"))

import reader_fuzz  # noqa: E402


def _one(args: tuple[str, int, int, float]) -> reader_fuzz.Tally:
    target, inputs, seed, limit = args
    return reader_fuzz.fuzz_target(target, inputs, seed, limit)


def _show(spec: str, seed: int, out: str) -> None:
    target, _, index = spec.rpartition(":")
    all_seeds = reader_fuzz.seeds()
    case = reader_fuzz.build_case(target, int(index), seed, all_seeds,
                                  reader_fuzz.own_seeds(target, all_seeds))
    Path(out).write_bytes(case.data)
    print(f"{spec}: seed file {case.seed_name}, mutations {', '.join(case.mutations)}, "
          f"{len(case.data)} bytes -> {out}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per target")
    parser.add_argument("--target", action="append", help="a reader NAME, 'sniff' or 'detect' (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=float, default=2.0, help="seconds one input may take")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show", metavar="TARGET:INDEX", help="write one input to --out and stop")
    parser.add_argument("--out", default="fuzz-case.bin")
    args = parser.parse_args()
    if args.show:
        _show(args.show, args.seed, args.out)
        return 0
    chosen = args.target or reader_fuzz.targets()
    with ProcessPoolExecutor(args.jobs) as pool:
        tallies = list(pool.map(_one, [(t, args.inputs, args.seed, args.limit) for t in chosen]))
    columns = ("inputs", *reader_fuzz.Tally("").counts, "time s", "slowest s")
    print(f"{'target':<22}" + "".join(f"{c:>13}" for c in columns))
    for tally in tallies:
        cells = (tally.inputs, *tally.counts.values(), f"{tally.seconds:.1f}", f"{tally.slowest:.3f}")
        print(f"{tally.target:<22}" + "".join(f"{c:>13}" for c in cells))
    failures = list(reader_fuzz.iter_failures(tallies))
    total = sum(t.inputs for t in tallies)
    print(f"\n{total} inputs, seed {args.seed}, limit {args.limit} s per input; "
          f"{len(failures)} distinct failure(s)")
    for line in failures:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
