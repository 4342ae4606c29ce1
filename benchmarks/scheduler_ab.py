"""Benchmark: the scheduling algorithm alone, two source trees compared in one process.

Run as `.venv/bin/python benchmarks/scheduler_ab.py /work/main /work/wt/BRANCH` (options:
--pods N (2000) per run, --rounds N (3), --sizes 1000,5000, --workloads
requests,spread,spread+affinity). Each tree's `minikube_py` and `benchmarks` packages are
imported once, side by side (their modules swapped in `sys.modules` before each run), and
the trees take turns: in round 0 the first tree runs first, in round 1 the second, and so
on, so that both see the machine's load alike.

A run is benchmarks/scheduler.py's algorithm driver (`algorithm_scheduler` and
`algorithm_cycles`, as `algorithm_latencies` runs them; a tree older than those two cannot
be compared): N nodes in ten
zones with as many pods bound, then `--pods` cycles of a snapshot, PreFilter..Score and the
pod assumed on its node, this process's CPU time (time.process_time) summed over the cycles.
The workloads: pods with requests only, with the zone spread constraint (maxSkew 1) alone,
and with it and the preferred affinity term. `random` is seeded alike before every run, so
the hosts chosen (their hash is printed) must be the same for both trees when their
decisions are; across processes the random tie-breaks differ.

Printed: each run's CPU per pod and that of find_nodes_that_fit within it (PreFilter,
Filter and the chunks' bookkeeping), then each tree's means and their growth from the
first size to the last. Nothing is appended to RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import random
import statistics
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

PACKAGES = ("minikube_py", "benchmarks")
SEED = 20261130


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def import_tree(tree: str) -> dict[str, ModuleType]:
    """The tree's benchmark driver and everything it imports of ours, by module name."""
    for name in [name for name in sys.modules if _ours(name)]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        __import__("benchmarks.scheduler")
    finally:
        sys.path.remove(tree)
    return {name: module for name, module in sys.modules.items() if _ours(name)}


def use(modules: dict[str, ModuleType]) -> Any:
    """Make a tree's modules the imported ones (for imports made while it runs)."""
    for name in [name for name in sys.modules if _ours(name)]:
        del sys.modules[name]
    sys.modules.update(modules)
    return modules["benchmarks.scheduler"]


async def run(bench: Any, nodes: int, workload: str, pods: int
              ) -> tuple[float, float, str]:
    """One run: (CPU ms per pod, of it find_nodes_that_fit's, hash of the hosts chosen)."""
    spread, affinity = "spread" in workload, "affinity" in workload
    scheduler = bench.algorithm_scheduler(nodes, nodes, spread=spread, affinity=affinity)
    filtering = [0.0]
    find: Callable[..., Any] = scheduler.find_nodes_that_fit

    def timed_find(*args: Any) -> Any:
        started = time.process_time()
        try:
            return find(*args)
        finally:
            filtering[0] += time.process_time() - started

    scheduler.find_nodes_that_fit = timed_find
    random.seed(SEED)
    gc.collect()
    _, cpu_times, hosts = await bench.algorithm_cycles(scheduler, pods, spread=spread,
                                                       affinity=affinity)
    digest = hashlib.sha1("\n".join(hosts).encode()).hexdigest()[:12]
    return sum(cpu_times) / pods * 1000, filtering[0] / pods * 1000, digest


async def compare(args: argparse.Namespace) -> None:
    trees = {tree: import_tree(tree) for tree in args.trees}
    sizes = [int(size) for size in args.sizes.split(",")]
    workloads = args.workloads.split(",")
    results: dict[tuple[int, str, str], list[tuple[float, float, str]]] = {}
    for nodes in sizes:
        for workload in workloads:
            for round_ in range(args.rounds):
                order = args.trees if round_ % 2 == 0 else args.trees[::-1]
                for tree in order:
                    ms, filter_ms, digest = await run(use(trees[tree]), nodes, workload,
                                                      args.pods)
                    results.setdefault((nodes, workload, tree), []).append(
                        (ms, filter_ms, digest))
                    print(f"{nodes} {workload} {tree} round {round_}: {ms:.3f} ms per pod "
                          f"(find_nodes_that_fit {filter_ms:.3f}), hosts {digest}", flush=True)
    print()
    for workload in workloads:
        for tree in args.trees:
            means = []
            for nodes in sizes:
                runs = results[nodes, workload, tree]
                means.append(statistics.mean(ms for ms, _, _ in runs))
                print(f"{workload} {tree} {nodes}: mean {means[-1]:.3f} ms per pod (runs "
                      f"{', '.join(f'{ms:.3f}' for ms, _, _ in runs)}); find_nodes_that_fit "
                      f"{statistics.mean(f for _, f, _ in runs):.3f} ms; hosts "
                      f"{sorted({digest for _, _, digest in runs})}")
            if len(means) > 1:
                print(f"{workload} {tree} growth {sizes[0]} -> {sizes[-1]}: "
                      f"{means[-1] / means[0]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="source trees (repository roots)")
    parser.add_argument("--pods", type=int, default=2000, help="pods scheduled per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tree")
    parser.add_argument("--sizes", default="1000,5000", help="node counts")
    parser.add_argument("--workloads", default="requests,spread,spread+affinity")
    asyncio.run(compare(parser.parse_args()))


if __name__ == "__main__":
    main()
