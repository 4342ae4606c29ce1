"""Every served kind carries the fields upstream's JSON always writes (api/schema/written.py):
after a create with only what is required, GET, LIST and WATCH all show them."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from minikube_py.api import Obj
from minikube_py.api.resources import RESOURCES
from minikube_py.api.schema.written import always_written, fill_always_written
from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import API

POD_SPEC = {"containers": [{"name": "c", "image": "localhost/busybox:1.36",
                            "ports": [{"containerPort": 80}]}]}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "x"}}
RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
SUBJECTS = [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]
WEBHOOK = {"name": "check.NAME.example.com", "sideEffects": "None",
           "admissionReviewVersions": ["v1"],
           "clientConfig": {"service": {"namespace": "default", "name": "hooks"}},
           "matchConditions": [{"name": "always", "expression": "true"}]}
# An ed25519 certificate request (CN always-written); its base64 holds no "NAME".
CSR_REQUEST = (
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlHWU1Fd0NBUUF3R1RFWE1CVUdBMVVFQXd3"
    "T1lXeDNZWGx6TFhkeWFYUjBaVzR3S2pBRkJnTXJaWEFESVFEdgpHeWZTZTJZdHpubjV6Z0Z3S0wzeHNDdVlC"
    "RWxJejkyMjNhOGZlZkw5RnFBQU1BVUdBeXRsY0FOQkFKbGxYeXk3CjMvdEVtTEluMzM2VzJWdGRWSnQ4OWFE"
    "M09YVlE2aVUvQUpKVUROVlQ4WUV1QkdYSktySjF2RVdwWU12cHBJOU8KcWVUcUJRSy9GOUhmdndrPQotLS0t"
    "LUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K")

# The smallest valid body of each kind (name and namespace are added by the test).
MINIMAL: dict[str, Obj] = {
    "v1/ConfigMap": {},
    "v1/Secret": {},
    "v1/ServiceAccount": {},
    "v1/Pod": {"spec": POD_SPEC},
    "v1/Service": {"spec": {"ports": [{"port": 80}]}},
    "v1/Endpoints": {"subsets": [{"addresses": [{"ip": "10.244.0.5"}],
                                  "ports": [{"port": 80}]}]},
    "v1/Event": {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "NAMESPACE"},
                 "reason": "Test",
                 "message": "m", "type": "Normal"},
    "v1/LimitRange": {"spec": {"limits": [{"type": "Container",
                                           "default": {"cpu": "100m"}}]}},
    "v1/ResourceQuota": {"spec": {"hard": {"pods": "10"}}},
    "v1/PersistentVolumeClaim": {"spec": {"accessModes": ["ReadWriteOnce"],
                                          "resources": {"requests": {"storage": "1Gi"}}}},
    "v1/PersistentVolume": {"spec": {"capacity": {"storage": "1Gi"},
                                     "accessModes": ["ReadWriteOnce"],
                                     "hostPath": {"path": "/tmp/pv"}}},
    "v1/Node": {},
    "v1/ReplicationController": {"spec": {"selector": {"app": "x"}, "template": TEMPLATE}},
    "v1/Namespace": {},
    "apps/v1/Deployment": {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "apps/v1/ReplicaSet": {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "apps/v1/DaemonSet": {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "apps/v1/ControllerRevision": {"data": {"spec": {"template": TEMPLATE}}},
    "apps/v1/StatefulSet": {"spec": {"selector": SELECTOR, "template": TEMPLATE,
                                     "serviceName": "x"}},
    "batch/v1/Job": {"spec": {"template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}}},
    "batch/v1/CronJob": {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
        "template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}}}}},
    "certificates.k8s.io/v1/CertificateSigningRequest": {"spec": {
        "request": CSR_REQUEST, "signerName": "example.com/signer", "usages": ["client auth"]}},
    "coordination.k8s.io/v1/Lease": {},
    "discovery.k8s.io/v1/EndpointSlice": {"addressType": "IPv4", "endpoints": [
        {"addresses": ["10.244.0.5"]}], "ports": [{"port": 80}]},
    "events.k8s.io/v1/Event": {"eventTime": "2026-01-01T00:00:00.000000Z",
                               "reportingController": "test/x", "reportingInstance": "i",
                               "action": "Test", "reason": "Test", "type": "Normal",
                               "regarding": {"kind": "Pod", "name": "p",
                                             "namespace": "NAMESPACE"}},
    "networking.k8s.io/v1/Ingress": {"spec": {"rules": [{"host": "foo.com", "http": {
        "paths": [{"path": "/", "pathType": "Prefix", "backend": {
            "service": {"name": "svc", "port": {"number": 80}}}}]}}]}},
    "networking.k8s.io/v1/IngressClass": {"spec": {"controller": "example.com/ingress"}},
    "networking.k8s.io/v1/NetworkPolicy": {},
    "autoscaling/v2/HorizontalPodAutoscaler": {"spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 3}},
    "autoscaling/v1/HorizontalPodAutoscaler": {"spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 3}},
    "policy/v1/PodDisruptionBudget": {"spec": {"minAvailable": 1, "selector": SELECTOR}},
    "rbac.authorization.k8s.io/v1/Role": {"rules": RULES},
    "rbac.authorization.k8s.io/v1/ClusterRole": {"rules": RULES},
    "rbac.authorization.k8s.io/v1/RoleBinding": {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": SUBJECTS},
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "r"}, "subjects": SUBJECTS},
    "scheduling.k8s.io/v1/PriorityClass": {"value": 1000},
    "storage.k8s.io/v1/StorageClass": {"provisioner": "example.com/provisioner"},
    "storage.k8s.io/v1/CSIDriver": {"spec": {}},
    "storage.k8s.io/v1/CSINode": {"spec": {"drivers": [{"name": "NAME.example.com",
                                                        "nodeID": "n"}]}},
    "storage.k8s.io/v1/VolumeAttachment": {"spec": {
        "attacher": "NAME.example.com", "nodeName": "n", "source": {"persistentVolumeName": "v"}}},
    "storage.k8s.io/v1/CSIStorageCapacity": {"storageClassName": "standard"},
    "flowcontrol.apiserver.k8s.io/v1/FlowSchema": {"spec": {
        "priorityLevelConfiguration": {"name": "global-default"},
        "rules": [{"subjects": [{"kind": "Group", "group": {"name": "x"}}],
                   "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}]}},
    "flowcontrol.apiserver.k8s.io/v1/PriorityLevelConfiguration": {"spec": {
        "type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}},
    "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": {"webhooks": [WEBHOOK]},
    "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": {"webhooks": [WEBHOOK]},
    # a policy for a resource nothing serves, a binding of a policy that does not exist:
    # neither refuses another test's request on the shared server
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy": {"spec": {
        "matchConstraints": {"resourceRules": [{
            "apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["widgets"]}]},
        "validations": [{"expression": "false"}]}},
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding": {"spec": {
        "policyName": "no-such-policy", "validationActions": ["Deny"]}},
    "apiregistration.k8s.io/v1/APIService": {"spec": {
        "group": "NAME.example.com", "version": "v1", "groupPriorityMinimum": 1000,
        "versionPriority": 15}},
    "apiextensions.k8s.io/v1/CustomResourceDefinition": {"spec": {
        "group": "NAME.example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object"}}}]}},
}
# Kinds whose name follows from their body (NAME in MINIMAL is the test's base name).
NAMES = {"apiregistration.k8s.io/v1/APIService": "v1.{name}.example.com",
         "apiextensions.k8s.io/v1/CustomResourceDefinition": "widgets.{name}.example.com"}
# Never stored: a subresource's kind, and the reviews (questions the server answers)
NOT_CREATED = {"v1/Binding", "authorization.k8s.io/v1/SelfSubjectAccessReview",
               "authorization.k8s.io/v1/SubjectAccessReview",
               "authentication.k8s.io/v1/SelfSubjectReview",
               "authentication.k8s.io/v1/TokenReview",
               "authorization.k8s.io/v1/SelfSubjectRulesReview",
               "authorization.k8s.io/v1/LocalSubjectAccessReview"}


def missing(obj: Any, fields: dict[str, Any], path: str = "") -> list[str]:
    """The always-written paths `obj` lacks."""
    if not isinstance(obj, dict):
        return []
    found = []
    for name, node in fields.items():
        here = f"{path}.{name}"
        if name not in obj:
            if "z" in node or "o" in node:
                found.append(here)
            continue
        value = obj[name]
        if "o" in node:
            found += missing(value, node["o"], here)
        elif "l" in node and isinstance(value, list):
            for i, item in enumerate(value):
                found += missing(item, node["l"], f"{here}[{i}]")
        elif "m" in node and isinstance(value, dict):
            for key, item in value.items():
                found += missing(item, node["m"], f"{here}[{key}]")
    return found


def served_kinds() -> list[str]:
    return sorted({f"{r.api_version}/{r.kind}" for r in RESOURCES if r.kind} - NOT_CREATED)


def test_every_served_kind_has_a_minimal_body_here() -> None:
    assert set(served_kinds()) <= set(MINIMAL), set(served_kinds()) - set(MINIMAL)


def test_fill_adds_only_what_is_missing_and_keeps_the_rest() -> None:
    node = {"metadata": {"name": "n"},
            "status": {"nodeInfo": {"kubeletVersion": "v1.37.1"}, "addresses": [{"type": "x"}]}}
    fill_always_written(node, always_written("v1", "Node"))
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.1"
    assert node["status"]["nodeInfo"]["kubeProxyVersion"] == ""
    assert node["status"]["addresses"] == [{"type": "x", "address": ""}]
    assert node["spec"] == {}
    assert missing(node, always_written("v1", "Node")) == []


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


@pytest.mark.parametrize("kind_key", served_kinds())
async def test_get_list_and_watch_carry_every_always_written_field(
        api: API, namespace: str, kind_key: str) -> None:
    api_version, kind = kind_key.rsplit("/", 1)
    resource = next(r for r in RESOURCES if r.api_version == api_version and r.kind == kind
)
    base = f"aw-{uuid.uuid4().hex[:8]}"
    name = NAMES.get(kind_key, "{name}").format(name=base)
    minimal = json.dumps(MINIMAL[kind_key]).replace("NAMESPACE", namespace)
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name},
            **json.loads(minimal.replace("NAME", base))}
    prefix = "/api/v1" if not resource.group else f"/apis/{resource.group}/{resource.version}"
    collection = (f"{prefix}/namespaces/{namespace}/{resource.plural}" if resource.namespaced
                  else f"{prefix}/{resource.plural}")
    status, created = await api.post(collection, body)
    assert status == 201, created["message"]
    fields = always_written(api_version, kind)
    status, got = await api.get(f"{collection}/{name}")
    assert status == 200 and missing(got, fields) == [], missing(got, fields)
    status, listed = await api.get(f"{collection}?fieldSelector=metadata.name={name}")
    assert status == 200 and len(listed["items"]) == 1
    assert missing(listed["items"][0], fields) == []
    async with api.session.get(
            f"{api.base}{collection}?watch=1&resourceVersion=0&timeoutSeconds=2"
            f"&fieldSelector=metadata.name={name}") as watch:
        event = json.loads(await watch.content.readline())
    assert event["type"] == "ADDED" and missing(event["object"], fields) == []
    status, _ = await api.delete(f"{collection}/{name}")  # cluster-scoped ones too
    assert status in (200, 202)
