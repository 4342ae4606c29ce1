"""Property: no request, however malformed, gets a 5xx, and only a 2xx changes etcd.

Bodies and query strings are generated with hypothesis from our own schemas
(`minikube_py.api.schema`, the source of /openapi/v3) for every served kind and verb:
first a well-typed object (half of them with every optional field they leave out sent as
an explicit null, at every depth), then mutations of the kinds a fuzzer found answered
with 500 (wrong JSON types at any depth, nulls, empty keys, huge numbers, deep nesting),
and raw byte mutations (truncation, bytes that are not UTF-8, duplicate keys, YAML
aliases). They go to an API server of the test's own, on an etcd of its own with nothing
else writing once the server's own start-up writes are done (wait_for_start_up_writes),
so etcd's revision moves only when a request wrote something.

Second property: an explicit null is answered as if the field were absent, as upstream's
decoder reads it; a dry-run create or update of an object gets the same answer with its
left-out optional fields sent as nulls.

CI runs FIXED_CASES (2,000) with a fixed seed, then as many with a random seed that a
failure prints, and NULL_CASES (500) of the second property; MINIKUBE_PY_FUZZ_CASES=100000
runs that many instead.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from minikube_py.api.resources import RESOURCES, Resource
from minikube_py.api.schema import schema_for
from minikube_py.api.schema.types import Type
from minikube_py.process import free_port
from tests.api_helpers import wait_for_apf_settled, wait_for_start_up_writes

pytestmark = pytest.mark.slow

FIXED_SEED = 20261124
FIXED_CASES = 2000
CASES = int(os.environ.get("MINIKUBE_PY_FUZZ_CASES", FIXED_CASES))
NULL_CASES = CASES // 4
NAMESPACE = "fuzz"
SERVED = [r for r in RESOURCES if schema_for(r.group, r.version, r.kind) is not None]
PATCH_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json",
               "application/json-patch+json", "application/apply-patch+yaml")
QUERY_KEYS = ("labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
              "resourceVersionMatch", "timeoutSeconds", "dryRun", "fieldManager",
              "fieldValidation", "force", "gracePeriodSeconds", "propagationPolicy",
              "allowWatchBookmarks", "sendInitialEvents", "pretty")


@dataclass
class Cluster:
    api: http.client.HTTPConnection
    etcd: http.client.HTTPConnection
    api_port: int
    etcd_port: int
    log: Path  # etcd's and the API server's output

    def server_errors(self) -> str:
        """The end of the log: the traceback the API server logged for a 5xx."""
        return self.log.read_text(errors="replace")[-4000:]


def _wait(url: str, what: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            host, port = urllib.parse.urlsplit(url).netloc.split(":")
            connection = http.client.HTTPConnection(host, int(port), timeout=2)
            connection.request("GET", urllib.parse.urlsplit(url).path)
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        assert process.poll() is None, f"{what} exited"
        assert time.monotonic() < deadline, f"{what} did not become ready"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def cluster(fast_tmp: Path) -> Iterator[Cluster]:
    """etcd and an API server of this module's own, nothing else writing (in the session's
    scratch dir, which the next session removes, stopping both, if this one crashed)."""
    if shutil.which("etcd") is None:
        pytest.skip("etcd is not installed")
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-", dir=fast_tmp))
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    log = (scratch / "log").open("wb")
    etcd = subprocess.Popen(
        ["etcd", "--name=fuzz", f"--data-dir={scratch / 'etcd'}",
         f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
         f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
         f"--initial-cluster=fuzz={peer_url}", "--log-level=error"], stdout=log, stderr=log)
    api = subprocess.Popen(
        [sys.executable, "-m", "minikube_py.apiserver", f"--etcd-servers={etcd_url}",
         "--bind-address=127.0.0.1", f"--port={api_port}"], stdout=log, stderr=log,
        env={**os.environ, "TMPDIR": str(scratch)})  # names the scratch dir, for the sweep
    try:
        _wait(f"{etcd_url}/health", "etcd", etcd)
        _wait(f"http://127.0.0.1:{api_port}/readyz", "the API server", api)
        connection = http.client.HTTPConnection("127.0.0.1", api_port, timeout=10)
        connection.request("POST", "/api/v1/namespaces", json.dumps(
            {"metadata": {"name": NAMESPACE}}), {"Content-Type": "application/json"})
        assert connection.getresponse().read() and True
        wait_for_start_up_writes(connection)
        yield Cluster(http.client.HTTPConnection("127.0.0.1", api_port, timeout=10),
                      http.client.HTTPConnection("127.0.0.1", etcd_port, timeout=10),
                      api_port, etcd_port, scratch / "log")
    finally:
        for process in (api, etcd):
            process.terminate()
            process.wait(10)
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)


# -- generating requests ---------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=8),
                    st.floats(allow_nan=False, allow_infinity=False))


def value_of(schema: Type, depth: int = 0) -> st.SearchStrategy[Any]:
    """A value that fits `schema` (a few of its fields, at bounded depth)."""
    if depth > 4:
        return st.just({} if schema.kind in ("object", "map", "any") else None)
    if schema.kind == "object":
        names = sorted(schema.fields)
        return st.lists(st.sampled_from(names), max_size=4, unique=True).flatmap(
            lambda chosen: st.fixed_dictionaries(
                {name: value_of(schema.fields[name].type, depth + 1) for name in chosen})
        ) if names else st.just({})
    if schema.kind == "map":
        items = schema.items or Type("string")
        return st.dictionaries(st.text(min_size=1, max_size=6), value_of(items, depth + 1),
                               max_size=2)
    if schema.kind == "array":
        return st.lists(value_of(schema.items or Type("string"), depth + 1), max_size=2)
    return {
        "string": st.text(max_size=10), "integer": st.integers(-5, 10),
        "number": st.floats(-5, 5), "boolean": st.booleans(),
        "int-or-string": st.one_of(st.integers(0, 100), st.sampled_from(["25%", "http", ""])),
        "quantity": st.sampled_from(["1", "100m", "1Gi", "-1", "1e3"]),
    }.get(schema.kind, SCALARS)


def with_nulls(value: Any, schema: Type) -> Any:
    """The value with every optional field it leaves out sent as an explicit null, at every
    depth (upstream decodes such a null as if the field were absent)."""
    if schema.kind == "object" and isinstance(value, dict):
        for name, field in schema.fields.items():
            if name in value:
                with_nulls(value[name], field.type)
            elif not field.required:
                value[name] = None
    elif schema.kind in ("map", "array") and schema.items is not None:
        for item in value.values() if isinstance(value, dict) else value or []:
            with_nulls(item, schema.items)
    return value


def nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"a": [value]}
    return value


@st.composite
def mutated(draw: st.DrawFn, obj: Any) -> Any:
    """The object with one part swapped for a value of the wrong shape."""
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in list(node):
                paths.append((node, key))
                walk(node[key])
        elif isinstance(node, list):
            for index in range(len(node)):
                paths.append((node, index))
                walk(node[index])

    walk(obj)
    replacement = draw(st.one_of(SCALARS, st.just([None, None]), st.just({"": None}),
                                 st.just(nested(draw(st.integers(10, 200)))),
                                 st.just(10**40), st.just({"kind": {}})))
    if paths and draw(st.booleans()):
        parent, key = draw(st.sampled_from(paths))
        parent[key] = replacement
    elif isinstance(obj, dict):
        obj[draw(st.sampled_from(["", "apiVersion", "kind", "metadata", "spec", "status",
                                  "x"]))] = replacement
    return obj


def raw_mutation(body: bytes, how: int) -> bytes:
    """Byte-level damage: truncation, bytes that are not UTF-8, duplicate keys, YAML
    aliases, a YAML bomb."""
    if how == 0:
        return body[: len(body) // 2]
    if how == 1:
        return body.replace(b'"', b'"\xff\xfe', 1)
    if how == 2:
        return body[:-1] + b', "metadata": {"name": "dup"}, "metadata": null}'
    if how == 3:
        return b"a: &x [1, 2]\nb: *x\nmetadata: *x\n"
    return (b'a: &a ["x","x","x","x","x","x","x","x"]\n'
            + b"".join(b"%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n"
                       % ((c,) + (c,) + (c - 1,) * 8) for c in range(ord("b"), ord("j"))))


@dataclass
class Request:
    method: str
    path: str
    body: bytes | None
    content_type: str

    def __str__(self) -> str:
        shown = (self.body or b"")[:300]
        return f"{self.method} {self.path} [{self.content_type}] {shown!r}"


def paths_of(resource: Resource) -> tuple[str, str]:
    prefix = "/api/v1" if not resource.group else f"/apis/{resource.group}/{resource.version}"
    collection = (f"{prefix}/namespaces/{NAMESPACE}/{resource.plural}" if resource.namespaced
                  else f"{prefix}/{resource.plural}")
    return collection, f"{collection}/fuzz-object"


def typed(obj: dict[str, Any], resource: Resource) -> dict[str, Any]:
    """The object with its apiVersion, kind and a name, so that the decoder takes it."""
    obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    obj["metadata"]["name"] = "fuzz-object"
    return obj


@st.composite
def requests(draw: st.DrawFn) -> Request:
    resource = draw(st.sampled_from(SERVED))
    schema = schema_for(resource.group, resource.version, resource.kind)
    assert schema is not None
    collection, one = paths_of(resource)
    obj = draw(value_of(schema))
    if isinstance(obj, dict) and draw(st.booleans()):
        obj.setdefault("metadata", {"name": "fuzz-object"})
        if draw(st.booleans()):
            obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
    if isinstance(obj, dict) and draw(st.booleans()):
        obj = with_nulls(typed(obj, resource), schema)
    if draw(st.integers(0, 3)):
        obj = draw(mutated(obj))
    query = draw(st.dictionaries(st.sampled_from(QUERY_KEYS),
                                 st.one_of(st.text(max_size=6), st.sampled_from(
                                     ["-1", "0", "1", "x=y", "true", "All", "Strict", "1e99",
                                      "Foreground", "NotOlderThan", "%zz"])), max_size=2))
    verb = draw(st.sampled_from(["create", "update", "patch", "get", "list", "watch",
                                 "delete", "deletecollection"]))
    suffix = ("?" + urllib.parse.urlencode(query)) if query else ""
    body = json.dumps(obj).encode()
    content_type = "application/json"
    if draw(st.integers(0, 5)) == 0:
        body = raw_mutation(body, draw(st.integers(0, 4)))
        if body.startswith(b"a:"):
            content_type = "application/yaml"
    if verb == "create":
        return Request("POST", collection + suffix, body, content_type)
    if verb == "update":
        return Request("PUT", one + suffix, body, content_type)
    if verb == "patch":
        kind = draw(st.sampled_from(PATCH_TYPES))
        if kind == "application/json-patch+json" and draw(st.booleans()):
            body = json.dumps([{"op": draw(st.sampled_from(["add", "replace", "remove",
                                                             "move", "test", "bogus"])),
                                "path": draw(st.sampled_from(["/spec", "/metadata/labels/a",
                                                              "", "/-", "/x/0"])),
                                "value": obj}]).encode()
        return Request("PATCH", one + suffix, body, kind)
    if verb in ("get", "delete"):
        return Request("GET" if verb == "get" else "DELETE", one + suffix,
                       body if verb == "delete" and draw(st.booleans()) else None,
                       content_type)
    if verb == "watch":
        return Request("GET", collection + "?watch=1&" + urllib.parse.urlencode(query), None,
                       content_type)
    return Request("GET" if verb == "list" else "DELETE", collection + suffix, None,
                   content_type)


# -- the property -----------------------------------------------------------------------------

def etcd_revision(cluster: Cluster) -> int:
    """etcd's current revision, through its JSON gateway (no client of ours involved)."""
    body = json.dumps({"key": base64.b64encode(b"\0").decode()})
    cluster.etcd.request("POST", "/v3/kv/range", body, {"Content-Type": "application/json"})
    return int(json.loads(cluster.etcd.getresponse().read())["header"]["revision"])


def keys_written_since(cluster: Cluster, revision: int) -> list[str]:
    """The keys created or changed after `revision` (to say what moved etcd)."""
    everything = base64.b64encode(b"\0").decode()
    body = json.dumps({"key": everything, "range_end": everything, "keys_only": True,
                       "min_mod_revision": revision + 1})
    cluster.etcd.request("POST", "/v3/kv/range", body, {"Content-Type": "application/json"})
    kvs = json.loads(cluster.etcd.getresponse().read()).get("kvs") or []
    return [base64.b64decode(kv["key"]).decode("utf-8", "replace") for kv in kvs]


def send(cluster: Cluster, request: Request) -> tuple[int, bytes]:
    """Send one request on the keep-alive connection; its status and body (a watch's
    headers are enough: the connection is then dropped, and the body left unread)."""
    headers = {"Content-Type": request.content_type} if request.body is not None else {}
    try:
        cluster.api.request(request.method, request.path, request.body, headers)
        response = cluster.api.getresponse()
        if "watch=1" in request.path:
            cluster.api.close()
            return response.status, b""
        return response.status, response.read()
    except (http.client.HTTPException, ConnectionError):
        cluster.api.close()
        raise


def check(cluster: Cluster, request: Request) -> None:
    before = etcd_revision(cluster)
    status, body = send(cluster, request)
    assert status < 500, (f"{status} for {request}: {body[:2000]!r}\n"  # the Status says why
                          f"the API server's log:\n{cluster.server_errors()}")
    after = etcd_revision(cluster)
    if not 200 <= status < 300:
        assert after == before, (f"{status} for {request}, yet etcd moved {before} -> "
                                 f"{after}: {keys_written_since(cluster, before)}")
    elif "/flowcontrol.apiserver.k8s.io/" in request.path:
        # the APF ensurer's answer (a deleted FlowSchema put back) is its own write: let
        # it land before the next request's check
        wait_for_apf_settled(cluster.api)


def run_property(cluster: Cluster, fuzz_seed: int) -> None:
    @seed(fuzz_seed)
    @settings(max_examples=CASES, deadline=None, database=None, derandomize=False,
              phases=[Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck))
    @given(requests())
    def property_holds(request: Request) -> None:
        check(cluster, request)

    property_holds()
    status, _ = send(cluster, Request("GET", "/readyz", None, "text/plain"))
    assert status == 200, "the API server is not ready after the fuzzing"


def test_no_generated_request_gets_a_5xx_or_changes_etcd_without_success(
        cluster: Cluster) -> None:
    run_property(cluster, FIXED_SEED)


def test_the_same_with_a_random_seed(cluster: Cluster) -> None:
    fuzz_seed = random.randrange(2**32)
    print(f"fuzz seed: {fuzz_seed} (MINIKUBE_PY_FUZZ_SEED={fuzz_seed} to repeat it)")
    run_property(cluster, int(os.environ.get("MINIKUBE_PY_FUZZ_SEED", fuzz_seed)))


# -- explicit nulls ---------------------------------------------------------------------------

@st.composite
def typed_objects(draw: st.DrawFn) -> tuple[Resource, dict[str, Any]]:
    """A well-typed object of a served kind, with its apiVersion and kind, and a name
    unless it has no metadata at all."""
    resource = draw(st.sampled_from(SERVED))
    schema = schema_for(resource.group, resource.version, resource.kind)
    assert schema is not None
    obj = typed(draw(value_of(schema)), resource)
    if draw(st.integers(0, 9)) == 0:
        del obj["metadata"]
    return resource, obj


def answered(cluster: Cluster, method: str, path: str, obj: Any) -> tuple[int, Any]:
    """The status and the decoded answer, without what two answers to the same request
    may differ in (the uid, creationTimestamp and managedFields times a create sets)."""
    cluster.api.request(method, path, json.dumps(obj).encode(),
                        {"Content-Type": "application/json"})
    response = cluster.api.getresponse()
    answer = json.loads(response.read())
    metadata = answer.get("metadata") or {}
    metadata.pop("uid", None)
    metadata.pop("creationTimestamp", None)
    for entry in metadata.get("managedFields") or []:
        entry.pop("time", None)
    return response.status, answer


def test_an_explicit_null_is_answered_as_the_field_absent(cluster: Cluster) -> None:
    @seed(FIXED_SEED)
    @settings(max_examples=NULL_CASES, deadline=None, database=None, derandomize=False,
              phases=[Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck))
    @given(typed_objects(), st.booleans())
    def same_answer(pair: tuple[Resource, dict[str, Any]], update: bool) -> None:
        resource, obj = pair
        schema = schema_for(resource.group, resource.version, resource.kind)
        assert schema is not None
        collection, one = paths_of(resource)
        if update:
            answered(cluster, "POST", collection, obj)  # the object to update, if it is valid
        method, path = ("PUT", one) if update else ("POST", collection)
        plain = answered(cluster, method, path + "?dryRun=All", obj)
        nulls = with_nulls(copy.deepcopy(obj), schema)
        assert answered(cluster, method, path + "?dryRun=All", nulls) == plain, (
            f"{method} {path}: {json.dumps(nulls)[:400]}")

    same_answer()
