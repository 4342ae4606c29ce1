"""kr8s, a second Python client from the package index (not client-go's kind), against our
API server: its first requests are discovery with trailing slashes (`/version/`, `/api/`,
`/apis/`), and what it shows of the objects it makes is what upstream would show."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kr8s.asyncio
import pytest

from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import kr8s_on


@pytest.fixture
async def kr8s_api(kubeconfig: Path) -> AsyncIterator[kr8s.asyncio.Api]:
    """kr8s on the test kubeconfig. It names the server's version unsupported (it knows
    Kubernetes up to 1.35) in a warning and carries on."""
    async with kr8s_on(kubeconfig) as api:
        yield api


def get(url: str, accept: str = "application/json") -> tuple[int, str, Any]:
    """(status, Content-Type, body: JSON decoded, else text)."""
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, headers, raw = answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        status, headers, raw = error.code, error.headers, error.read()
    try:
        return status, headers.get("Content-Type", ""), json.loads(raw)
    except ValueError:
        return status, headers.get("Content-Type", ""), raw.decode()


async def test_kr8s_discovers_the_api_through_paths_with_a_trailing_slash(
        kr8s_api: kr8s.asyncio.Api) -> None:
    """kr8s asks `/version/` before anything else, then `/api/` and `/apis/` (and each
    group-version under them) to learn the resources."""
    version = await kr8s_api.version()
    assert version["major"] == "1" and version["gitVersion"].startswith("v1.37")
    resources = await kr8s_api.api_resources()
    found = {(r["version"], r["name"]) for r in resources}
    assert {("v1", "pods"), ("apps/v1", "deployments"),
            ("discovery.k8s.io/v1", "endpointslices")} <= found


def test_paths_with_a_trailing_slash_answer_as_upstreams_do(apiserver: APIServerProcess
                                                            ) -> None:
    """go-restful trims the slash, so the roots of /version, /api, /api/v1, /apis/apps
    and the resource paths answer with it too; /apis/ is the aggregator's plain group
    list, even to a client that asks for aggregated discovery first; the health checks,
    /openapi/v2 and /metrics are exact paths of a plain mux, so with a slash they are not
    found."""
    base = apiserver.url
    aggregated_first = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                        "application/json")
    assert get(f"{base}/version/")[2]["gitVersion"] == get(f"{base}/version")[2]["gitVersion"]
    assert get(f"{base}/api/")[2]["kind"] == "APIVersions"
    assert get(f"{base}/api/", aggregated_first)[2]["kind"] == "APIGroupDiscoveryList"
    assert get(f"{base}/apis/")[2]["kind"] == "APIGroupList"
    assert get(f"{base}/apis/", aggregated_first)[2]["kind"] == "APIGroupList"
    assert get(f"{base}/apis", aggregated_first)[2]["kind"] == "APIGroupDiscoveryList"
    assert get(f"{base}/api/v1/")[2]["kind"] == "APIResourceList"
    assert get(f"{base}/apis/apps/")[2]["kind"] == "APIGroup"
    assert get(f"{base}/apis/apps/v1/")[2]["groupVersion"] == "apps/v1"
    assert get(f"{base}/api/v1/namespaces/")[2]["kind"] == "NamespaceList"
    assert get(f"{base}/api/v1/namespaces/default/")[2]["kind"] == "Namespace"
    for path in ("/healthz/", "/livez/", "/readyz/", "/healthz/ping/", "/openapi/v2/",
                 "/metrics/"):
        assert get(f"{base}{path}")[0] == 404, path
    assert get(f"{base}/healthz")[2] == get(f"{base}/healthz/ping")[2] == "ok"
