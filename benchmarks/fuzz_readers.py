"""Fuzz every profiler-output reader and print, per reader, what 10,000 mutated inputs did.

Each input is a fixture from tests/fixtures/ mutated by a seeded mutator (truncation, flipped and
inserted bytes, shuffled/duplicated/deleted lines, missing fields, extreme numbers, UTF-16/Latin-1/
BOM encodings, CRLF/CR line ends, lines over 1 MB, binary garbage, another tool's file spliced in).
Target: zero tracebacks, hangs (per-input limit, default 2 s), crashes, raw escapes and wrong numbers.

    python benchmarks/fuzz_readers.py                      # 10,000 inputs per target, 2 workers
    python benchmarks/fuzz_readers.py --inputs 500 --target ncu-csv
    python benchmarks/fuzz_readers.py --show ncu-csv:1234 --out case.bin   # rebuild one input
    python benchmarks/fuzz_readers.py --outputs     # writers at symlinks, FIFOs, devices, /proc

The ``kernels`` target also builds the per-kernel table of every input (a damaged ``.ncu-rep`` whose
kernel names are lost reaches it); ``import`` runs the command itself (store, table rendered as text,
no raw escape sequence in what it prints; FIFOs and /dev/zero among the inputs); ``runfile`` loads
and stores hostile JSON-lines run files; ``numbers`` doubles one number of a real file and counts any
measured value that is then neither the old one, twice it, nor missing with a note as a wrong number. ``--outputs`` runs every writer with its output at a symlink, a
FIFO, a character device, a dangling symlink, a symlink loop and a /proc path, and a profiled
``python3`` that must be the one of the user's PATH (tests/fuzz/output_matrix.py).

Exit status 1 when any target had a traceback, hang or crash. See tests/fuzz/reader_fuzz.py.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fuzz"))

import output_matrix  # noqa: E402
import reader_fuzz  # noqa: E402


def _one(args: tuple[str, int, int, float]) -> reader_fuzz.Tally:
    target, inputs, seed, limit = args
    return reader_fuzz.fuzz_target(target, inputs, seed, limit)


def _show(spec: str, seed: int, out: str) -> None:
    target, _, index = spec.rpartition(":")
    all_seeds = reader_fuzz.seeds()
    case = reader_fuzz.build_case(target, int(index), seed, all_seeds, reader_fuzz.own_seeds(target, all_seeds))
    Path(out).write_bytes(case.data)
    print(f"{spec}: seed file {case.seed_name}, mutations {', '.join(case.mutations)}, {len(case.data)} bytes -> {out}")


def _outputs() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        writers = Path(tmp) / "writers"
        writers.mkdir()
        rows = [*output_matrix.output_matrix(writers), output_matrix.profiled_command(Path(tmp))]
    print(f"{'writer':<20}{'output at':<18}outcome")
    for row in rows:
        print(f"{row.writer:<20}{row.place:<18}{row.outcome}")
    failed = [row for row in rows if row.outcome.startswith("FAILED")]
    print(f"\n{len(rows)} cases, {len(failed)} failed")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per target")
    parser.add_argument("--target", action="append", help="a reader NAME, 'sniff' or 'detect' (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=float, default=2.0, help="seconds one input may take")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show", metavar="TARGET:INDEX", help="write one input to --out and stop")
    parser.add_argument("--out", default="fuzz-case.bin")
    parser.add_argument("--outputs", action="store_true", help="run the writers' path matrix and stop")
    args = parser.parse_args()
    if args.show:
        _show(args.show, args.seed, args.out)
        return 0
    if args.outputs:
        return _outputs()
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
    factors = ", ".join(f"{t} {f}x" for t, f in reader_fuzz.LIMIT_FACTOR.items())
    print(
        f"\n{total} inputs, seed {args.seed}, limit {args.limit} s per input ({factors}); "
        f"{len(failures)} distinct failure(s)"
    )
    for line in failures:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
