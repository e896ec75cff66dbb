"""A training job with its phases marked as regions, on the set-ups of the ResNet study: run it under
``gpuprof profile`` to get time and energy per phase, then ``gpuprof compare --scaling``::

    gpuprof profile --energy --label cpu --devices 1 -- python -m gpuprof.workloads.training --setup cpu
    gpuprof profile --energy --label ddp2 --devices 2 -- python -m gpuprof.workloads.training --setup ddp:2

Set-ups: ``cpu``; ``cuda`` (one GPU); ``cuda-ddp`` (one GPU under DistributedDataParallel);
``ddp:N`` (N processes on 127.0.0.1: NCCL with one GPU each when CUDA is there, else gloo on the
CPU). Synthetic inputs and labels (seeded), random weights, nothing downloaded. Regions: "train"
(epochs of training batches; gpuprof's torch hooks add a "step" per optimizer step), "validation"
and "test" (forward passes without gradients), then "inference" with one "batch size" region per
size (index = the batch size), each of ``--repeats`` forwards; the latency table goes to stdout.
With DDP each rank records its own regions (rank from the process group); the data is split
between ranks, so the global batch stays the same.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

from gpuprof import regions
from gpuprof.workloads.models import build, parameters


@dataclass(frozen=True)
class Job:
    """What to train and how: model, set-up, data sizes, phases."""

    model: str = "resnet34"
    setup: str = "cpu"
    epochs: int = 1
    batch_size: int = 16
    train_batches: int = 3
    validation_batches: int = 1
    test_batches: int = 1
    inference_sizes: tuple[int, ...] = (1, 8)
    repeats: int = 3
    hidden: tuple[int, ...] = (50,)
    height: int = 148
    width: int = 197
    seed: int = 0
    threads: int | None = None  # torch threads per process (default: torch's; DDP CPU ranks share the cores)

    @property
    def processes(self) -> int:
        """Processes the set-up runs: N for ddp:N, 1 otherwise."""
        if self.setup.startswith("ddp:"):
            return int(self.setup.split(":", 1)[1])
        return 1

    @property
    def distributed(self) -> bool:
        return self.setup == "cuda-ddp" or self.setup.startswith("ddp:")


def parse_setup(setup: str) -> str:
    """``setup`` checked; ValueError naming the choices otherwise."""
    if setup in ("cpu", "cuda", "cuda-ddp"):
        return setup
    if setup.startswith("ddp:") and setup[4:].isdigit() and int(setup[4:]) >= 1:
        return setup
    raise ValueError(f"unknown set-up {setup!r}: choose cpu, cuda, cuda-ddp or ddp:N (N processes)")


def _device(job: Job, rank: int) -> Any:
    import torch

    wants_cuda = job.setup in ("cuda", "cuda-ddp") or (job.setup.startswith("ddp:") and torch.cuda.is_available())
    if wants_cuda:
        if not torch.cuda.is_available():
            raise SystemExit(f"set-up {job.setup} needs CUDA, and this PyTorch sees no GPU: use --setup cpu or ddp:N")
        return torch.device("cuda", rank % torch.cuda.device_count())
    return torch.device("cpu")


def _batches(
    job: Job, shape: tuple[int, ...], outputs: int, count: int, salt: int, rank: int, world: int, device: Any
) -> list[tuple[Any, Any]]:
    """``count`` synthetic batches (this rank's share of each global batch), made once before timing."""
    import torch

    per_rank = max(1, job.batch_size // world)
    generator = torch.Generator().manual_seed(job.seed * 1000 + salt * 100 + rank)
    made = []
    for _ in range(count):
        x = torch.randn((per_rank, *shape), generator=generator)
        y = (
            torch.randint(0, outputs, (per_rank,), generator=generator)
            if outputs > 1
            else torch.randn((per_rank, 1), generator=generator)
        )
        made.append((x.to(device), y.to(device)))
    return made


def _synchronise(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _evaluate(model: Any, batches: list[tuple[Any, Any]], name: str, device: Any) -> None:
    import torch

    model.eval()
    with regions.region(name), torch.no_grad():
        for x, _ in batches:
            model(x)
        _synchronise(device)


def _inference(job: Job, model: Any, shape: tuple[int, ...], device: Any, rank: int) -> list[tuple[int, float]]:
    """Per batch size, seconds per forward (median of ``repeats``), each size its own region."""
    import torch

    model.eval()
    latencies = []
    with regions.region("inference"), torch.no_grad():
        for size in job.inference_sizes:
            x = torch.randn((size, *shape)).to(device)
            model(x)  # warm-up, outside the timed region
            _synchronise(device)
            times = []
            with regions.region("batch size", index=size):
                for _ in range(job.repeats):
                    start = time.perf_counter()
                    model(x)
                    _synchronise(device)
                    times.append(time.perf_counter() - start)
            latencies.append((size, sorted(times)[len(times) // 2]))
    return latencies


def train(job: Job, rank: int = 0, world: int = 1) -> list[tuple[int, float]]:
    """One process's share of the job (all of it without DDP); returns its inference latencies."""
    import torch

    torch.manual_seed(job.seed)
    device = _device(job, rank)
    if job.threads:
        torch.set_num_threads(job.threads)
    model, spec = build(job.model, hidden=job.hidden, height=job.height, width=job.width)
    model = model.to(device)
    trained = model
    if job.distributed:
        from torch.nn.parallel import DistributedDataParallel

        trained = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    loss_of = torch.nn.CrossEntropyLoss() if spec.outputs > 1 else torch.nn.MSELoss()
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.01, momentum=0.9)
    data = _batches(job, spec.input_shape, spec.outputs, job.train_batches, 0, rank, world, device)
    validation = _batches(job, spec.input_shape, spec.outputs, job.validation_batches, 1, rank, world, device)
    test = _batches(job, spec.input_shape, spec.outputs, job.test_batches, 2, rank, world, device)
    if rank == 0:
        print(
            f"{spec.name}: {parameters(model):,} parameters; set-up {job.setup} on {device}, {world} process(es)",
            flush=True,
        )
    with regions.region("train"):
        for epoch in range(job.epochs):
            with regions.region("epoch", index=epoch):
                trained.train()
                for x, y in data:
                    loss = loss_of(trained(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                _synchronise(device)
            _evaluate(model, validation, "validation", device)
    _evaluate(model, test, "test", device)
    checksum = float(sum(p.detach().double().sum() for p in model.parameters()))
    # equal on every DDP rank; one write, line break included: the ranks share the (unbuffered) output,
    # and print() writes the line break apart, so two ranks' lines could run together
    sys.stdout.write(f"rank {rank}: parameter sum after training {checksum:.12g}\n")
    sys.stdout.flush()
    return _inference(job, model, spec.input_shape, device, rank)


def _rank_main(rank: int, job: Job, world: int, address: str) -> None:
    """One DDP rank: join the process group (NCCL on GPUs, gloo on CPUs), train, leave."""
    import torch
    import torch.distributed as dist

    os.environ["RANK"] = str(rank)  # gpuprof.regions reads the rank from it
    if _device(job, rank).type == "cpu" and not job.threads:  # the ranks share the cores: no oversubscription
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    backend = "nccl" if _device(job, rank).type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=address, rank=rank, world_size=world)
    try:
        latencies = train(job, rank, world)
        if rank == 0:
            _print_latencies(latencies)
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _print_latencies(latencies: list[tuple[int, float]]) -> None:
    print("batch size  latency per forward (s, median)  samples/s")
    for size, seconds in latencies:
        print(f"{size:>10}  {seconds:>32.6g}  {size / seconds:>9.4g}")


def run(job: Job) -> None:
    """The whole job: one process, or N DDP ranks on 127.0.0.1 (fork on CPUs, spawn with CUDA)."""
    if not job.distributed:
        _print_latencies(train(job))
        return
    import torch
    import torch.multiprocessing as mp

    world = job.processes
    address = f"tcp://127.0.0.1:{_free_port()}"
    if world == 1:
        _rank_main(0, job, 1, address)
        return
    method = "spawn" if torch.cuda.is_available() else "fork"
    mp.start_processes(_rank_main, args=(job, world, address), nprocs=world, start_method=method)


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gpuprof.workloads.training", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("resnet34", "cnn", "mlp"), default="resnet34")
    parser.add_argument("--setup", default="cpu", help="cpu, cuda, cuda-ddp or ddp:N")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16, help="global batch (split between DDP ranks)")
    parser.add_argument("--train-batches", type=int, default=3)
    parser.add_argument("--validation-batches", type=int, default=1)
    parser.add_argument("--test-batches", type=int, default=1)
    parser.add_argument("--inference-sizes", type=_sizes, default=(1, 8), help="batch sizes, e.g. 1,8,32")
    parser.add_argument("--repeats", type=int, default=3, help="timed forwards per inference batch size")
    parser.add_argument("--hidden", type=_sizes, default=(50,), help="mlp: hidden widths, e.g. 6400,3200,1664")
    parser.add_argument("--height", type=int, default=148)
    parser.add_argument("--width", type=int, default=197)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per process (default: torch's own; DDP ranks on CPUs: cores / ranks)",
    )
    args = parser.parse_args(argv)
    try:
        setup = parse_setup(args.setup)
    except ValueError as error:
        parser.error(str(error))
    run(
        Job(
            args.model,
            setup,
            args.epochs,
            args.batch_size,
            args.train_batches,
            args.validation_batches,
            args.test_batches,
            args.inference_sizes,
            args.repeats,
            args.hidden,
            args.height,
            args.width,
            args.seed,
            args.threads,
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
