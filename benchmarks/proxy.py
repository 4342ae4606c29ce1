"""Service proxy: full and incremental syncs of 1,000 Services x 10 endpoints, and idle CPU.

In a network namespace of its own (real iptables, nf_tables backend, or real nftables with
--proxy-mode nftables), with generated Services and EndpointSlices put straight into the
proxy's informer caches (no API server: what is measured is the proxy's own work and the
kernel's), alternating in each trial:
- the floor: the very rules the proxy's full sync writes, loaded into a fresh namespace:
  a plain `iptables-restore` (the tables are replaced whole), or `nft -f` of the table;
- iptables mode: the same input with `--noflush` into the proxy's namespace (how the proxy
  must write: other programs' rules in nat and filter stay);
- the proxy's full sync (Proxier.sync(full=True): assemble every chain; iptables: one
  iptables-save, then one restore of the chains that differ from it (none when nothing
  drifted) and any missing jumps; nftables: one `nft -f` that deletes and rewrites the
  proxy's table);
then (iptables mode) a full sync that finds a rule added by hand to every chain of the
proxy and must rewrite them all, an incremental sync after one endpoint of one Service
changed, and the proxy's CPU while idle (its periodic syncs, which write nothing when
nothing changed).

Targets: full sync <= 1.6 x the floor; incremental sync <= 100 ms; idle CPU <= 1% of a core.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from minikube_py.api import Obj

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.apiserver import BenchmarkError  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.kubeconfig import ClientConfig  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.proxy.iptables import IPTables  # noqa: E402
from minikube_py.proxy.nftrules import table_input  # noqa: E402
from minikube_py.proxy.proxier import MODES, Proxier  # noqa: E402
from minikube_py.proxy.rules import ProxyConfig, restore_input  # noqa: E402

NETNS = f"mkpb-{os.getpid()}"


def service(i: int) -> Obj:
    return {"metadata": {"name": f"svc-{i}", "namespace": "bench", "uid": str(i)},
            "spec": {"type": "ClusterIP", "clusterIP": f"10.96.{i // 250}.{i % 250 + 2}",
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP",
                                "targetPort": 8080}]}}


def endpoint_slice(i: int, endpoints: int, generation: int = 0) -> Obj:
    return {"metadata": {"name": f"svc-{i}-abc", "namespace": "bench",
                         "labels": {"kubernetes.io/service-name": f"svc-{i}"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080 + generation, "protocol": "TCP"}],
            "endpoints": [{"addresses": [f"10.{100 + i // 250}.{i % 250}.{e + 1}"],
                           "nodeName": f"node-{e % 3}", "conditions": {"ready": True}}
                          for e in range(endpoints)]}


def netns(*command: str, stdin: str | None = None) -> float:
    """Run in the benchmark's namespace; the wall time it took."""
    started = time.perf_counter()
    done = subprocess.run(["nsenter", f"--net=/var/run/netns/{NETNS}", *command],
                          input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchmarkError(f"{' '.join(command)}: {done.stderr.strip()[:300]}")
    return time.perf_counter() - started


def plain_restore(text: str, mode: str) -> float:
    """The floor: `iptables-restore` (tables replaced whole), or `nft -f` of the table,
    into a fresh namespace."""
    name = f"{NETNS}-floor"
    command = ["iptables-restore"] if mode == "iptables" else ["nft", "-f", "-"]
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        started = time.perf_counter()
        done = subprocess.run(["nsenter", f"--net=/var/run/netns/{name}", *command],
                              input=text, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)
    if done.returncode != 0:
        raise BenchmarkError(f"{command[0]}: {done.stderr.strip()[:300]}")
    return elapsed


async def measure(args: argparse.Namespace) -> list[Row]:
    services = 200 if args.quick else args.services
    trials = 3 if args.quick else 5
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    try:
        return await _measure(services, args.endpoints, trials, args.quick, args.proxy_mode)
    finally:
        subprocess.run(["ip", "netns", "del", NETNS], check=False)


async def _measure(services: int, endpoints: int, trials: int, quick: bool, mode: str
                   ) -> list[Row]:
    client = Client(ClientConfig(server="http://127.0.0.1:1"))
    sync_period = 10.0 if quick else 30.0
    proxier = Proxier(client, ProxyConfig("node-0", "10.244.0.0/16"),
                      netns=f"/var/run/netns/{NETNS}", mode=mode, sync_period=sync_period)
    for i in range(services):
        proxier.services.store.put(service(i))
        proxier.slices.store.put(endpoint_slice(i, endpoints))
        proxier._dirty(f"bench/svc-{i}")
    started = time.perf_counter()
    await proxier.sync(full=True)
    first = time.perf_counter() - started
    written = proxier.writer.written
    if mode == "iptables":
        full_text = restore_input(written, {}, stale={})
        chains = sum(1 for line in full_text.splitlines() if line.startswith(":"))
        kinds = ("floor", "noflush", "proxy")
    else:
        full_text = table_input(written)
        chains = len(written.chains)
        kinds = ("floor", "proxy")
    lines = full_text.count("\n")
    floors, noflush, fulls = [], [], []
    for trial in range(trials):
        order = kinds if trial % 2 == 0 else kinds[::-1]
        for kind in order:
            if kind == "floor":
                floors.append(plain_restore(full_text, mode))
            elif kind == "noflush":
                noflush.append(netns("iptables-restore", "-w", "5", "--noflush",
                                     stdin=full_text))
            else:
                started = time.perf_counter()
                await proxier.sync(full=True)
                fulls.append(time.perf_counter() - started)
    ratios = [f / r for f, r in zip(fulls, floors, strict=True)]
    repairs: list[float] = []
    if mode == "iptables":
        # Drift everywhere: a rule added behind the proxy's back to every chain of its,
        # so the full sync finds no chain as it left it and rewrites them all.
        drift = "".join(f"*{table}\n" + "".join(f":{name} - [0:0]\n" for name in chains)
                        + "".join(f"-A {name} {rule}\n"
                                  for name, rules in chains.items() for rule in rules)
                        + "".join(f"-A {name} -j RETURN\n" for name in chains)
                        + "COMMIT\n" for table, chains in written.items())
        iptables = IPTables(f"/var/run/netns/{NETNS}")
        for _ in range(max(trials // 2, 1)):
            await iptables.restore(drift)
            started = time.perf_counter()
            await proxier.sync(full=True)
            repairs.append(time.perf_counter() - started)
    incrementals = []
    for trial in range(trials * 2):
        changed = copy.deepcopy(proxier.slices.store.get(f"bench/svc-{trial}-abc"))
        assert changed is not None
        changed["endpoints"][0]["addresses"] = [f"10.99.{trial}.1"]
        proxier.slices.store.put(changed)
        proxier._dirty(f"bench/svc-{trial}")
        started = time.perf_counter()
        await proxier.sync(full=False)
        incrementals.append(time.perf_counter() - started)
    idle_window = 3 * sync_period
    task = asyncio.create_task(proxier.sync_loop())
    cpu_before, wall_before = time.process_time(), time.perf_counter()
    await asyncio.sleep(idle_window)
    idle = (time.process_time() - cpu_before) / (time.perf_counter() - wall_before)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await client.close()
    share = statistics.median(ratios)
    incremental = statistics.median(incrementals) * 1000

    def ms(values: list[float]) -> str:
        return ", ".join(f"{v * 1000:.0f}" for v in values)

    size = f"{services:,} Services x {endpoints} endpoints ({lines:,} lines, {chains:,} chains)"
    floor = "iptables-restore of the proxy's input" if mode == "iptables" else (
        "nft -f of the proxy's table")
    rows = [(f"floor: {floor}, {size}",
             f"{statistics.median(floors) * 1000:.0f} ms (trials {ms(floors)})", "", "")]
    against_noflush = ""
    if noflush:
        rows.append(("the same input with --noflush, into the proxy's tables",
                     f"{statistics.median(noflush) * 1000:.0f} ms (trials {ms(noflush)})",
                     "", ""))
        noflush_ratios = [f / r for f, r in zip(fulls, noflush, strict=True)]
        against_noflush = f"{statistics.median(noflush_ratios):.2f} x the --noflush restore; "
    rows.append(
        ("proxy full sync, same rules",
         f"{statistics.median(fulls) * 1000:.0f} ms (trials {ms(fulls)}); "
         f"{share:.2f} x the floor (ratios {', '.join(f'{r:.2f}' for r in ratios)}); "
         f"{against_noflush}first sync with every Service new {first * 1000:.0f} ms",
         "<= 1.6 x the floor", verdict(share <= 1.6)))
    if repairs:
        floor_median = statistics.median(floors)
        rows.append(
            ("proxy full sync that finds a rule added to every chain and rewrites them all",
             f"{statistics.median(repairs) * 1000:.0f} ms (trials {ms(repairs)}); "
             f"{statistics.median(repairs) / floor_median:.2f} x the floor's median", "", ""))
    return [
        *rows,
        ("incremental sync after one endpoint change",
         f"median {incremental:.1f} ms, max {max(incrementals) * 1000:.1f} ms "
         f"({len(incrementals)} trials)", "<= 100 ms", verdict(incremental <= 100)),
        (f"proxy CPU while idle, {services:,} Services",
         f"{idle:.2%} of a core over {idle_window:.0f} s (a sync every {sync_period:.0f} s)",
         "<= 1% of a core", verdict(idle <= 0.01)),
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--endpoints", type=int, default=10)
    parser.add_argument("--proxy-mode", default="iptables", choices=sorted(MODES))


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "service proxy", "proxy.py", measure,
                  add_arguments=add_arguments,
                  note=lambda args: f"--proxy-mode {args.proxy_mode}")


if __name__ == "__main__":
    main()
