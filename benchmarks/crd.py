"""Benchmark: what CustomResourceDefinitions cost the API server, against built-in kinds.

Run from the repository root as `.venv/bin/python benchmarks/crd.py` (options: --quick,
--no-append). It starts a private etcd (data on /dev/shm) and an API server with request
logging off, then:

    1. creates/s of a custom resource whose schema has 50 fields and 5 CEL rules
       (x-kubernetes-validations), against creates/s of ConfigMaps carrying the same 50
       values, 64 concurrent clients, in alternating trials on the same server; the median
       trial of each and their ratio. Target: >= 70% of the ConfigMap rate
    2. the prometheus-operator CRDs (../shared/data/crds/prometheus-operator, found by
       walking up from the repository) applied one after the other with server-side apply,
       as `kubectl apply --server-side` sends them (JSON, application/apply-patch+yaml),
       against the same file bytes applied the same way as ConfigMaps, on a fresh etcd and
       API server per trial, the order alternating; the median seconds of each and their
       ratio. Target: <= 2x the ConfigMaps' time

Appends its table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    BenchmarkError,
    ConnectionPool,
    api_server,
    create_all,
    create_namespace,
    progress,
)
from benchmarks.etcd_raw import scratch_directory  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.cluster.etcd import EtcdProcess  # noqa: E402

GROUP = "bench.example.com"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
APPLY = "application/apply-patch+yaml"
NAMESPACE = "bench"
FIELDS = 50
# The prometheus-operator CRDs: ../shared/data/crds from the checkout, or a worktree's
# ancestor; never copied into the project.
PROMETHEUS_CRDS = next((parent / "shared/data/crds/prometheus-operator"
                        for parent in REPO.parents
                        if (parent / "shared/data/crds/prometheus-operator").is_dir()), None)


@dataclass(frozen=True)
class Sizes:
    """How much work each phase does."""

    creates: int  # per create trial
    create_trials: int
    apply_trials: int
    concurrency: int = 64


FULL = Sizes(creates=2000, create_trials=5, apply_trials=5)
QUICK = Sizes(creates=64, create_trials=1, apply_trials=1)


# -- the custom resource -------------------------------------------------------------------

def field_schema(index: int) -> dict[str, Any]:
    """Field fNN of the spec: strings, integers and booleans in turn, each constrained."""
    match index % 3:
        case 0:
            return {"type": "string", "maxLength": 64, "pattern": "^[a-z][a-z0-9-]*$"}
        case 1:
            return {"type": "integer", "minimum": 0, "maximum": 1_000_000}
        case _:
            return {"type": "boolean"}


RULES = [
    {"rule": "self.f01 <= self.f04", "message": "f01 must not exceed f04"},
    {"rule": "self.f00.startsWith('n')", "message": "f00 must start with n"},
    {"rule": "size(self.f03) + size(self.f06) < 120"},
    # the message joins a bounded field: string() of a number has no size bound in
    # upstream's estimate, so 'f07 is ' + string(self.f07) is refused as too costly
    {"rule": "!self.f02 || self.f07 > 0",
     "messageExpression": "self.f00 + ' needs a positive f07'"},
    {"rule": "self.f09 in ['name-a', 'name-b', 'name-c']", "reason": "FieldValueInvalid"},
]


def definition() -> dict[str, Any]:
    """A namespaced CRD whose spec has FIELDS required fields and the 5 CEL rules."""
    names = [f"f{index:02d}" for index in range(FIELDS)]
    spec = {"type": "object", "required": names,
            "properties": {name: field_schema(index) for index, name in enumerate(names)},
            "x-kubernetes-validations": RULES}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                               "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object", "properties": {"spec": spec}}}}]}}


def field_values(index: int) -> dict[str, Any]:
    """Values for the 50 fields that pass every rule (f09 cycles through its three)."""
    values: dict[str, Any] = {}
    for field in range(FIELDS):
        name = f"f{field:02d}"
        match field % 3:
            case 0:
                values[name] = f"name-{'abc'[index % 3]}" if field == 9 else f"n{field}-{index}"
            case 1:
                values[name] = field * 1000 + index % 1000
            case _:
                values[name] = field % 2 == 0
    return values


def widget(name: str, index: int) -> bytes:
    return orjson.dumps({"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                         "metadata": {"name": name}, "spec": field_values(index)})


def configmap(name: str, index: int) -> bytes:
    """A ConfigMap with the same 50 values (as strings: ConfigMap data is strings)."""
    data = {key: orjson.dumps(value).decode().strip('"')
            for key, value in field_values(index).items()}
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                         "data": data})


async def until_served(pool: ConnectionPool, path: str, timeout: float = 60) -> None:
    """Poll GET path until it answers 200 (a definition's resource is being served)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            await pool.request("GET", path)
            return
        except BenchmarkError:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.05)


async def refused_by_rule(pool: ConnectionPool, path: str) -> None:
    """A widget that breaks the first rule is refused with its message: the rules run."""
    body = orjson.loads(widget("invalid", 0))
    body["spec"]["f01"] = body["spec"]["f04"] + 1
    answer = orjson.loads(await pool.request("POST", path, orjson.dumps(body), expect=422))
    if RULES[0]["message"] not in answer.get("message", ""):
        raise BenchmarkError(f"the invalid widget was refused for another reason: {answer}")


@asynccontextmanager
async def server(tmp: Path, concurrency: int) -> AsyncIterator[ConnectionPool]:
    """A fresh etcd and API server with the benchmark's namespace."""
    async with EtcdProcess(tmp / "etcd") as etcd:
        async with api_server(etcd, tmp / "apiserver.log", "uvloop", concurrency) as (pool, _):
            await create_namespace(pool, NAMESPACE)
            yield pool


async def creates(tmp: Path, sizes: Sizes) -> Row:
    """Alternating trials of ConfigMap and custom resource creates on one server."""
    rates: dict[str, list[float]] = {"configmaps": [], "widgets": []}
    paths = {"configmaps": f"/api/v1/namespaces/{NAMESPACE}/configmaps",
             "widgets": f"/apis/{GROUP}/v1/namespaces/{NAMESPACE}/widgets"}
    makers = {"configmaps": configmap, "widgets": widget}
    async with server(tmp, sizes.concurrency) as pool:
        await pool.request("POST", CRDS_PATH, orjson.dumps(definition()), expect=201)
        await until_served(pool, paths["widgets"])
        await refused_by_rule(pool, paths["widgets"])
        for trial in range(sizes.create_trials):
            order = ("configmaps", "widgets") if trial % 2 == 0 else ("widgets", "configmaps")
            for kind in order:
                progress(f"{kind}: {sizes.creates:,} creates, trial {trial + 1} of "
                         f"{sizes.create_trials}")
                bodies = [makers[kind](f"t{trial}-{index:05d}", index)
                          for index in range(sizes.creates)]
                elapsed = await create_all(pool, paths[kind], bodies)
                rates[kind].append(sizes.creates / elapsed)
    configmaps, widgets = (statistics.median(rates[kind]) for kind in ("configmaps", "widgets"))
    ratio = widgets / configmaps
    trials = "; ".join(f"{kind} " + ", ".join(f"{rate:,.0f}" for rate in rates[kind])
                       for kind in ("widgets", "configmaps"))
    return (f"custom resource creates/s ({FIELDS}-field schema, {len(RULES)} CEL rules) vs "
            "ConfigMaps with the same 50 values",
            f"{widgets:,.0f}/s vs {configmaps:,.0f}/s ({ratio:.0%}; medians of "
            f"{sizes.create_trials} trials of {sizes.creates:,}: {trials})",
            ">= 70% of ConfigMaps", verdict(ratio >= 0.7))


class FileLoader(yaml.CSafeLoader):
    """YAML as Kubernetes reads it: a plain `=` is the string "=" (YAML 1.1's value key
    type is unknown to Go's YAML), as in the prometheus-operator files' enums."""


FileLoader.add_constructor("tag:yaml.org,2002:value", FileLoader.construct_yaml_str)


def prometheus_documents() -> list[tuple[str, str, bytes]]:
    """(CRD name, the file's text, the CRD as JSON) of each prometheus-operator file."""
    if PROMETHEUS_CRDS is None:
        raise BenchmarkError("no shared/data/crds/prometheus-operator above the repository")
    documents = []
    for path in sorted(PROMETHEUS_CRDS.glob("*.yaml")):
        text = path.read_text()
        crd = yaml.load(text, Loader=FileLoader)
        documents.append((crd["metadata"]["name"], text, orjson.dumps(crd)))
    return documents


async def apply_each(pool: ConnectionPool, requests: list[tuple[str, bytes]]) -> float:
    """Server-side apply each (path, body) in turn, as kubectl does (each creates its
    object: 201); the seconds it took."""
    started = time.perf_counter()
    for path, body in requests:
        await pool.request("PATCH", path, body, expect=201, content_type=APPLY)
    return time.perf_counter() - started


async def applies(tmp: Path, sizes: Sizes) -> Row:
    """The prometheus-operator CRDs against the same bytes as ConfigMaps, fresh servers."""
    documents = prometheus_documents()
    query = "?fieldManager=bench&fieldValidation=Strict"
    requests = {
        "CRDs": [(f"{CRDS_PATH}/{name}{query}", body) for name, _, body in documents],
        "ConfigMaps": [
            (f"/api/v1/namespaces/{NAMESPACE}/configmaps/{name}{query}",
             orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                           "data": {"crd.yaml": text}}))
            for name, text, _ in documents]}
    seconds: dict[str, list[float]] = {"CRDs": [], "ConfigMaps": []}
    for trial in range(sizes.apply_trials):
        order = ("CRDs", "ConfigMaps") if trial % 2 == 0 else ("ConfigMaps", "CRDs")
        async with server(tmp / f"apply-{trial}", 1) as pool:
            for kind in order:
                progress(f"prometheus-operator {kind}: server-side apply, trial {trial + 1} "
                         f"of {sizes.apply_trials}")
                seconds[kind].append(await apply_each(pool, requests[kind]))
    crds, configmaps = (statistics.median(seconds[kind]) for kind in ("CRDs", "ConfigMaps"))
    ratio = crds / configmaps
    size = sum(len(text.encode()) for _, text, _ in documents) / 1e6
    trials = "; ".join(f"{kind} " + ", ".join(f"{value:.2f}" for value in seconds[kind])
                       for kind in ("CRDs", "ConfigMaps"))
    return (f"server-side apply of the {len(documents)} prometheus-operator CRDs "
            f"({size:.1f} MB of YAML) vs the same bytes as ConfigMaps",
            f"{crds:.2f} s vs {configmaps:.2f} s ({ratio:.2f}x; medians of "
            f"{sizes.apply_trials} trials, s: {trials})",
            "<= 2x the ConfigMaps", verdict(ratio <= 2.0))


async def measure(args: argparse.Namespace) -> list[Row]:
    sizes = QUICK if args.quick else FULL
    with scratch_directory() as tmp:
        return [await creates(Path(tmp) / "creates", sizes),
                await applies(Path(tmp), sizes)]


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "CustomResourceDefinitions", "crd.py", measure)


if __name__ == "__main__":
    main()
