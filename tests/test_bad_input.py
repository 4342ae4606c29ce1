"""Malformed and refused requests: each gets upstream's Status, and etcd is left untouched.

Every case in the table is one HTTP request the API server must refuse. The test records
etcd's revision and every /registry/ key's mod_revision before the request and checks they
are the same afterwards: a refused request writes nothing (upstream's handlers validate,
admit and check preconditions before the one etcd Txn). The expected code, reason, message
text and `details.causes[].field` are upstream Kubernetes 1.37's (handlers in
k8s.io/apiserver/pkg/endpoints/handlers, validation in pkg/apis/*/validation).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from minikube_py.api import Obj
from minikube_py.apiserver.storage.etcd import EtcdClient, prefix_end
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from tests.api_helpers import configmap, pod, wait_for_start_up_writes

Snapshot = tuple[int, frozenset[tuple[bytes, int]]]

PODS = "/api/v1/namespaces/{ns}/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments"
SERVICES = "/api/v1/namespaces/{ns}/services"
CONFIGMAPS = "/api/v1/namespaces/{ns}/configmaps"
CLAIMS = "/api/v1/namespaces/{ns}/persistentvolumeclaims"
STORAGE_CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
CSI_DRIVERS = "/apis/storage.k8s.io/v1/csidrivers"
CSI_NODES = "/apis/storage.k8s.io/v1/csinodes"
VOLUME_ATTACHMENTS = "/apis/storage.k8s.io/v1/volumeattachments"
CSI_STORAGE_CAPACITIES = "/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities"
HPAS_V1 = "/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers"
HPAS_V2 = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
FLOW_SCHEMAS = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CLUSTER_ROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
SERVICE_ACCOUNTS = "/api/v1/namespaces/{ns}/serviceaccounts"
MAX_BODY_BYTES = 3 * 1024 * 1024  # upstream's MaxRequestBodyBytes
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
YAML = "application/yaml"
APPLY = "application/apply-patch+yaml"
PATCH_REJECTED = "the server rejected our request due to an error in our request"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


async def send(session: aiohttp.ClientSession, method: str, url: str, body: Any = None,
               content_type: str = "application/json") -> Answer:
    """One request; bytes bodies go as they are, anything else as JSON."""
    data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
    headers = {"Content-Type": content_type} if data is not None else {}
    async with session.request(method, url, data=data, headers=headers) as response:
        raw = await response.read()
        try:
            parsed: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = raw.decode(errors="replace")
        return Answer(response.status, dict(response.headers), parsed)


async def etcd_snapshot(client: EtcdClient) -> Snapshot:
    """etcd's revision and every /registry/ key with its mod_revision."""
    result = await client.range(b"/registry/", prefix_end(b"/registry/"), keys_only=True)
    return result.revision, frozenset((kv.key, kv.mod_revision) for kv in result.kvs)


def deployment(name: str, *, replicas: int = 1, labels: dict[str, str] | None = None,
               selector: Obj | None = None) -> Obj:
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": selector or {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                         "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}},
        },
    }


def flow_schema(spec: Obj) -> Obj:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "bad"},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"}, **spec}}


def pod_with(name: str = "web", **spec: Any) -> Obj:
    """A pod whose spec is the default one with the given fields replaced."""
    body = pod(name)
    body["spec"].update(spec)
    return body


def pod_named(metadata: Obj) -> Obj:
    body = pod("unused")
    body["metadata"] = metadata
    return body


def service(port: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": port}]}}


def binding(target: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"}, "target": target}


def scale(replicas: int) -> Obj:
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},
            "spec": {"replicas": replicas}}


def hpa(version: str, **spec: Any) -> Obj:
    """A HorizontalPodAutoscaler of Deployment web, with `spec` over a valid one."""
    return {"apiVersion": f"autoscaling/{version}", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "web"}, "maxReplicas": 3, **spec}}


def stale_pod() -> Obj:
    body = pod("web")
    body["metadata"]["resourceVersion"] = "1"
    body["metadata"]["labels"] = {"changed": "yes"}
    return body


@dataclass(frozen=True)
class BadInput:
    """One refused request and upstream's answer to it.

    `setup` objects (collection path, body) are created before etcd's snapshot is taken;
    one given by its own path with `?fieldManager=` is created by server-side apply.
    `message` is a substring of the Status message; `field` one of its causes' fields.
    """

    id: str
    method: str
    path: str
    body: Any
    code: int
    reason: str
    message: str = ""
    field: str = ""
    content_type: str = "application/json"
    setup: tuple[tuple[str, Obj], ...] = ()


WEB_POD = ((PODS, pod("web")),)
BOUND_POD = ((PODS, pod("web", node="node-1")),)
WEB_DEPLOYMENT = ((DEPLOYMENTS, deployment("web")),)
APPLIED_DEPLOYMENT = ((DEPLOYMENTS + "/web?fieldManager=test", deployment("web")),)
UNKNOWN_FORMAT = "the body of the request was in an unknown format - accepted media types include"

CASES = (
    # -- shapes a fuzzer found answered with 500 ------------------------------------------
    BadInput("empty-key-null-body-on-deployments", "POST", DEPLOYMENTS, {"": None}, 422,
             "Invalid", field="metadata.name"),
    BadInput("api-version-is-a-list", "POST", PODS, {**pod("web"), "apiVersion": [None, None]},
             400, "BadRequest", "cannot unmarshal array into Go struct field .apiVersion "
             "of type string"),
    BadInput("kind-is-a-number", "POST", DEPLOYMENTS, {**deployment("web"), "kind": 7}, 400,
             "BadRequest", "cannot unmarshal number into Go struct field .kind of type string"),
    BadInput("name-is-an-object", "POST", PODS, pod_named({"name": {"a": [{"a": [{}]}]}}), 400,
             "BadRequest", "json: cannot unmarshal object into Go struct field "
             "ObjectMeta.metadata.name of type string"),
    BadInput("replicas-too-large-for-int64", "POST", DEPLOYMENTS,
             json.dumps({**deployment("web"), "spec": {**deployment("web")["spec"],
                                                       "replicas": 10**40}}).encode(),
             400, "BadRequest", "cannot unmarshal number 1"),
    BadInput("apply-with-a-lone-surrogate", "PATCH", PODS + "/web?fieldManager=test",
             b'{"apiVersion": "v1", "kind": "\\ud800\\udc00", "metadata": {"name": "web"}}',
             400, "BadRequest", "error decoding YAML", content_type=APPLY),
    BadInput("apply-that-is-not-utf-8", "PATCH", PODS + "/web?fieldManager=test",
             b'{"\xff\xfemetadata": {"name": "web"}}', 400, "BadRequest", "error decoding YAML",
             content_type=APPLY),
    BadInput("yaml-bomb", "POST", CONFIGMAPS,
             b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
             + b"".join(b"%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n"
                        % ((c, c) + (c - 1,) * 9) for c in range(ord("b"), ord("k"))),
             400, "BadRequest", "excessive aliasing", content_type=YAML),
    # -- a null list item decodes as the item with nothing set (Go's zero struct), which
    # validation refuses; kept as null, every later request's admission read it (500) ---
    BadInput("null-mutating-webhook", "POST", f"{ADMISSION}/mutatingwebhookconfigurations",
             {"metadata": {"name": "null-webhook"}, "webhooks": [None]}, 422, "Invalid",
             "webhooks[0].name: Required value", "webhooks[0].clientConfig"),
    BadInput("null-validating-webhook", "POST", f"{ADMISSION}/validatingwebhookconfigurations",
             {"metadata": {"name": "null-webhook"}, "webhooks": [None, None]}, 422, "Invalid",
             "webhooks[1].admissionReviewVersions: Required value", "webhooks[0].name"),
    BadInput("null-validating-admission-policy-validation", "POST",
             f"{ADMISSION}/validatingadmissionpolicies",
             {"metadata": {"name": "null-validation"}, "spec": {
                 "matchConstraints": {"resourceRules": [None]}, "validations": [None]}},
             422, "Invalid", "spec.validations[0].expression: Required value",
             "spec.matchConstraints.resourceRules[0].operations"),
    BadInput("null-cluster-role-rule", "POST", CLUSTER_ROLES,
             {"metadata": {"name": "null-rule"}, "rules": [None]}, 422, "Invalid",
             "rules[0].verbs: Required value: verbs must contain at least one value",
             "rules[0].resources"),
    # -- bodies that do not decode (handlers/create.go: transformDecodeError, 400) ---------
    BadInput("invalid-json", "POST", PODS, b'{"apiVersion": "v1", "kind": "Pod", "metadata": {',
             400, "BadRequest",
             "the object provided is unrecognized (must be of type Pod): "
             "couldn't get version/kind; json parse error"),
    BadInput("yaml-that-does-not-parse", "POST", PODS, b"metadata: {name: web\nspec: [", 400,
             "BadRequest", "error converting YAML to JSON", content_type=YAML),
    BadInput("body-is-a-json-array", "POST", PODS, b"[1, 2]", 400, "BadRequest",
             "the object provided is unrecognized (must be of type Pod)"),
    BadInput("body-is-a-json-string", "POST", PODS, b'"a pod"', 400, "BadRequest",
             "the object provided is unrecognized (must be of type Pod)"),
    BadInput("apps-api-version-on-pods", "POST", PODS, {**pod("web"), "apiVersion": "apps/v1"},
             400, "BadRequest", 'no kind "Pod" is registered for version "apps/v1"'),
    BadInput("service-kind-on-pods", "POST", PODS, {**service(80), "metadata": {"name": "web"}},
             400, "BadRequest", 'Service in version "v1" cannot be handled as a Pod'),
    BadInput("strict-field-validation-unknown-field", "POST",
             PODS + "?fieldValidation=Strict", pod_with(foo="bar"), 400, "BadRequest",
             'Pod in version "v1" cannot be handled as a Pod: '
             'strict decoding error: unknown field "spec.foo"'),
    # -- the body disagrees with the URL (400) ---------------------------------------------
    BadInput("namespace-in-body-differs-from-url", "POST", PODS,
             pod_named({"name": "web", "namespace": "somewhere-else"}), 400, "BadRequest",
             "the namespace of the provided object does not match the namespace sent on the "
             "request"),
    BadInput("name-in-body-differs-from-url-on-put", "PUT", PODS + "/web", pod("other"), 400,
             "BadRequest", "the name of the object (other) does not match the name on the URL "
             "(web)", setup=WEB_POD),
    # -- object metadata (apimachinery ValidateObjectMeta, 422) ----------------------------
    BadInput("upper-case-name", "POST", PODS, pod("Web"), 422, "Invalid",
             'Pod "Web" is invalid: metadata.name: Invalid value: "Web": a lowercase RFC 1123 '
             "subdomain", "metadata.name"),
    BadInput("underscore-in-name", "POST", PODS, pod("web_1"), 422, "Invalid",
             'metadata.name: Invalid value: "web_1"', "metadata.name"),
    BadInput("name-longer-than-253", "POST", PODS, pod("a" * 254), 422, "Invalid",
             "must be no more than 253 characters", "metadata.name"),
    BadInput("no-name-and-no-generate-name", "POST", PODS, pod_named({}), 422, "Invalid",
             "metadata.name: Required value: name or generateName is required", "metadata.name"),
    BadInput("invalid-label-key", "POST", PODS,
             pod_named({"name": "web", "labels": {"bad key": "x"}}), 422, "Invalid",
             'metadata.labels: Invalid value: "bad key"', "metadata.labels"),
    BadInput("invalid-label-value", "POST", PODS,
             pod_named({"name": "web", "labels": {"app": "-bad-"}}), 422, "Invalid",
             'metadata.labels: Invalid value: "-bad-"', "metadata.labels"),
    # -- kind-specific validation (pkg/apis/*/validation, 422) -----------------------------
    BadInput("deployment-negative-replicas", "POST", DEPLOYMENTS, deployment("web", replicas=-1),
             422, "Invalid", "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
             "spec.replicas"),
    BadInput("deployment-selector-does-not-match-template", "POST", DEPLOYMENTS,
             deployment("web", selector={"matchLabels": {"app": "other"}}), 422, "Invalid",
             "`selector` does not match template `labels`", "spec.template.metadata.labels"),
    BadInput("deployment-invalid-selector-operator", "POST", DEPLOYMENTS,
             deployment("web", selector={"matchLabels": {"app": "web"}, "matchExpressions": [
                 {"key": "app", "operator": "Sometimes", "values": ["web"]}]}),
             422, "Invalid", 'Invalid value: "Sometimes": not a valid selector operator',
             "spec.selector.matchExpressions[0].operator"),
    BadInput("pod-without-containers", "POST", PODS, pod_with(containers=[]), 422, "Invalid",
             "spec.containers: Required value", "spec.containers"),
    BadInput("pod-with-duplicate-container-names", "POST", PODS,
             pod_with(containers=[{"name": "app", "image": "busybox"},
                                  {"name": "app", "image": "busybox"}]),
             422, "Invalid", 'spec.containers[1].name: Duplicate value: "app"',
             "spec.containers[1].name"),
    BadInput("pod-with-invalid-restart-policy", "POST", PODS, pod_with(restartPolicy="Sometimes"),
             422, "Invalid", 'spec.restartPolicy: Unsupported value: "Sometimes"',
             "spec.restartPolicy"),
    BadInput("service-port-zero", "POST", SERVICES, service(0), 422, "Invalid",
             "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
             "spec.ports[0].port"),
    BadInput("service-port-70000", "POST", SERVICES, service(70000), 422, "Invalid",
             "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
             "spec.ports[0].port"),
    BadInput("configmap-invalid-data-key", "POST", CONFIGMAPS, configmap("cfg", {"bad key": "x"}),
             422, "Invalid", "a valid config key must consist of alphanumeric characters",
             "data[bad key]"),
    BadInput("scale-to-negative-replicas", "PUT", DEPLOYMENTS + "/web/scale", scale(-1), 422,
             "Invalid", 'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1',
             "spec.replicas", setup=WEB_DEPLOYMENT),
    BadInput("storage-class-without-provisioner", "POST", STORAGE_CLASSES,
             {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
              "metadata": {"name": "bad-input-no-provisioner"}}, 422, "Invalid",
             "provisioner: Required value", "provisioner"),
    BadInput("csi-driver-with-a-bad-name", "POST", CSI_DRIVERS,
             {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
              "metadata": {"name": "Bad_Driver"}, "spec": {}}, 422, "Invalid",
             'CSIDriver.storage.k8s.io "Bad_Driver" is invalid: metadata.name: Invalid value: '
             '"Bad_Driver": a lowercase RFC 1123 subdomain must consist of', "metadata.name"),
    BadInput("csi-node-with-a-bad-driver-name", "POST", CSI_NODES,
             {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
              "metadata": {"name": "bad-input-node"},
              "spec": {"drivers": [{"name": "Bad_Driver!", "nodeID": "n"}]}}, 422, "Invalid",
             'spec.drivers[0].name: Invalid value: "Bad_Driver!": a lowercase RFC 1123 '
             "subdomain must consist of", "spec.drivers[0].name"),
    BadInput("csi-node-driver-without-node-id", "POST", CSI_NODES,
             {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
              "metadata": {"name": "bad-input-node"},
              "spec": {"drivers": [{"name": "disk.example.com", "nodeID": ""}]}}, 422,
             "Invalid", "spec.drivers[0].nodeID: Required value", "spec.drivers[0].nodeID"),
    BadInput("volume-attachment-without-a-source", "POST", VOLUME_ATTACHMENTS,
             {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
              "metadata": {"name": "bad-input-attachment"},
              "spec": {"attacher": "disk.example.com", "nodeName": "node-1", "source": {}}},
             422, "Invalid", "spec.source: Required value: must specify exactly one of "
             "inlineVolumeSpec and persistentVolumeName", "spec.source"),
    BadInput("claim-without-a-size", "POST", CLAIMS,
             {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
              "spec": {"accessModes": ["ReadWriteOnce"]}}, 422, "Invalid",
             "spec.resources[storage]: Required value", "spec.resources[storage]"),
    BadInput("hpa-max-below-min", "POST", HPAS_V2, hpa("v2", minReplicas=4), 422, "Invalid",
             'HorizontalPodAutoscaler.autoscaling "web" is invalid: spec.maxReplicas: Invalid '
             "value: 3: must be greater than or equal to `minReplicas`", "spec.maxReplicas"),
    BadInput("hpa-v1-zero-cpu-target", "POST", HPAS_V1, hpa("v1", targetCPUUtilizationPercentage=0),
             422, "Invalid", "spec.metrics[0].resource.target.averageUtilization: Invalid "
             "value: 0: must be greater than 0",
             "spec.metrics[0].resource.target.averageUtilization"),
    BadInput("hpa-without-scale-target", "POST", HPAS_V2,
             {**hpa("v2"), "spec": {"maxReplicas": 3}}, 422, "Invalid",
             "spec.scaleTargetRef.kind: Required value", "spec.scaleTargetRef.kind"),
    # -- updates of immutable fields (422) -------------------------------------------------
    BadInput("storage-class-provisioner-changed", "PATCH",
             STORAGE_CLASSES + "/bad-input-fixed-class", {"provisioner": "example.com/other"},
             422, "Invalid", "provisioner: Forbidden: updates to provisioner are forbidden.",
             "provisioner", content_type=MERGE, setup=((STORAGE_CLASSES, {
                 "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                 "metadata": {"name": "bad-input-fixed-class"},
                 "provisioner": "example.com/disk"}),)),
    BadInput("csi-driver-attach-required-changed", "PATCH",
             CSI_DRIVERS + "/bad-input-fixed.example.com", {"spec": {"attachRequired": False}},
             422, "Invalid", "spec.attachedRequired: Invalid value: false: field is immutable",
             "spec.attachedRequired", content_type=MERGE, setup=((CSI_DRIVERS, {
                 "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                 "metadata": {"name": "bad-input-fixed.example.com"}, "spec": {}}),)),
    BadInput("volume-attachment-node-changed", "PATCH",
             VOLUME_ATTACHMENTS + "/bad-input-fixed-attachment",
             {"spec": {"nodeName": "node-2"}}, 422, "Invalid", "field is immutable", "spec",
             content_type=MERGE, setup=((VOLUME_ATTACHMENTS, {
                 "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                 "metadata": {"name": "bad-input-fixed-attachment"},
                 "spec": {"attacher": "disk.example.com", "nodeName": "node-1",
                          "source": {"persistentVolumeName": "pv-1"}}}),)),
    BadInput("csi-storage-capacity-class-changed", "PATCH",
             CSI_STORAGE_CAPACITIES + "/fixed", {"storageClassName": "fast"}, 422, "Invalid",
             'storageClassName: Invalid value: "fast": field is immutable', "storageClassName",
             content_type=MERGE, setup=((CSI_STORAGE_CAPACITIES, {
                 "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                 "metadata": {"name": "fixed"}, "storageClassName": "standard"}),)),
    BadInput("patch-changes-pod-container-name", "PATCH", PODS + "/web",
             [{"op": "replace", "path": "/spec/containers/0/name", "value": "other"}], 422,
             "Invalid", "spec: Forbidden: pod updates may not change fields other than", "spec",
             content_type=JSON_PATCH, setup=WEB_POD),
    BadInput("patch-changes-deployment-selector", "PATCH", DEPLOYMENTS + "/web",
             {"spec": {"selector": {"matchLabels": {"app": "other"}},
                       "template": {"metadata": {"labels": {"app": "other"}}}}},
             422, "Invalid", "field is immutable", "spec.selector", content_type=MERGE,
             setup=WEB_DEPLOYMENT),
    # -- concurrency and existence (409) ---------------------------------------------------
    BadInput("update-with-stale-resource-version", "PUT", PODS + "/web", stale_pod(), 409,
             "Conflict", 'Operation cannot be fulfilled on pods "web": the object has been '
             "modified; please apply your changes to the latest version and try again",
             setup=WEB_POD),
    BadInput("create-of-an-existing-object", "POST", PODS, pod("web"), 409, "AlreadyExists",
             'pods "web" already exists', setup=WEB_POD),
    BadInput("delete-with-wrong-uid-precondition", "DELETE", PODS + "/web",
             {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "bogus"}},
             409, "Conflict", "Precondition failed: UID in precondition: bogus", setup=WEB_POD),
    BadInput("binding-an-already-bound-pod", "POST", PODS + "/web/binding",
             binding({"kind": "Node", "name": "node-2"}), 409, "Conflict",
             'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned '
             'to node "node-1"', setup=BOUND_POD),
    # Upstream answers this one with a reasonless 500 (BindingREST returns a plain error);
    # we answer 422 Invalid, keeping 500 for server bugs.
    BadInput("binding-without-a-target", "POST", PODS + "/web/binding", binding({}), 422,
             "Invalid", "target.name: Required value", setup=WEB_POD),
    # -- body size and media types (413, 415) ----------------------------------------------
    BadInput("body-over-3-mib", "POST", CONFIGMAPS,
             configmap("big", {"blob": "x" * (MAX_BODY_BYTES + 1024)}), 413,
             "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY_BYTES}"),
    BadInput("unknown-content-type-on-create", "POST", PODS, pod("web"), 415,
             "UnsupportedMediaType", UNKNOWN_FORMAT, content_type="application/x-foo"),
    BadInput("unknown-content-type-on-patch", "PATCH", PODS + "/web", {"metadata": {}}, 415,
             "UnsupportedMediaType", UNKNOWN_FORMAT, content_type="application/x-foo",
             setup=WEB_POD),
    # -- patches that do not apply (handlers/patch.go) -------------------------------------
    BadInput("json-patch-with-invalid-op", "PATCH", PODS + "/web",
             [{"op": "frob", "path": "/metadata/labels", "value": {"a": "b"}}], 422, "Invalid",
             PATCH_REJECTED, content_type=JSON_PATCH, setup=WEB_POD),
    BadInput("json-patch-with-failing-test-op", "PATCH", PODS + "/web",
             [{"op": "test", "path": "/metadata/name", "value": "other"},
              {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}], 422, "Invalid",
             PATCH_REJECTED, content_type=JSON_PATCH, setup=WEB_POD),
    BadInput("merge-patch-that-is-not-an-object", "PATCH", PODS + "/web", b"[1]", 400,
             "BadRequest", "cannot unmarshal array into Go value of type map[string]interface {}",
             content_type=MERGE, setup=WEB_POD),
    BadInput("force-on-a-merge-patch", "PATCH", PODS + "/web?force=true", {"metadata": {}}, 422,
             "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
             "specified for non-apply patch", "force", content_type=MERGE, setup=WEB_POD),
    # -- server-side apply (handlers/patch.go applyPatcher, the field manager) -------------
    BadInput("apply-without-field-manager", "PATCH", CONFIGMAPS + "/cfg",
             configmap("cfg", {"a": "1"}), 422, "Invalid",
             'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
             "required for apply patch", "fieldManager", content_type=APPLY),
    BadInput("apply-of-another-kind", "PATCH", CONFIGMAPS + "/web?fieldManager=test",
             service(80), 400, "BadRequest", "invalid object type: /v1, Kind=Service",
             content_type=APPLY),
    BadInput("apply-of-malformed-yaml", "PATCH", CONFIGMAPS + "/cfg?fieldManager=test",
             b"metadata: {name: cfg\ndata: [", 400, "BadRequest", "error decoding YAML",
             content_type=APPLY),
    BadInput("apply-with-an-unknown-field", "PATCH", PODS + "/web?fieldManager=test",
             pod_with(foo="bar"), 400, "BadRequest",
             "failed to create typed patch object (/web; /v1, Kind=Pod): .spec.foo: field not "
             "declared in schema", content_type=APPLY),
    BadInput("apply-setting-managed-fields", "PATCH", CONFIGMAPS + "/cfg?fieldManager=test",
             {**configmap("cfg", {}), "metadata": {"name": "cfg", "managedFields": []}}, 400,
             "BadRequest", "metadata.managedFields must be nil", content_type=APPLY),
    BadInput("apply-with-another-name-than-the-url", "PATCH", CONFIGMAPS + "/cfg?fieldManager=t",
             configmap("other", {}), 400, "BadRequest",
             "the name of the object (other) does not match the name on the URL (cfg)",
             content_type=APPLY),
    BadInput("apply-of-an-invalid-object", "PATCH", DEPLOYMENTS + "/web?fieldManager=test",
             deployment("web", replicas=-1), 422, "Invalid",
             "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
             "spec.replicas", content_type=APPLY),
    BadInput("apply-that-conflicts", "PATCH", DEPLOYMENTS + "/web?fieldManager=other",
             deployment("web", replicas=3), 409, "Conflict",
             'Apply failed with 1 conflict: conflict with "test": .spec.replicas',
             ".spec.replicas", content_type=APPLY, setup=APPLIED_DEPLOYMENT),
    # -- paths and methods (404, 405) ------------------------------------------------------
    BadInput("unknown-resource", "GET", "/api/v1/namespaces/{ns}/foos", None, 404, "NotFound",
             "the server could not find the requested resource"),
    BadInput("create-in-an-unknown-namespace", "POST", "/api/v1/namespaces/no-such-ns-0/pods",
             pod("web"), 404, "NotFound", 'namespaces "no-such-ns-0" not found'),
    BadInput("get-of-a-missing-object", "GET", PODS + "/missing", None, 404, "NotFound",
             'pods "missing" not found'),
    BadInput("post-to-a-named-object", "POST", PODS + "/web", pod("web"), 405,
             "MethodNotAllowed", "the server does not allow this method on the requested "
             "resource", setup=WEB_POD),
    BadInput("delete-of-the-namespaces-collection", "DELETE", "/api/v1/namespaces", None, 405,
             "MethodNotAllowed", "the server does not allow this method on the requested "
             "resource"),
    # -- list options (handlers/get.go, storage.ValidateListOptions, 400) ------------------
    BadInput("invalid-label-selector", "GET", PODS + "?labelSelector=a+in+(b", None, 400,
             "BadRequest", "unable to parse requirement"),
    BadInput("unsupported-field-selector", "GET", PODS + "?fieldSelector=spec.foo%3Dbar", None,
             400, "BadRequest", "field label not supported: spec.foo"),
    BadInput("limit-that-is-not-a-number", "GET", PODS + "?limit=ten", None, 400, "BadRequest"),
    BadInput("garbage-continue-token", "GET", PODS + "?limit=1&continue=garbage", None, 400,
             "BadRequest", "invalid continue token"),
    # -- API Priority and Fairness (flowcontrol/validation) -------------------------------
    BadInput("flow-schema-precedence-over-10000", "POST", FLOW_SCHEMAS, flow_schema(
        {"matchingPrecedence": 10001, "rules": [{"subjects": [
            {"kind": "Group", "group": {"name": "g"}}], "nonResourceRules": [
            {"verbs": ["get"], "nonResourceURLs": ["/a/*"]}]}]}), 422, "Invalid",
             "must not be greater than 10000", "spec.matchingPrecedence"),
    BadInput("flow-schema-rule-with-neither-kind-of-rule", "POST", FLOW_SCHEMAS, flow_schema(
        {"rules": [{"subjects": [{"kind": "Group", "group": {"name": "g"}}]}]}), 422, "Invalid",
             "at least one of resourceRules and nonResourceRules has to be non-empty",
             "spec.rules[0]"),
    BadInput("catch-all-level-changed", "PATCH",
             "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/catch-all",
             {"spec": {"limited": {"nominalConcurrencyShares": 50}}}, 422, "Invalid",
             "spec of 'catch-all' must equal the fixed value", "spec",
             content_type="application/merge-patch+json"),
)


@pytest.fixture(scope="module")
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


SETTLED: set[str] = set()  # the servers whose start-up writes are over


@pytest.fixture
async def settled(apiserver: APIServerProcess) -> str:
    """The shared API server's URL, once its start-up writes are done
    (wait_for_start_up_writes: the kubernetes Service, the local APIServices)."""
    if apiserver.url not in SETTLED:
        address = urllib.parse.urlsplit(apiserver.url)
        connection = http.client.HTTPConnection(address.hostname or "", address.port,
                                                timeout=10)
        try:
            await asyncio.to_thread(wait_for_start_up_writes, connection)
        finally:
            connection.close()
        SETTLED.add(apiserver.url)
    return apiserver.url


def assert_failure_status(answer: Answer) -> Obj:
    """The body is a meta/v1 Status describing the failure, with the HTTP code."""
    status = answer.body
    assert isinstance(status, dict), f"not a Status: {status!r}"
    assert status["kind"] == "Status" and status["apiVersion"] == "v1", status
    assert status["status"] == "Failure", status
    assert status["code"] == answer.status, status
    return status


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_bad_request_gets_upstream_status_and_changes_nothing(
    case: BadInput, settled: str, session: aiohttp.ClientSession, namespace: str,
    etcd_client: EtcdClient,
) -> None:
    for path, body in case.setup:
        if "?fieldManager=" in path:
            created = await send(session, "PATCH", settled + path.format(ns=namespace), body,
                                 APPLY)
        else:
            created = await send(session, "POST", settled + path.format(ns=namespace), body)
        assert created.status == 201, created.body
    before = await etcd_snapshot(etcd_client)

    answer = await send(session, case.method, settled + case.path.format(ns=namespace),
                        case.body, case.content_type)

    assert answer.status == case.code, answer.body
    status = assert_failure_status(answer)
    assert status.get("reason", "") == case.reason, status
    assert case.message in status["message"], status["message"]
    if case.field:
        fields = [cause.get("field") for cause in status["details"]["causes"]]
        assert case.field in fields, status["details"]
    assert await etcd_snapshot(etcd_client) == before


async def test_not_found_names_the_missing_object_in_details(
    settled: str, session: aiohttp.ClientSession, namespace: str
) -> None:
    answer = await send(session, "GET", f"{settled}/api/v1/namespaces/{namespace}/pods/missing")
    assert answer.status == 404
    assert assert_failure_status(answer)["details"] == {"name": "missing", "kind": "pods"}


async def test_invalid_object_lists_every_problem_as_a_cause(
    settled: str, session: aiohttp.ClientSession, namespace: str
) -> None:
    body = pod_named({"name": "Web", "labels": {"bad key": "x"}})
    answer = await send(session, "POST", f"{settled}/api/v1/namespaces/{namespace}/pods", body)
    assert answer.status == 422
    details = assert_failure_status(answer)["details"]
    assert details["name"] == "Web" and details["kind"] == "Pod"
    causes = {(cause["reason"], cause["field"]) for cause in details["causes"]}
    assert {("FieldValueInvalid", "metadata.name"),
            ("FieldValueInvalid", "metadata.labels")} <= causes


async def test_a_null_list_item_or_map_value_is_created_as_its_zero_value(
    settled: str, session: aiohttp.ClientSession, namespace: str
) -> None:
    """A null ObjectReference is decoded as one with nothing set, a null label value as
    "", as upstream's Go decoder does, and stored and answered so (upstream:
    `"secrets":[{}]`, `"labels":{"team":""}`)."""
    answer = await send(session, "POST", settled + SERVICE_ACCOUNTS.format(ns=namespace),
                        {"metadata": {"name": "null-items", "labels": {"team": None}},
                         "secrets": [None], "imagePullSecrets": [None, {"name": "pull"}]})
    assert answer.status == 201, answer.body
    assert answer.body["secrets"] == [{}]
    assert answer.body["imagePullSecrets"] == [{}, {"name": "pull"}]
    stored = await send(session, "GET",
                        settled + SERVICE_ACCOUNTS.format(ns=namespace) + "/null-items")
    assert stored.body["secrets"] == [{}], stored.body
    assert stored.body["metadata"]["labels"] == {"team": ""}, stored.body


async def test_dry_run_create_answers_the_object_but_stores_nothing(
    settled: str, session: aiohttp.ClientSession, namespace: str, etcd_client: EtcdClient
) -> None:
    before = await etcd_snapshot(etcd_client)
    answer = await send(session, "POST",
                        f"{settled}/api/v1/namespaces/{namespace}/pods?dryRun=All", pod("web"))
    assert answer.status == 201, answer.body
    assert answer.body["kind"] == "Pod" and answer.body["metadata"]["name"] == "web"
    assert answer.body["metadata"]["uid"]
    assert await etcd_snapshot(etcd_client) == before
    missing = await send(session, "GET", f"{settled}/api/v1/namespaces/{namespace}/pods/web")
    assert missing.status == 404


async def test_field_validation_warn_accepts_but_drops_the_unknown_field(
    settled: str, session: aiohttp.ClientSession, namespace: str, etcd_client: EtcdClient
) -> None:
    path = f"{settled}/api/v1/namespaces/{namespace}/pods"
    answer = await send(session, "POST", f"{path}?fieldValidation=Warn", pod_with(foo="bar"))
    assert answer.status == 201, answer.body
    assert 'unknown field \\"spec.foo\\"' in answer.headers["Warning"]
    assert answer.headers["Warning"].startswith("299 - ")
    assert "foo" not in answer.body["spec"]
    stored = await etcd_client.get(f"/registry/pods/{namespace}/web".encode())
    assert stored is not None and "foo" not in orjson.loads(stored.value)["spec"]


async def test_a_review_answers_without_the_fields_its_type_does_not_have(
    settled: str, session: aiohttp.ClientSession
) -> None:
    """A review is decoded into its type, so an unknown field, however deeply nested
    (the fuzzer's 200 levels once made the answer's encoding fail with a 500), is not
    echoed back; with fieldValidation=Strict it is refused."""
    nested: dict = {}
    for _ in range(300):
        nested = {"a": [nested]}
    body = json.dumps({"apiVersion": "authorization.k8s.io/v1",
                       "kind": "SelfSubjectRulesReview", "": nested,
                       "spec": {"namespace": "default"}}).encode()
    path = f"{settled}/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    answer = await send(session, "POST", path, body)
    assert answer.status == 201, answer.body
    assert "" not in answer.body and "resourceRules" in answer.body["status"]
    strict = await send(session, "POST", f"{path}?fieldValidation=Strict", body)
    assert strict.status == 400 and 'unknown field ""' in strict.body["message"]


async def test_server_side_apply_patch_creates_the_object(
    settled: str, session: aiohttp.ClientSession, namespace: str
) -> None:
    answer = await send(
        session, "PATCH",
        f"{settled}/api/v1/namespaces/{namespace}/configmaps/cfg?fieldManager=test",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: '1'\n",
        APPLY)
    assert answer.status == 201, answer.body
    assert answer.body["data"] == {"a": "1"}
    [entry] = answer.body["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("test", "Apply")


async def read_watch_events(response: aiohttp.ClientResponse, timeout: float = 10
                            ) -> list[Obj]:
    """Every event of a watch stream until the server closes it."""
    events = []
    async with asyncio.timeout(timeout):
        while line := await response.content.readline():
            events.append(orjson.loads(line))
    return events


async def test_watch_from_an_expired_resource_version_is_one_410_error_event(
    private_etcd: EtcdProcess, fast_tmp: Path, session: aiohttp.ClientSession
) -> None:
    async with private_etcd.client() as client:
        for i in range(5):  # history from before the API server starts: its cache lacks it
            await client.create(f"/unrelated/{i}".encode(), b"x")
    log = fast_tmp / f"apiserver-expired-{uuid.uuid4().hex[:8]}.log"
    async with APIServerProcess([private_etcd.client_url], log) as api:
        url = f"{api.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1"
        async with session.get(url) as response:
            assert response.status == 200
            events = await read_watch_events(response)
    assert len(events) == 1, events
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: 1 (")


@pytest.mark.slow
async def test_too_many_requests_in_flight_get_429_and_nothing_half_written(
    etcd: EtcdProcess, fast_tmp: Path, session: aiohttp.ClientSession, namespace: str,
    settled: str,
) -> None:
    log = fast_tmp / f"apiserver-429-{uuid.uuid4().hex[:8]}.log"
    limits = ("--max-requests-inflight=1", "--max-mutating-requests-inflight=1",
              "--enable-priority-and-fairness=false")
    async with APIServerProcess([etcd.client_url], log, extra_args=limits) as api:
        path = f"{api.url}/api/v1/namespaces/{namespace}/configmaps"
        answers: dict[str, Answer] = {}
        for round_ in range(5):
            names = [f"cm-{round_}-{i:02d}" for i in range(50)]
            sent = await asyncio.gather(*(
                send(session, "POST", path, configmap(name, {"blob": "x" * 50_000}))
                for name in names))
            answers.update(zip(names, sent, strict=True))
            if any(answer.status == 429 for answer in sent):
                break
    refused = {name for name, answer in answers.items() if answer.status == 429}
    created = {name for name, answer in answers.items() if answer.status == 201}
    assert refused, "50 concurrent creates never hit the in-flight limit of 1"
    assert created | refused == set(answers), {a.status for a in answers.values()}
    for name in refused:
        answer = answers[name]
        assert answer.headers.get("Retry-After", "").isdigit(), answer.headers
        assert "too many requests" in str(answer.body).lower()
    listed = await send(session, "GET", f"{settled}/api/v1/namespaces/{namespace}/configmaps")
    stored = {item["metadata"]["name"] for item in listed.body["items"]}
    assert stored == created


@pytest.mark.slow
async def test_etcd_outage_fails_requests_fast_and_watches_recover(
    private_etcd: EtcdProcess, fast_tmp: Path, session: aiohttp.ClientSession
) -> None:
    log = fast_tmp / f"apiserver-outage-{uuid.uuid4().hex[:8]}.log"
    async with APIServerProcess([private_etcd.client_url], log) as api:
        path = f"{api.url}/api/v1/namespaces/default/configmaps"
        created = await send(session, "POST", path, configmap("before"))
        assert created.status == 201, created.body
        start = created.body["metadata"]["resourceVersion"]
        watch_url = f"{path}?watch=true&resourceVersion={start}&allowWatchBookmarks=false"
        async with session.get(watch_url, timeout=aiohttp.ClientTimeout(total=120)) as watch:
            assert watch.status == 200
            await private_etcd.stop()

            for method, url, body in (("GET", f"{path}/before", None), ("GET", path, None),
                                      ("POST", path, configmap("during"))):
                began = time.monotonic()
                answer = await send(session, method, url, body)
                # bounded by the API server's etcd request timeout (5 s): never hung
                assert time.monotonic() - began < 30, f"{method} {url} took too long"
                assert answer.status in (503, 504), answer.body
                status = assert_failure_status(answer)
                assert status["reason"] in ("ServiceUnavailable", "Timeout"), status
            assert (await send(session, "GET", f"{api.url}/readyz")).status != 200

            await private_etcd.start()
            deadline = time.monotonic() + 30
            while (await send(session, "GET", f"{api.url}/readyz")).status != 200:
                assert time.monotonic() < deadline, "the API server never became ready again"
                await asyncio.sleep(0.2)
            after = await send(session, "POST", path, configmap("after"))
            assert after.status == 201, after.body
            assert (await send(session, "GET", f"{path}/before")).status == 200

            names = await names_seen_after_outage(watch, session, path, start)
    assert "after" in names and "during" not in names


async def names_seen_after_outage(watch: aiohttp.ClientResponse, session: aiohttp.ClientSession,
                                  path: str, start: str) -> set[str]:
    """Names of objects the watch reports; if the server closed it cleanly, re-watch once."""
    names: set[str] = set()
    last = start
    async with asyncio.timeout(60):
        while "after" not in names:
            line = await watch.content.readline()
            if not line:
                break
            event = orjson.loads(line)
            assert event["type"] != "ERROR", event
            if event["type"] == "ADDED":
                names.add(event["object"]["metadata"]["name"])
                last = event["object"]["metadata"]["resourceVersion"]
    if "after" in names:
        return names
    rewatch = f"{path}?watch=true&resourceVersion={last}&timeoutSeconds=5"
    async with session.get(rewatch) as response:
        for event in await read_watch_events(response):
            if event["type"] == "ADDED":
                names.add(event["object"]["metadata"]["name"])
    return names


@pytest.mark.parametrize("spec", [True, 5, "text", [1], {"groups": 5, "user": "x",
                                                         "nonResourceAttributes": "y"}])
@pytest.mark.parametrize("plural", ["selfsubjectrulesreviews", "subjectaccessreviews",
                                    "selfsubjectaccessreviews", "tokenreviews"])
async def test_a_review_with_a_spec_of_the_wrong_shape_is_never_a_500(
        settled: str, session: aiohttp.ClientSession, plural: str, spec: Any) -> None:
    """Found by the fuzz test (seed 2708770969): a review's spec that is not an object,
    or holds lists and objects of the wrong type, is answered or refused, not a 5xx."""
    group = "authentication.k8s.io" if plural == "tokenreviews" else "authorization.k8s.io"
    kind = {"selfsubjectrulesreviews": "SelfSubjectRulesReview",
            "subjectaccessreviews": "SubjectAccessReview",
            "selfsubjectaccessreviews": "SelfSubjectAccessReview",
            "tokenreviews": "TokenReview"}[plural]
    answer = await send(session, "POST", f"{settled}/apis/{group}/v1/{plural}",
                        {"apiVersion": f"{group}/v1", "kind": kind, "spec": spec})
    assert answer.status < 500, answer.body
