"""Launching suites over MPI ranks: ``python -m hetnn bench scaling`` (and ``hetnn.bench.run("scaling")`` from a
notebook, whose process must not start MPI) run ``mpirun -np N python -m hetnn bench scaling --distributed``."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple


def mpirun_path() -> str:
    """The mpirun of hetnn[distributed]'s Open MPI (beside this Python), else the one on PATH."""
    beside = Path(sys.executable).with_name("mpirun")
    found = str(beside) if beside.exists() else shutil.which("mpirun")
    if not found:
        raise ValueError("the scaling suite needs MPI: pip install 'hetnn[distributed]' (mpi4py and Open MPI), or "
                         "put an MPI library's mpirun on PATH")
    return found


def default_ranks() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(2, cores)


# Ranks launched on this machine (no hostfile: Open MPI is told to oversubscribe) per core it may use: beyond a few
# per core a scaling run measures the scheduler, and `--ranks 100000` started 100,000 processes.
RANKS_PER_CORE = 4


def check_ranks(ranks: Optional[int], hostfile: Optional[str]) -> int:
    if ranks is None:
        ranks = default_ranks()
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"--ranks must be an integer >= 1, got {ranks!r}")
    if hostfile is not None and not os.path.isfile(hostfile):
        raise ValueError(f"--hostfile: no such file {hostfile!r}")
    cores = default_ranks() if hostfile is None else 0
    if hostfile is None and ranks > RANKS_PER_CORE * cores:
        raise ValueError(f"--ranks {ranks}: this machine lets hetnn use {cores} core(s), and at most "
                         f"{RANKS_PER_CORE} ranks per core ({RANKS_PER_CORE * cores}) are launched on one machine; "
                         f"for more ranks give a --hostfile with the machines' slots (Open MPI then refuses more "
                         f"ranks than slots)")
    return ranks


def command(bench_args: List[str], ranks: int, hostfile: Optional[str], threads: Optional[str]
            ) -> Tuple[List[str], Dict[str, str], List[str]]:
    """(argv, environment, notes) of the mpirun that runs ``python -m hetnn bench BENCH_ARGS --distributed``."""
    argv = [mpirun_path(), "-np", str(ranks)]
    notes = []
    if hostfile:
        argv += ["--hostfile", hostfile]
    else:  # one machine: as many ranks as asked, whatever slots Open MPI counts
        argv += ["--oversubscribe"]
    if threads and any(int(t) > 1 for t in str(threads).split(",") if t.strip().isdigit()):
        argv += ["--bind-to", "none"]  # Open MPI binds each rank to one core by default
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "OMPI_ALLOW_RUN_AS_ROOT" not in env:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        notes.append("running as root: OMPI_ALLOW_RUN_AS_ROOT set for mpirun")
    argv += [sys.executable, "-m", "hetnn", "bench", *bench_args, "--distributed"]
    return argv, env, notes


def run(bench_args: List[str], ranks: int, hostfile: Optional[str], threads: Optional[str],
        capture: bool = False) -> subprocess.CompletedProcess:
    argv, env, notes = command(bench_args, ranks, hostfile, threads)
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    return subprocess.run(argv, env=env, text=True, capture_output=capture)


def report(opts: Any, say: Optional[Callable[[str], None]] = None) -> Any:
    """hetnn.bench.run("scaling") outside MPI: the suite launched as ``python -m hetnn bench scaling`` over
    ``opts.ranks`` ranks, its rows and text read back into a Report."""
    import json
    import tempfile

    from .result import Report

    ranks = check_ranks(opts.ranks, opts.hostfile)
    args = ["scaling", "--repeat", str(opts.repeat), "--no-progress"]
    if opts.quick:
        args.append("--quick")
    counts = [t for t in opts.thread_counts() if t is not None]
    threads = ",".join(str(t) for t in counts) if counts else None
    if threads:
        args += ["--threads", threads]
    if not (isinstance(opts.device, str) and opts.device == "all"):
        args += ["--device", ",".join(d.id for d in opts.devices())]
    with tempfile.TemporaryDirectory(prefix="hetnn-scaling-") as tmp:
        prefix = os.path.join(tmp, "scaling")
        p = run(args + ["--output", prefix], ranks, opts.hostfile, threads, capture=True)
        if p.returncode != 0:
            raise RuntimeError(f"hetnn.bench.run('scaling'): the MPI job failed (exit {p.returncode}):\n"
                               f"{(p.stderr or '')[-2000:]}")
        with open(prefix + ".json") as f:
            data = json.load(f)
    text = "\n".join(line for line in p.stdout.splitlines() if not line.startswith("wrote "))
    if say is not None:
        say(text)
    return Report("scaling", data["rows"], text, data["environment"])
