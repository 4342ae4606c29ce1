"""APIServices (apiregistration.k8s.io/v1): a Local one per served group-version, and the
Available condition of one that names a Service, as upstream's checks would find it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import utils

from minikube_py.api import Obj
from minikube_py.api.resources import RESOURCES
from minikube_py.client.errors import Invalid
from minikube_py.client.rest import Client
from tests.api_helpers import eventually


def api_service(name: str, group: str, version: str, service: Obj | None = None) -> Obj:
    spec: Obj = {"group": group, "version": version, "groupPriorityMinimum": 1000,
                 "versionPriority": 15}
    if service is not None:
        spec |= {"service": service, "insecureSkipTLSVerify": True}
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name}, "spec": spec}


def available(obj: Obj) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or ()
                 if c.get("type") == "Available"), None)


async def test_every_served_group_version_has_a_local_apiservice(
        api_client: Client, kubectl: Callable[..., Any]) -> None:
    api_services = api_client.resource("apiservices", "apiregistration.k8s.io")

    served = {f"{r.version}.{r.group}" for r in RESOURCES}
    assert {"v1.", "v1.apps", "v1.batch", "v1.apiregistration.k8s.io"} <= served

    async def registered() -> Obj | None:
        found = {item["metadata"]["name"]: item for item in (await api_services.list())["items"]}
        ready = all(available(found.get(name, {})) for name in served)
        return found if ready else None
    found = await eventually(registered, 15, what="a Local APIService per group-version")
    core = found["v1."]
    assert core["spec"] == {"version": "v1", "groupPriorityMinimum": 18000,
                            "versionPriority": 1}
    assert available(core) is not None and available(core)["status"] == "True"
    assert available(core)["reason"] == "Local"
    table = kubectl("get", "apiservices", "v1.apps").stdout.splitlines()
    assert table[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert table[1].split()[:3] == ["v1.apps", "Local", "True"]


async def test_a_service_backed_apiservice_reports_why_it_is_not_available(
        api_client: Client, namespace: str, kubectl: Callable[..., Any]) -> None:
    api_services = api_client.resource("apiservices", "apiregistration.k8s.io")
    name = f"v1alpha1.{namespace}.example.com"
    await api_services.create(api_service(name, f"{namespace}.example.com", "v1alpha1",
                                          {"namespace": namespace, "name": "api"}))
    created = await api_services.get(name)
    assert created["spec"]["service"]["port"] == 443  # defaulted

    async def reason() -> str | None:
        condition = available(await api_services.get(name))
        return condition["reason"] if condition else None
    assert await eventually(reason, 15, what="an Available condition") == "ServiceNotFound"
    line = kubectl("get", "apiservice", name).stdout.splitlines()[1].split()
    assert line[1:4] == [f"{namespace}/api", "False", "(ServiceNotFound)"]

    await api_client.resource("services").create(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}, namespace)

    async def missing_endpoints() -> str | None:
        found = await reason()
        return found if found == "MissingEndpoints" else None
    await eventually(missing_endpoints, 15, what="MissingEndpoints")
    condition = available(await api_services.get(name))
    assert condition is not None
    assert condition["message"] == (
        f'endpoints for service/api in "{namespace}" have no addresses with port name "https"')
    await api_services.delete(name)


@pytest.mark.parametrize(("body", "message"), [
    (api_service("wrong.name", "wardle.example.com", "v1alpha1"),
     'metadata.name: Invalid value: "wrong.name": must be `spec.version+"."+spec.group`: '
     '"v1alpha1.wardle.example.com"'),
    ({**api_service("v1alpha1.wardle.example.com", "wardle.example.com", "v1alpha1"),
      "spec": {"group": "wardle.example.com", "version": "v1alpha1",
               "groupPriorityMinimum": 0, "versionPriority": 15}},
     "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"),
    ({**api_service("v1alpha1.wardle.example.com", "wardle.example.com", "v1alpha1"),
      "spec": {"group": "wardle.example.com", "version": "v1alpha1",
               "groupPriorityMinimum": 100, "versionPriority": 15,
               "insecureSkipTLSVerify": True}},
     "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have "
     "insecureSkipTLSVerify"),
])
async def test_invalid_apiservices_are_refused_as_upstream_words_it(
        api_client: Client, body: Obj, message: str) -> None:
    with pytest.raises(Invalid) as refused:
        await api_client.resource("apiservices", "apiregistration.k8s.io").create(body)
    assert message in str(refused.value)


def test_create_from_yaml_conflict_reads_as_upstreams_status(kubeconfig: Path,
                                                            tmp_path: Path) -> None:
    """What the official client's e2e test compares byte for byte."""
    api = k8s.ApiClient(k8s_config.new_client_from_config(str(kubeconfig)).configuration)
    manifest = tmp_path / "api-service.yaml"
    manifest.write_text(
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\n"
        "metadata: {name: v1alpha1.wardle.k8s.io}\n"
        "spec: {insecureSkipTLSVerify: true, group: wardle.k8s.io, groupPriorityMinimum: 1000,"
        " versionPriority: 15, service: {name: api, namespace: wardle}, version: v1alpha1}\n")
    registration = k8s.ApiregistrationV1Api(api)
    try:
        utils.create_from_yaml(api, str(manifest))
        assert registration.read_api_service("v1alpha1.wardle.k8s.io").spec.group == (
            "wardle.k8s.io")
        with pytest.raises(utils.FailToCreateError) as conflict:
            utils.create_from_yaml(api, str(manifest))
        assert str(conflict.value) == (
            'Error from server (Conflict): {"kind":"Status","apiVersion":"v1","metadata":{},'
            '"status":"Failure","message":"apiservices.apiregistration.k8s.io '
            '\\"v1alpha1.wardle.k8s.io\\" already exists","reason":"AlreadyExists",'
            '"details":{"name":"v1alpha1.wardle.k8s.io","group":"apiregistration.k8s.io",'
            '"kind":"apiservices"},"code":409}\n')
    finally:
        registration.delete_api_service("v1alpha1.wardle.k8s.io", body={})
