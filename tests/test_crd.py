"""CustomResourceDefinitions, served as upstream's apiextensions-apiserver serves them:
the definition's validation and conditions, then its custom resources through every verb,
with the real kubectl and plain HTTP (upstream's test/e2e/apimachinery/
custom_resource_definition.go and crd_watch.go, mirrored)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.controllers.garbagecollector import GarbageCollector
from minikube_py.controllers.namespace import NamespaceController
from tests.api_helpers import API, eventually
from tests.conftest import module_own_apiserver

# Definitions are cluster-wide and show in discovery: this module has a server of its own.
etcd, apiserver, kubeconfig = module_own_apiserver("crd")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


def definition(group: str, plural: str = "widgets", kind: str = "Widget", *,
               scope: str = "Namespaced", short_names: tuple[str, ...] = (),
               categories: tuple[str, ...] = (), schema: dict[str, Any] | None = None,
               subresources: dict[str, Any] | None = None,
               columns: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    names: dict[str, Any] = {"plural": plural, "singular": kind.lower(), "kind": kind}
    if short_names:
        names["shortNames"] = list(short_names)
    if categories:
        names["categories"] = list(categories)
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True, "schema": {
        "openAPIV3Schema": schema or {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "minimum": 1, "default": 3},
                    "color": {"type": "string", "enum": ["red", "blue"]},
                    "replicas": {"type": "integer"},
                }},
                "status": {"type": "object", "properties": {
                    "replicas": {"type": "integer"}, "selector": {"type": "string"}}},
            }}}}
    if subresources is not None:
        version["subresources"] = subresources
    if columns is not None:
        version["additionalPrinterColumns"] = columns
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "names": names, "versions": [version]}}


def unique_group() -> str:
    return f"g{uuid.uuid4().hex[:8]}.example.com"


def condition(crd: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (crd.get("status") or {}).get("conditions") or []
                 if c["type"] == kind), {})


async def established(api: API, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        status, crd = await api.get(f"{CRDS}/{name}")
        return crd if status == 200 and condition(crd, "Established").get(
            "status") == "True" else None

    return await eventually(check, what=f"{name} Established")


async def served(api: API, path: str) -> None:
    async def check() -> bool:
        status, _ = await api.get(path)
        return status == 200

    await eventually(check, what=f"{path} served")


async def create_established(api: API, crd: dict[str, Any]) -> dict[str, Any]:
    status, body = await api.post(CRDS, crd)
    assert status == 201, body
    found = await established(api, crd["metadata"]["name"])
    spec = crd["spec"]
    base = f"/apis/{spec['group']}/v1"
    await served(api, f"{base}/{spec['names']['plural']}")
    return found


# -- the definition ------------------------------------------------------------------------

async def test_a_definition_is_established_with_its_names_accepted(api: API) -> None:
    group = unique_group()
    crd = await create_established(api, definition(group, short_names=("wd",)))
    assert condition(crd, "NamesAccepted") | {"lastTransitionTime": None} == {
        "type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
        "message": "no conflicts found", "lastTransitionTime": None}
    assert condition(crd, "Established")["reason"] == "InitialNamesAccepted"
    assert crd["status"]["acceptedNames"] == {
        "kind": "Widget", "listKind": "WidgetList", "plural": "widgets",
        "shortNames": ["wd"], "singular": "widget"}
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}


async def test_a_second_definition_claiming_a_taken_name_is_not_accepted(api: API) -> None:
    group = unique_group()
    await create_established(api, definition(group, short_names=("wd",)))
    status, body = await api.post(CRDS, definition(group, "gadgets", "Gadget",
                                                   short_names=("wd",)))
    assert status == 201, body

    async def refused() -> dict[str, Any] | None:
        _, crd = await api.get(f"{CRDS}/gadgets.{group}")
        return crd if condition(crd, "NamesAccepted").get("status") == "False" else None

    crd = await eventually(refused, what="NamesAccepted False")
    assert condition(crd, "NamesAccepted")["reason"] == "ShortNamesConflict"
    assert condition(crd, "NamesAccepted")["message"] == '"wd" is already in use'
    assert condition(crd, "Established") | {"lastTransitionTime": None} == {
        "type": "Established", "status": "False", "reason": "NotAccepted",
        "message": "not all names are accepted", "lastTransitionTime": None}
    status, _ = await api.get(f"/apis/{group}/v1/gadgets")
    assert status == 404
    status, body = await api.post(CRDS, definition(group, "things", "Widget"))
    assert status == 201

    async def kind_refused() -> dict[str, Any] | None:
        _, crd = await api.get(f"{CRDS}/things.{group}")
        return crd if condition(crd, "NamesAccepted").get("status") == "False" else None

    # kind and listKind both conflict: as upstream, the last check (listKind) names it
    refused = condition(await eventually(kind_refused), "NamesAccepted")
    assert (refused["reason"], refused["message"]) == (
        "ListKindConflict", '"WidgetList" is already in use')


@pytest.mark.parametrize(("change", "cause"), [
    (lambda crd: crd["metadata"].update(name="wrong.example.com"),
     ("FieldValueInvalid", "metadata.name", 'must be spec.names.plural+"."+spec.group')),
    (lambda crd: crd["spec"].update(scope="Everywhere"),
     ("FieldValueNotSupported", "spec.scope",
      'Unsupported value: "Everywhere": supported values: "Cluster", "Namespaced"')),
    (lambda crd: crd["spec"]["versions"][0].update(storage=False),
     ("FieldValueInvalid", "spec.versions",
      "must have exactly one version marked as storage version")),
    (lambda crd: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
     ["spec"].pop("type"),
     ("FieldValueRequired", "spec.versions[0].schema.openAPIV3Schema.properties[spec].type",
      "must not be empty for specified object fields")),
    (lambda crd: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
     ["spec"]["properties"]["color"].update(pattern="("),
     ("FieldValueInvalid", "spec.versions[0].schema.openAPIV3Schema.properties[spec]"
      ".properties[color].pattern", "must be a valid regular expression")),
    (lambda crd: crd["spec"]["versions"][0].update(selectableFields=[{"jsonPath": ".spec"}]),
     ("FieldValueInvalid", "spec.versions[0].selectableFields[0].jsonPath",
      "must point to a field of type string, boolean or integer")),
    (lambda crd: crd["spec"]["versions"][0].update(
        selectableFields=[{"jsonPath": ".spec.nothing"}]),
     ("FieldValueInvalid", "spec.versions[0].selectableFields[0].jsonPath",
      "is an invalid path: does not refer to a valid field")),
])
async def test_an_invalid_definition_is_refused_with_upstreams_causes(
        api: API, change: Any, cause: tuple[str, str, str]) -> None:
    crd = definition(unique_group())
    change(crd)
    status, body = await api.post(CRDS, crd)
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "CustomResourceDefinition"
    reason, field, message = cause
    assert any(c["reason"] == reason and c["field"] == field and message in c["message"]
               for c in body["details"]["causes"]), body["details"]["causes"]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": []},
    {"type": "object", "properties": {"a": 5}},
    {"type": 5},
    {"type": "object", "properties": {"a": {"type": "array", "items": "x"}}},
    {"type": "object", "properties": {"a": {"type": "object", "additionalProperties": 7}}},
    {"type": "object", "required": "a"},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": 7}}},
])
async def test_a_malformed_schema_is_a_client_error_never_a_server_error(
        api: API, schema: dict[str, Any]) -> None:
    crd = definition(unique_group(), schema=schema)
    status, body = await api.post(CRDS + "?dryRun=All", crd)
    assert status in (400, 422), body


# -- custom resources ----------------------------------------------------------------------

@pytest.fixture
async def widgets(api: API) -> str:
    """A namespaced Widget definition, Established: the widgets' collection path in
    namespace default."""
    group = unique_group()
    await create_established(api, definition(group, short_names=("wd",),
                                             categories=("all",),
                                             subresources={"status": {}}))
    return f"/apis/{group}/v1/namespaces/default/widgets"


def widget(path: str, name: str, spec: dict[str, Any] | None = None,
           labels: dict[str, str] | None = None) -> dict[str, Any]:
    group = path.split("/")[2]
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": metadata,
            "spec": spec if spec is not None else {"color": "red"}}


async def test_custom_resources_are_stored_defaulted_and_read_back(api: API,
                                                                   widgets: str) -> None:
    status, created = await api.post(widgets, widget(widgets, "one"))
    assert status == 201, created
    assert created["spec"] == {"color": "red", "size": 3}
    assert created["metadata"]["generation"] == 1
    assert created["metadata"]["uid"]
    status, got = await api.get(f"{widgets}/one")
    assert status == 200 and got == created
    status, listed = await api.get(widgets)
    assert listed["kind"] == "WidgetList" and [i["metadata"]["name"]
                                               for i in listed["items"]] == ["one"]


async def test_a_custom_resource_against_its_schema_is_a_422_with_field_paths(
        api: API, widgets: str) -> None:
    status, body = await api.post(widgets, widget(widgets, "bad", {"size": 0,
                                                                   "color": "green"}))
    assert status == 422, body
    causes = {(c["field"], c["reason"]) for c in body["details"]["causes"]}
    assert causes == {("spec.size", "FieldValueInvalid"),
                      ("spec.color", "FieldValueNotSupported")}
    assert body["message"].startswith('Widget.')
    messages = [c["message"] for c in body["details"]["causes"]]
    assert "Invalid value: 0: spec.size in body should be greater than or equal to 1" in (
        messages)


async def test_unknown_fields_are_pruned_warned_or_refused_as_field_validation_asks(
        api: API, widgets: str) -> None:
    body = widget(widgets, "pruned", {"color": "blue", "shape": "round"})
    status, created = await api.post(widgets, body)
    assert status == 201 and "shape" not in created["spec"]
    status, refused = await api.post(widgets + "?fieldValidation=Strict",
                                     widget(widgets, "strict", {"shape": "round"}))
    assert status == 400
    assert 'strict decoding error: unknown field "spec.shape"' in refused["message"]
    async with api.session.post(api.base + widgets + "?fieldValidation=Warn",
                                json=widget(widgets, "warned", {"shape": "round"})) as answer:
        assert answer.status == 201
        assert answer.headers.getall("Warning") == ['299 - "unknown field \\"spec.shape\\""']


async def test_status_is_written_only_through_the_status_subresource(
        api: API, widgets: str) -> None:
    status, created = await api.post(widgets, {**widget(widgets, "st"),
                                               "status": {"replicas": 9}})
    assert status == 201 and "status" not in created
    created["status"] = {"replicas": 2}
    status, updated = await api.put(f"{widgets}/st/status", created)
    assert status == 200, updated
    assert updated["status"] == {"replicas": 2}
    assert updated["metadata"]["generation"] == 1
    updated["spec"]["size"] = 5
    status, again = await api.put(f"{widgets}/st", updated)
    assert status == 200 and again["metadata"]["generation"] == 2
    assert again["status"] == {"replicas": 2}


async def test_patches_of_a_custom_resource(api: API, widgets: str) -> None:
    await api.post(widgets, widget(widgets, "p"))
    status, merged = await api.patch(f"{widgets}/p", {"spec": {"size": 7}})
    assert status == 200 and merged["spec"] == {"color": "red", "size": 7}
    status, patched = await api.patch(
        f"{widgets}/p", [{"op": "replace", "path": "/spec/color", "value": "blue"}], "json")
    assert status == 200 and patched["spec"]["color"] == "blue"
    status, refused = await api.patch(f"{widgets}/p", {"spec": {"size": 1}}, "strategic")
    assert status == 415, refused
    assert refused["reason"] == "UnsupportedMediaType"


async def test_label_and_field_selectors_and_pages(api: API, widgets: str) -> None:
    for index in range(5):
        await api.post(widgets, widget(widgets, f"w{index}",
                                       labels={"tier": "a" if index % 2 else "b"}))
    _, listed = await api.get(widgets + "?labelSelector=tier%3Da")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w1", "w3"]
    _, listed = await api.get(widgets + "?fieldSelector=metadata.name%3Dw2")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w2"]
    _, first = await api.get(widgets + "?limit=2")
    assert len(first["items"]) == 2 and first["metadata"]["continue"]
    _, rest = await api.get(widgets + f"?limit=10&continue={first['metadata']['continue']}")
    assert [i["metadata"]["name"] for i in first["items"] + rest["items"]] == [
        f"w{i}" for i in range(5)]


async def test_a_watch_sees_added_modified_and_deleted(api: API, widgets: str) -> None:
    """crd_watch.go: ADDED, MODIFIED and DELETED for a custom resource."""
    _, listed = await api.get(widgets)
    version = listed["metadata"]["resourceVersion"]
    events: list[tuple[str, str]] = []

    async def watch() -> None:
        async with api.session.get(
                api.base + widgets + f"?watch=1&resourceVersion={version}") as answer:
            async for line in answer.content:
                event = json.loads(line)
                events.append((event["type"], event["object"]["metadata"]["name"]))
                if event["type"] == "DELETED":
                    return

    task = asyncio.create_task(watch())
    try:
        await api.post(widgets, widget(widgets, "watched"))
        await api.patch(f"{widgets}/watched", {"spec": {"size": 4}})
        await api.delete(f"{widgets}/watched")
        async with asyncio.timeout(30):
            await task
    finally:
        task.cancel()
    assert events == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]


async def test_dry_run_and_finalizers(api: API, widgets: str) -> None:
    status, _ = await api.post(widgets + "?dryRun=All", widget(widgets, "dry"))
    assert status == 201
    status, _ = await api.get(f"{widgets}/dry")
    assert status == 404
    body = widget(widgets, "held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await api.post(widgets, body)
    status, deleting = await api.delete(f"{widgets}/held")
    assert status == 202 and deleting["metadata"]["deletionTimestamp"]
    status, _ = await api.patch(f"{widgets}/held", {"metadata": {"finalizers": None}})
    assert status == 200
    status, _ = await api.get(f"{widgets}/held")
    assert status == 404


async def test_a_cluster_scoped_custom_resource(api: API) -> None:
    group = unique_group()
    await create_established(api, definition(group, "clusterwidgets", "ClusterWidget",
                                             scope="Cluster"))
    path = f"/apis/{group}/v1/clusterwidgets"
    status, created = await api.post(path, {"apiVersion": f"{group}/v1",
                                            "kind": "ClusterWidget",
                                            "metadata": {"name": "c"}, "spec": {}})
    assert status == 201, created
    assert "namespace" not in created["metadata"]
    status, _ = await api.get(f"/apis/{group}/v1/namespaces/default/clusterwidgets")
    assert status == 404


async def test_discovery_lists_the_resource_with_its_names(api: API, widgets: str) -> None:
    group = widgets.split("/")[2]
    _, resources = await api.get(f"/apis/{group}/v1")
    entry = next(r for r in resources["resources"] if r["name"] == "widgets")
    assert entry | {"verbs": None} == {
        "name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget",
        "verbs": None, "shortNames": ["wd"], "categories": ["all"]}
    assert "widgets/status" in {r["name"] for r in resources["resources"]}
    _, groups = await api.get("/apis")
    assert {"groupVersion": f"{group}/v1", "version": "v1"} in next(
        g for g in groups["groups"] if g["name"] == group)["versions"]
    _, aggregated = await api.get("/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    item = next(i for i in aggregated["items"] if i["metadata"]["name"] == group)
    resource = item["versions"][0]["resources"][0]
    assert (resource["resource"], resource["singularResource"], resource["shortNames"],
            resource["categories"]) == ("widgets", "widget", ["wd"], ["all"])


async def test_deleting_a_definition_deletes_its_instances_first(api: API) -> None:
    group = unique_group()
    await create_established(api, definition(group))
    path = f"/apis/{group}/v1/namespaces/default/widgets"
    for name in ("a", "b"):
        status, _ = await api.post(path, widget(path, name))
        assert status == 201
    status, deleting = await api.delete(f"{CRDS}/widgets.{group}")
    assert status == 202, deleting  # kept by its finalizer: Accepted, as upstream
    assert "customresourcecleanup.apiextensions.k8s.io" in deleting["metadata"]["finalizers"]

    async def gone() -> bool:
        status, _ = await api.get(f"{CRDS}/widgets.{group}")
        return status == 404

    await eventually(gone, what="the definition gone")
    status, _ = await api.get(path)
    assert status == 404
    # a definition of the same name starts empty: its instances went with the old one
    await create_established(api, definition(group))
    _, listed = await api.get(path)
    assert listed["items"] == []


# -- with kubectl --------------------------------------------------------------------------

def crd_yaml(group: str, plural: str = "crontabs", kind: str = "CronTab") -> str:
    """The CronTab of upstream's CRD walkthrough, with a scale subresource and printer
    columns."""
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    plural: {plural}
    singular: {kind.lower()}
    kind: {kind}
    shortNames: [ct{group[1:5]}]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {{}}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {{type: string, description: "The schedule, in cron format."}}
              image: {{type: string}}
              replicas: {{type: integer, minimum: 0}}
          status:
            type: object
            properties:
              replicas: {{type: integer}}
              selector: {{type: string}}
"""


def crontab(group: str, name: str, namespace: str, replicas: int = 1) -> str:
    return f"""
apiVersion: {group}/v1
kind: CronTab
metadata:
  name: {name}
  namespace: {namespace}
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  replicas: {replicas}
"""


@pytest.fixture
async def crontabs(api: API, kubectl: Any) -> str:
    """A CronTab definition applied with kubectl and Established: its group."""
    group = unique_group()
    kubectl("apply", "-f", "-", input=crd_yaml(group))
    kubectl("wait", "--for=condition=Established", f"crd/crontabs.{group}", "--timeout=60s")
    await served(api, f"/apis/{group}/v1/crontabs")
    return group


async def test_kubectl_applies_gets_and_deletes_a_custom_resource(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    kubectl("apply", "-f", "-", input=crontab(crontabs, "my-cron", namespace))
    got = json.loads(kubectl("get", f"crontabs.{crontabs}", "my-cron", "-n", namespace,
                             "-o", "json").stdout)
    assert got["spec"]["image"] == "my-awesome-cron-image"
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]
    # apply again with a change: a merge patch (custom resources have no strategic merge)
    kubectl("apply", "-f", "-", input=crontab(crontabs, "my-cron", namespace, replicas=2))
    short = f"ct{crontabs[1:5]}"
    assert kubectl("get", short, "my-cron", "-n", namespace, "-o",
                   "jsonpath={.spec.replicas}").stdout == "2"
    assert "crontab." in kubectl("delete", f"crontab.{crontabs}", "my-cron", "-n",
                                 namespace).stdout
    assert kubectl("get", f"crontabs.{crontabs}", "-n", namespace,
                   check=False).stderr.startswith("No resources found")


async def test_kubectl_get_shows_the_printer_columns(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    """table_conversion.go: a custom resource's Table has its additionalPrinterColumns."""
    kubectl("apply", "-f", "-", input=crontab(crontabs, "printed", namespace, replicas=3))
    lines = kubectl("get", f"crontabs.{crontabs}", "-n", namespace).stdout.splitlines()
    assert lines[0].split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    cells = lines[1].split()
    assert cells[:7] == ["printed", "*", "*", "*", "*", "*/5", "3"]
    assert re.fullmatch(r"\d+[smhd]", cells[7]), cells  # a date column shows the age


async def test_kubectl_get_all_includes_custom_resources_in_the_all_category(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    kubectl("apply", "-f", "-", input=crontab(crontabs, "in-all", namespace))
    output = kubectl("get", "all", "-n", namespace).stdout
    assert f"crontab.{crontabs}/in-all" in output


async def test_kubectl_scale_scales_a_custom_resource(
        kubectl: Any, crontabs: str, namespace: str, api: API) -> None:
    kubectl("apply", "-f", "-", input=crontab(crontabs, "scaled", namespace))
    kubectl("scale", f"crontabs.{crontabs}/scaled", "-n", namespace, "--replicas=5")
    path = f"/apis/{crontabs}/v1/namespaces/{namespace}/crontabs/scaled"
    _, got = await api.get(path)
    assert got["spec"]["replicas"] == 5
    got["status"] = {"replicas": 4, "selector": "app=cron"}
    status, _ = await api.put(f"{path}/status", got)
    assert status == 200
    status, scale = await api.get(f"{path}/scale")
    assert status == 200, scale
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["spec"] == {"replicas": 5}
    assert scale["status"] == {"replicas": 4, "selector": "app=cron"}


async def test_kubectl_explain_describes_a_custom_resource(
        kubectl: Any, crontabs: str) -> None:
    output = kubectl("explain", "crontabs.spec.cronSpec", f"--api-version={crontabs}/v1").stdout
    assert "The schedule, in cron format." in output


async def test_server_side_apply_of_a_custom_resource(
        kubectl: Any, crontabs: str, namespace: str) -> None:
    kubectl("apply", "--server-side", "-f", "-", input=crontab(crontabs, "ssa", namespace))
    got = json.loads(kubectl("get", f"crontabs.{crontabs}", "ssa", "-n", namespace,
                             "-o", "json", "--show-managed-fields").stdout)
    managers = {entry["manager"] for entry in got["metadata"]["managedFields"]}
    assert managers == {"kubectl"}
    refused = kubectl("apply", "--server-side", "-f", "-", check=False,
                      input=crontab(crontabs, "ssa", namespace).replace(
                          "replicas: 1", "replicas: 1\n  color: red"))
    assert refused.returncode != 0
    assert ".spec.color: field not declared in schema" in refused.stderr


async def test_defaults_apply_to_requests_and_to_objects_read_from_storage(api: API) -> None:
    """custom_resource_definition.go: "custom resource defaulting for requests and from
    storage works"."""
    group = unique_group()
    schema = {"type": "object", "properties": {"a": {"type": "string"},
                                               "b": {"type": "string"}}}
    crd = definition(group, "defaultings", "Defaulting", scope="Cluster", schema=schema)
    await create_established(api, crd)
    path = f"/apis/{group}/v1/defaultings"
    crd_path = f"{CRDS}/defaultings.{group}"
    body = {"apiVersion": f"{group}/v1", "kind": "Defaulting"}
    status, _ = await api.post(path, {**body, "metadata": {"name": "cr-1"}})
    assert status == 201
    status, _ = await api.patch(crd_path, [{
        "op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/a/default",
        "value": "A"}], "json")
    assert status == 200

    async def read(name: str) -> dict[str, Any]:
        _, got = await api.get(f"{path}/{name}")
        return got

    async def first_defaulted() -> bool:
        return (await read("cr-1")).get("a") == "A"

    await eventually(first_defaulted, what="cr-1 defaulted on read")
    status, second = await api.post(path, {**body, "metadata": {"name": "cr-2"}})
    assert status == 201 and second["a"] == "A"
    status, _ = await api.patch(crd_path, [
        {"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/a/default"},
        {"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/b/default",
         "value": "B"}], "json")
    assert status == 200

    async def second_defaulted() -> bool:
        got = await read("cr-2")
        return got.get("b") == "B" and got.get("a") == "A"

    await eventually(second_defaulted, what="cr-2 defaulted for b, its a kept")
    first = await read("cr-1")
    assert (first.get("a"), first.get("b")) == (None, "B")  # cr-1 never stored a


async def test_the_garbage_collector_deletes_a_custom_resource_whose_owner_is_gone(
        api: API, run_controllers: Any) -> None:
    """ownerReferences on a custom resource: the garbage collector monitors the
    definition's resource and deletes the dependent once its owner is deleted; a custom
    resource owning another is collected too."""
    group = unique_group()
    await create_established(api, definition(group))
    path = f"/apis/{group}/v1/namespaces/default/widgets"
    await run_controllers(GarbageCollector)
    _, owner = await api.post("/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"owner-{group[:9]}"}})
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                 "uid": owner["metadata"]["uid"]}
    body = widget(path, "dependent")
    body["metadata"]["ownerReferences"] = [reference]
    status, parent = await api.post(path, body)
    assert status == 201, parent
    child = widget(path, "grandchild")
    child["metadata"]["ownerReferences"] = [{
        "apiVersion": f"{group}/v1", "kind": "Widget", "name": "dependent",
        "uid": parent["metadata"]["uid"]}]
    status, _ = await api.post(path, child)
    assert status == 201
    await api.delete(f"/api/v1/namespaces/default/configmaps/{owner['metadata']['name']}")

    async def collected() -> bool:
        first, _ = await api.get(f"{path}/dependent")
        second, _ = await api.get(f"{path}/grandchild")
        return first == second == 404

    await eventually(collected, what="the dependents collected")


async def test_deleting_a_namespace_deletes_its_custom_resources(
        api: API, run_controllers: Any, namespace: str) -> None:
    group = unique_group()
    await create_established(api, definition(group))
    path = f"/apis/{group}/v1/namespaces/{namespace}/widgets"
    status, _ = await api.post(path, widget(path, "in-namespace"))
    assert status == 201
    await run_controllers(NamespaceController)
    await api.delete(f"/api/v1/namespaces/{namespace}")

    async def gone() -> bool:
        status, _ = await api.get(f"/api/v1/namespaces/{namespace}")
        return status == 404

    await eventually(gone, what="the namespace gone")
    _, listed = await api.get(f"/apis/{group}/v1/widgets")
    assert [item["metadata"]["name"] for item in listed["items"]] == []


async def test_deletecollection_of_custom_resources_by_label(api: API, widgets: str) -> None:
    for name, tier in (("x1", "gone"), ("x2", "gone"), ("x3", "kept")):
        await api.post(widgets, widget(widgets, name, labels={"tier": tier}))
    status, body = await api.delete(widgets + "?labelSelector=tier%3Dgone")
    assert status == 200, body
    assert sorted(item["metadata"]["name"] for item in body["items"]) == ["x1", "x2"]
    _, listed = await api.get(widgets)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["x3"]


async def test_discovery_documents_include_the_apiextensions_group(api: API) -> None:
    """custom_resource_definition.go: "should include custom resource definition
    resources in discovery documents"."""
    _, groups = await api.get("/apis")
    group = next(g for g in groups["groups"] if g["name"] == "apiextensions.k8s.io")
    assert group["preferredVersion"] == {"groupVersion": "apiextensions.k8s.io/v1",
                                         "version": "v1"}
    _, group_document = await api.get("/apis/apiextensions.k8s.io")
    assert group_document["name"] == "apiextensions.k8s.io"
    assert {"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"} in (
        group_document["versions"])
    _, resources = await api.get("/apis/apiextensions.k8s.io/v1")
    assert resources["groupVersion"] == "apiextensions.k8s.io/v1"
    entry = next(r for r in resources["resources"]
                 if r["name"] == "customresourcedefinitions")
    assert (entry["kind"], entry["namespaced"], entry["shortNames"]) == (
        "CustomResourceDefinition", False, ["crd", "crds"])


async def test_the_schema_is_published_in_openapi_v2_and_v3(api: API, widgets: str) -> None:
    group = widgets.split("/")[2]
    name = ".".join([*reversed(group.split(".")), "v1", "Widget"])
    _, v2 = await api.get("/openapi/v2")
    definition_v2 = v2["definitions"][name]
    assert definition_v2["properties"]["spec"]["properties"]["size"]["default"] == 3
    assert definition_v2["x-kubernetes-group-version-kind"] == [
        {"group": group, "kind": "Widget", "version": "v1"}]
    _, index = await api.get("/openapi/v3")
    url = index["paths"][f"apis/{group}/v1"]["serverRelativeURL"]
    _, v3 = await api.get(url)
    assert name in v3["components"]["schemas"]
    assert f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}" in v3["paths"]


async def test_a_changed_schema_is_published_in_place_of_the_old(api: API, widgets: str
                                                                  ) -> None:
    """The published definitions follow each change of the definition (they are kept
    between rebuilds only while the definition is unchanged)."""
    group = widgets.split("/")[2]
    name = ".".join([*reversed(group.split(".")), "v1", "Widget"])
    status, crd = await api.patch(f"{CRDS}/widgets.{group}", [{
        "op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/"
        "properties/shape", "value": {"type": "string", "default": "round"}}], kind="json")
    assert status == 200, crd

    async def published() -> dict[str, Any] | None:
        _, v2 = await api.get("/openapi/v2")
        spec = v2["definitions"][name]["properties"]["spec"]["properties"]
        return spec if "shape" in spec else None

    spec = await eventually(published, what="the new field in /openapi/v2")
    assert spec["shape"] == {"type": "string", "default": "round"}
    assert spec["size"]["default"] == 3
    _, index = await api.get("/openapi/v3")
    _, v3 = await api.get(index["paths"][f"apis/{group}/v1"]["serverRelativeURL"])
    assert "shape" in v3["components"]["schemas"][name]["properties"]["spec"]["properties"]


# -- table_conversion.go, on custom resources ------------------------------------------------

TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"


async def test_a_table_of_one_custom_resource(api: API, kubectl: Any, crontabs: str,
                                              namespace: str) -> None:
    """table_conversion.go: "should return pod details", for a custom resource."""
    kubectl("apply", "-f", "-", input=crontab(crontabs, "row-1", namespace))
    status, table = await api.get(
        f"/apis/{crontabs}/v1/namespaces/{namespace}/crontabs/row-1",
        headers={"Accept": TABLE_V1BETA1})
    assert status == 200, table
    assert table["kind"] == "Table"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "Spec", "Replicas", "Age"]
    assert len(table["rows"]) == 1 and len(table["rows"][0]["cells"]) == len(names)
    assert table["rows"][0]["cells"][:3] == ["row-1", "* * * * */5", 1]


async def test_chunks_of_table_results_for_list_calls(api: API, widgets: str) -> None:
    """table_conversion.go: "should return chunks of table results for list calls"."""
    for index in range(20):
        await api.post(widgets, widget(widgets, f"template-{index:04d}"))
    status, paged = await api.get(widgets + "?limit=2", headers={"Accept": TABLE_V1BETA1})
    assert status == 200
    assert [row["cells"][0] for row in paged["rows"]] == ["template-0000", "template-0001"]
    assert paged["metadata"]["resourceVersion"] and paged["metadata"]["continue"]
    _, rest = await api.get(widgets + f"?continue={paged['metadata']['continue']}",
                            headers={"Accept": TABLE_V1BETA1})
    assert rest["rows"][0]["cells"][0] == "template-0002"


async def test_a_backend_without_tables_answers_406(api: API) -> None:
    """table_conversion.go: "should return a 406 for a backend which does not implement
    metadata"."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}}
    status, body = await api.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                  review, headers={
                                      "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert status == 406, body


async def test_a_definition_created_again_at_once_serves_creates(api: API) -> None:
    """Deleted and created again before its controller saw it go, a definition of the
    same name still serves creates (its old stores refused them while it went)."""
    group = unique_group()
    await create_established(api, definition(group))
    path = f"/apis/{group}/v1/namespaces/default/widgets"
    await api.post(path, widget(path, "old"))
    await api.delete(f"{CRDS}/widgets.{group}")

    async def recreated() -> bool:
        status, _ = await api.post(CRDS, definition(group))
        return status == 201

    await eventually(recreated, what="the definition created again")
    await established(api, f"widgets.{group}")

    async def creates() -> bool:
        status, _ = await api.post(path, widget(path, "new"))
        return status == 201

    await eventually(creates, what="a create of the new definition's resource")
    _, listed = await api.get(path)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["new"]


async def test_every_served_version_is_served_with_the_none_conversion(api: API) -> None:
    """Two served versions, v1 stored: an object written through v1beta1 is stored as v1
    and read through either with that version's apiVersion; discovery prefers v1."""
    group = unique_group()
    crd = definition(group)
    beta = json.loads(json.dumps(crd["spec"]["versions"][0]))
    beta.update(name="v1beta1", storage=False)
    crd["spec"]["versions"].insert(0, beta)
    await create_established(api, crd)
    await served(api, f"/apis/{group}/v1beta1/widgets")
    beta_path = f"/apis/{group}/v1beta1/namespaces/default/widgets"
    status, created = await api.post(beta_path, {**widget(beta_path, "w"),
                                                 "apiVersion": f"{group}/v1beta1"})
    assert status == 201, created
    assert created["apiVersion"] == f"{group}/v1beta1"
    _, through_v1 = await api.get(f"/apis/{group}/v1/namespaces/default/widgets/w")
    assert through_v1["apiVersion"] == f"{group}/v1"
    _, listed = await api.get(beta_path)
    assert listed["items"][0]["apiVersion"] == f"{group}/v1beta1"
    _, group_document = await api.get(f"/apis/{group}")
    assert group_document["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in group_document["versions"]] == ["v1", "v1beta1"]


async def test_field_selectors_on_the_definitions_selectable_fields(api: API) -> None:
    """crd_selectable_fields.go: a field selector may name a selectableFields path."""
    group = unique_group()
    crd = definition(group)
    crd["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.color"}]
    await create_established(api, crd)
    path = f"/apis/{group}/v1/namespaces/default/widgets"
    for name, color in (("r", "red"), ("b", "blue")):
        await api.post(path, widget(path, name, {"color": color}))
    _, listed = await api.get(path + "?fieldSelector=spec.color%3Dblue")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["b"]
    status, refused = await api.get(path + "?fieldSelector=spec.size%3D3")
    assert status == 400, refused
    assert 'field label not supported: spec.size' in refused["message"]


async def test_cel_rules_and_transition_rules_run_on_create_and_update(api: API) -> None:
    """x-kubernetes-validations through the API: a rule refuses a create with its message
    at its field, and a transition rule (oldSelf) refuses an update."""
    group = unique_group()
    await create_established(api, definition(group, plural="gadgets", kind="Gadget", schema={
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.min <= self.max", "message": "min must not exceed max"}],
            "properties": {
                "min": {"type": "integer"}, "max": {"type": "integer"},
                "name": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "name is immutable"}]},
            }}}}))
    path = f"/apis/{group}/v1/namespaces/default/gadgets"

    def gadget(spec: dict[str, Any], version: str | None = None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": "g"}
        if version is not None:
            metadata["resourceVersion"] = version
        return {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": metadata,
                "spec": spec}

    status, body = await api.post(path, gadget({"min": 5, "max": 1, "name": "a"}))
    assert status == 422, body
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec", "Invalid value: \"object\": min must not exceed max")], body
    status, created = await api.post(path, gadget({"min": 1, "max": 5, "name": "a"}))
    assert status == 201, created
    version = created["metadata"]["resourceVersion"]
    status, body = await api.put(f"{path}/g", gadget({"min": 1, "max": 5, "name": "b"},
                                                     version))
    assert status == 422, body
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.name"], body
    assert "name is immutable" in body["details"]["causes"][0]["message"]
