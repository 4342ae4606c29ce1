"""Small HTTP helpers for tests that talk to the API server directly, and the fixtures and
waits of tests that drive custom resources through the official `kubernetes` client."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import json
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp
import orjson
import pytest
import yaml
from aiohttp import web
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from minikube_py.api import Obj
from minikube_py.api.goyaml.emit import dump as go_yaml
from minikube_py.apiserver.connect.apiservices import local_api_services
from minikube_py.apiserver.flowcontrol.bootstrap import (
    AUTO_UPDATE_ANNOTATION,
    MANDATORY_FLOW_SCHEMAS,
    MANDATORY_PRIORITY_LEVELS,
    SUGGESTED_FLOW_SCHEMAS,
    SUGGESTED_PRIORITY_LEVELS,
)
from minikube_py.client.errors import Conflict

if TYPE_CHECKING:
    import kr8s.asyncio

T = TypeVar("T")


def manifest_yaml(document: Obj) -> str:
    """A manifest for kubectl, written as go-yaml writes it: a string kubectl would read back
    as a number (`1e123456`, a hex id that looks like a float to go-yaml but not to PyYAML)
    is quoted."""
    return go_yaml(document)


def manifests_yaml(documents: Iterable[Obj]) -> str:
    """Several manifests in one YAML stream for `kubectl apply -f -`."""
    return "---\n".join(go_yaml(document) for document in documents)


@asynccontextmanager
async def serving(app: web.Application, host: str, port: int) -> AsyncIterator[None]:
    """An aiohttp app (a fake kubelet's or pod's endpoint) served on host:port until the
    block ends."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        yield
    finally:
        await runner.cleanup()


class API:
    """A thin JSON client: `await api.post(path, body)` -> (status, body dict)."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json", headers: dict[str, str] | None = None
                      ) -> tuple[int, Any]:
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        all_headers = {"Content-Type": content_type, **(headers or {})}
        async with self.session.request(method, self.base + path, data=data,
                                        headers=all_headers) as response:
            raw = await response.read()
            try:
                return response.status, orjson.loads(raw)
            except orjson.JSONDecodeError:
                return response.status, raw.decode()

    async def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, kind: str = "merge", **kw: Any
                    ) -> tuple[int, Any]:
        content_type = {"merge": "application/merge-patch+json",
                        "json": "application/json-patch+json",
                        "strategic": "application/strategic-merge-patch+json"}[kind]
        return await self.request("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return await self.request("DELETE", path, body, **kw)


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None
              ) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}


def pod(name: str, *, labels: dict[str, str] | None = None, node: str | None = None
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1.36"}]}
    if node:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


async def eventually(predicate: Callable[[], Awaitable[T | None]], timeout: float = 30.0,
                     interval: float = 0.05, what: str = "the condition") -> T:
    """Poll an async predicate until it returns something truthy; fail after `timeout`,
    a bound for a failure only (a loaded machine stretches every step, so it is generous)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


def wait_for_start_up_writes(connection: http.client.HTTPConnection) -> None:
    """Until the API server's own writes after readiness are done (its _bootstrap): the
    `kubernetes` Service created, every local APIService registered and marked Available,
    and the APF configuration written (wait_for_apf_settled). From then on it writes
    nothing unless a request makes it."""
    local = {api_service["metadata"]["name"] for api_service in local_api_services()}
    deadline = time.monotonic() + 60
    while True:
        service, _ = _get(connection, "/api/v1/namespaces/default/services/kubernetes")
        _, listed = _get(connection, "/apis/apiregistration.k8s.io/v1/apiservices")
        available = {item["metadata"]["name"] for item in (listed or {}).get("items", [])
                     if any(c.get("type") == "Available" and c.get("status") == "True"
                            for c in (item.get("status") or {}).get("conditions") or [])}
        if service == 200 and local <= available:
            break
        assert time.monotonic() < deadline, (
            f"the API server's start-up writes are not done: kubernetes Service {service}, "
            f"APIServices not yet available: {sorted(local - available)}")
        time.sleep(0.1)
    wait_for_apf_settled(connection)


def wait_for_apf_settled(connection: http.client.HTTPConnection) -> None:
    """Until the APF configuration is as flowcontrol/ensurer.py keeps it, after start-up
    or after a request that changed it (a deleted FlowSchema is put back a moment later,
    by the API server's own write)."""
    deadline = time.monotonic() + 60
    while True:
        _, schemas = _get(connection, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
        _, levels = _get(connection,
                         "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations")
        unsettled = apf_unsettled((schemas or {}).get("items") or [],
                                  (levels or {}).get("items") or [])
        if not unsettled:
            return
        assert time.monotonic() < deadline, (
            f"APF objects the ensurer has yet to write: {unsettled}")
        time.sleep(0.1)


def _get(connection: http.client.HTTPConnection, path: str) -> tuple[int, Any]:
    connection.request("GET", path)
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read() or b"null")


def apf_unsettled(schemas: list[Obj], levels: list[Obj]) -> list[str]:
    """The APF objects flowcontrol/ensurer.py would still write: bootstrap objects that
    are missing, objects it deletes (auto-updated, no longer suggested), and FlowSchemas
    whose Dangling condition is missing or wrong."""
    wanted = {"flowschemas": MANDATORY_FLOW_SCHEMAS + SUGGESTED_FLOW_SCHEMAS,
              "prioritylevelconfigurations": MANDATORY_PRIORITY_LEVELS
              + SUGGESTED_PRIORITY_LEVELS}
    unsettled = []
    for plural, items in (("flowschemas", schemas), ("prioritylevelconfigurations", levels)):
        names = {obj["metadata"]["name"] for obj in wanted[plural]}
        present = {item["metadata"]["name"] for item in items}
        unsettled += [f"{plural}/{name}: missing" for name in sorted(names - present)]
        unsettled += [f"{plural}/{item['metadata']['name']}: to delete" for item in items
                      if item["metadata"]["name"] not in names
                      and ((item["metadata"].get("annotations") or {})
                           .get(AUTO_UPDATE_ANNOTATION) == "true")]
    level_names = {item["metadata"]["name"] for item in levels}
    for schema in schemas:
        level = ((schema.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name")
        dangling = next((c.get("status") for c in (schema.get("status") or {})
                         .get("conditions") or [] if c.get("type") == "Dangling"), None)
        if dangling != ("False" if level in level_names else "True"):
            unsettled.append(f"flowschemas/{schema['metadata']['name']}: Dangling {dangling}")
    return unsettled


def until(predicate: Callable[[], Any], what: str | Callable[[], str], timeout: float = 30.0,
          interval: float = 0.05) -> Any:
    """Poll until `predicate` returns something truthy, and return that; `timeout` bounds
    a failure only (a loaded machine stretches every step). A predicate that runs a
    command (kubectl, ip) polls at a longer `interval`. `what` may be a function, asked
    at the timeout, to say also what the predicate saw last."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            waited_for = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {waited_for}")
        time.sleep(interval)


def served(custom: client.CustomObjectsApi, group: str, plural: str, *versions: str) -> bool:
    """Whether each version of a custom resource is served yet (404 until it is)."""
    try:
        for version in versions:
            custom.list_cluster_custom_object(group, version, plural)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def delete_definition(extensions: client.ApiextensionsV1Api, name: str, *,
                      ignore_not_found: bool = False) -> None:
    """Delete a CustomResourceDefinition (plural.group) and wait until discovery has let
    it go. The server unserves a definition a moment after the delete (after its objects
    are gone), and a client whose discovery runs in between may find a version in /apis
    that answers 404 at /apis/<group>/<version>: kr8s then cannot resolve any kind.
    Modules that share their worker's API server wait so, so that none leaves that moment
    to the next test. With `ignore_not_found`, as kubectl's flag, a definition that is not
    there (a teardown after a set-up that failed before making it) is no error."""
    plural, _, group = name.partition(".")
    try:
        extensions.delete_custom_resource_definition(name)
    except ApiException as err:
        if not (ignore_not_found and err.status == 404):
            raise
    until(lambda: not definition_in_discovery(extensions.api_client, plural, group),
          f"{name} to leave discovery")


def definition_in_discovery(api_client: client.ApiClient, plural: str, group: str) -> bool:
    """Does discovery still show the definition: a version of its group listed in /apis
    that lists the plural, or that does not answer yet (being unserved)?"""
    groups = client.ApisApi(api_client).get_api_versions().groups
    for version in next((g.versions for g in groups if g.name == group), []):
        try:
            resources = client.CustomObjectsApi(api_client).get_api_resources(
                group, version.version).resources
        except ApiException:
            return True
        if any(resource.name == plural for resource in resources):
            return True
    return False


def retry_on_conflict(update: Callable[[], T], steps: int = 5) -> T:
    """client-go's retry.RetryOnConflict(retry.DefaultRetry, update) for the official
    `kubernetes` client: `update` reads the newest object, changes it and writes it; on a
    409 Conflict (another writer came between the read and the write) it runs again, at
    most `steps` times in all (DefaultRetry's 5), and the last Conflict is raised.
    DefaultRetry spaces its steps 10 ms apart; here they follow at once, since each one
    reads afresh."""
    for _ in range(steps - 1):
        try:
            return update()
        except ApiException as err:
            if err.status != 409:
                raise
    return update()


async def retry_on_conflict_async(update: Callable[[], Awaitable[T]], steps: int = 5) -> T:
    """retry_on_conflict for minikube_py's own client, whose 409 is `Conflict`."""
    for _ in range(steps - 1):
        with contextlib.suppress(Conflict):
            return await update()
    return await update()


FILE_FIELDS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


def certificates_as_files(kubeconfig: Path, directory: Path) -> Path:
    """A copy of `kubeconfig` in `directory` whose inline certificates and keys
    (`...-data`) are files beside it, and whose relative paths are absolute."""
    document = yaml.safe_load(kubeconfig.read_text())
    for section, inner in (("clusters", "cluster"), ("users", "user")):
        for number, entry in enumerate(document.get(section) or []):
            fields = entry.get(inner) or {}
            for key in FILE_FIELDS:
                if fields.get(key) and not Path(fields[key]).is_absolute():
                    fields[key] = str(kubeconfig.parent / fields[key])
                if fields.get(f"{key}-data"):
                    path = directory / f"{section}-{number}-{key}.pem"
                    path.write_bytes(base64.b64decode(fields.pop(f"{key}-data")))
                    fields[key] = str(path)
    copy = directory / "kubeconfig"
    copy.write_text(yaml.safe_dump(document))
    return copy


@asynccontextmanager
async def kr8s_on(kubeconfig: Path) -> AsyncIterator[kr8s.asyncio.Api]:
    """kr8s, a client of the package index that is neither kubectl nor the official one
    (it names our 1.37 unsupported in a warning, and carries on). kr8s writes a
    kubeconfig's inline certificates to temporary files it never removes, so it reads a
    copy that names them as files in a folder of its own, removed at the end."""
    import kr8s.asyncio  # here: only the modules that use kr8s pay for its import

    with tempfile.TemporaryDirectory(prefix="kr8s-") as tmp:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Kubernetes version .* is not supported")
            api = await kr8s.asyncio.api(
                kubeconfig=str(certificates_as_files(kubeconfig, Path(tmp))))
        try:
            yield api
        finally:
            await api._session.aclose()


def official_crd_clients() -> tuple[Any, Any, Any]:
    """The `api_client`, `extensions` and `custom` fixtures of a module that drives
    definitions and custom resources through the official `kubernetes` client, on the
    module's kubeconfig. In the module: `api_client, extensions, custom =
    official_crd_clients()`."""

    @pytest.fixture
    def api_client(kubeconfig: Path) -> Iterator[client.ApiClient]:
        api = config.new_client_from_config(config_file=str(kubeconfig))
        try:
            yield api
        finally:
            api.close()

    @pytest.fixture
    def extensions(api_client: client.ApiClient) -> client.ApiextensionsV1Api:
        return client.ApiextensionsV1Api(api_client)

    @pytest.fixture
    def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(api_client)

    return api_client, extensions, custom
