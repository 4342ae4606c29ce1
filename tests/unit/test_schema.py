"""Schemas of the built-in kinds: unknown/duplicate field detection, patch metadata, OpenAPI."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from minikube_py.api.resources import RESOURCES
from minikube_py.api.schema import (
    duplicate_fields,
    openapi_v2_definitions,
    openapi_v3_document,
    schema_for,
    unknown_fields,
)
from minikube_py.api.schema.registry import KINDS, definitions
from minikube_py.api.schema.strict import drop_null_fields
from minikube_py.api.schema.types import Field, Type

# --- manifests from the Kubernetes documentation ---------------------------------------

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nginx-deployment", "labels": {"app": "nginx"},
                 "annotations": {"kubernetes.io/change-cause": "image updated to 1.16.1"}},
    "spec": {
        "replicas": 3,
        "revisionHistoryLimit": 10,
        "strategy": {"type": "RollingUpdate",
                     "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
        "selector": {"matchLabels": {"app": "nginx"},
                     "matchExpressions": [{"key": "tier", "operator": "In",
                                           "values": ["frontend"]}]},
        "template": {
            "metadata": {"labels": {"app": "nginx", "tier": "frontend"}},
            "spec": {
                "containers": [{
                    "name": "nginx",
                    "image": "nginx:1.14.2",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                    "env": [
                        {"name": "MY_POD_NAME",
                         "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "CPU_LIMIT",
                         "valueFrom": {"resourceFieldRef": {"containerName": "nginx",
                                                            "resource": "limits.cpu",
                                                            "divisor": "1m"}}},
                        {"name": "LOG_LEVEL",
                         "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "level"}}},
                        {"name": "PASSWORD",
                         "valueFrom": {"secretKeyRef": {"name": "db", "key": "password",
                                                        "optional": False}}},
                    ],
                    "envFrom": [{"configMapRef": {"name": "game-demo"}, "prefix": "GAME_"}],
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                  "limits": {"cpu": "500m", "memory": "128Mi"}},
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": 80,
                                                  "httpHeaders": [{"name": "X-Probe",
                                                                   "value": "1"}]},
                                      "initialDelaySeconds": 3, "periodSeconds": 3},
                    "readinessProbe": {"tcpSocket": {"port": "http"},
                                       "initialDelaySeconds": 5},
                    "startupProbe": {"grpc": {"port": 2379}, "failureThreshold": 30},
                    "lifecycle": {"postStart": {"exec": {"command": ["/bin/sh", "-c", "true"]}},
                                  "preStop": {"sleep": {"seconds": 5}}},
                    "volumeMounts": [{"name": "config", "mountPath": "/config",
                                      "readOnly": True}],
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                        "allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]},
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                }],
                "volumes": [{"name": "config", "configMap": {"name": "game-demo",
                             "items": [{"key": "game.properties",
                                        "path": "game.properties"}]}}],
                "terminationGracePeriodSeconds": 30,
                "affinity": {"podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "nginx"}},
                            "topologyKey": "kubernetes.io/hostname"}}]}},
                "tolerations": [{"key": "node.kubernetes.io/unreachable",
                                 "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": 6000}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                               "whenUnsatisfiable": "DoNotSchedule",
                                               "labelSelector": {"matchLabels":
                                                                 {"app": "nginx"}}}],
            },
        },
    },
}

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "test-pd", "namespace": "default",
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                      "name": "rs", "uid": "1234", "controller": True,
                                      "blockOwnerDeletion": True}],
                 "finalizers": ["example.com/cleanup"]},
    "spec": {
        "initContainers": [{"name": "init-myservice", "image": "busybox:1.28",
                            "command": ["sh", "-c", "until nslookup myservice; do sleep 2; done"],
                            "restartPolicy": "Always"}],
        "containers": [{"name": "test-container", "image": "registry.k8s.io/test-webserver",
                        "args": ["--port", "8080"], "workingDir": "/srv", "stdin": True,
                        "tty": True, "terminationMessagePolicy": "FallbackToLogsOnError",
                        "volumeMounts": [{"mountPath": "/cache", "name": "cache-volume"},
                                         {"mountPath": "/projected", "name": "all-in-one"}]}],
        "volumes": [
            {"name": "cache-volume", "emptyDir": {"sizeLimit": "500Mi", "medium": "Memory"}},
            {"name": "host", "hostPath": {"path": "/data", "type": "DirectoryOrCreate"}},
            {"name": "claim", "persistentVolumeClaim": {"claimName": "myclaim"}},
            {"name": "creds", "secret": {"secretName": "mysecret", "defaultMode": 256}},
            {"name": "podinfo", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "all-in-one", "projected": {"sources": [
                {"secret": {"name": "mysecret", "items": [{"key": "username",
                                                           "path": "my-group/my-username"}]}},
                {"downwardAPI": {"items": [{"path": "cpu_limit", "resourceFieldRef": {
                    "containerName": "test-container", "resource": "limits.cpu"}}]}},
                {"configMap": {"name": "myconfigmap", "optional": True}},
                {"serviceAccountToken": {"audience": "api", "expirationSeconds": 3600,
                                         "path": "token"}}]}},
        ],
        "restartPolicy": "Always",
        "dnsPolicy": "None",
        "dnsConfig": {"nameservers": ["192.0.2.1"], "searches": ["ns1.svc.cluster-domain.example"],
                      "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]},
        "nodeSelector": {"disktype": "ssd"},
        "serviceAccountName": "build-robot",
        "automountServiceAccountToken": False,
        "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]}],
        "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
                            "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}]},
        "imagePullSecrets": [{"name": "regcred"}],
        "priorityClassName": "high-priority",
        "schedulingGates": [{"name": "example.com/foo"}],
        "readinessGates": [{"conditionType": "www.example.com/feature-1"}],
        "os": {"name": "linux"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In",
                 "values": ["antarctica-east1"]}]}]}}},
    },
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True",
                        "lastTransitionTime": "2024-01-02T15:04:05Z"}],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
        "startTime": "2024-01-02T15:04:00Z",
        "qosClass": "BestEffort",
        "containerStatuses": [{
            "name": "test-container", "image": "registry.k8s.io/test-webserver:latest",
            "imageID": "sha256:abc", "containerID": "containerd://abc", "ready": True,
            "started": True, "restartCount": 1,
            "state": {"running": {"startedAt": "2024-01-02T15:04:05Z"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                         "startedAt": "2024-01-02T15:00:00Z",
                                         "finishedAt": "2024-01-02T15:04:00Z"}}}],
    },
}

SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "my-service"},
    "spec": {
        "type": "NodePort",
        "selector": {"app.kubernetes.io/name": "MyApp"},
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 9376,
                   "nodePort": 30007},
                  {"name": "https", "port": 443, "targetPort": "https"}],
        "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
        "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "sessionAffinity": "ClientIP",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
        "externalTrafficPolicy": "Local", "internalTrafficPolicy": "Cluster",
        "externalIPs": ["198.51.100.32"], "publishNotReadyAddresses": True,
    },
    "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.127"}]}},
}

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "game-demo"},
    "data": {"player_initial_lives": "3", "ui_properties_file_name": "user-interface.properties",
             "game.properties": "enemy.types=aliens,monsters\nplayer.maximum-lives=5\n"},
    "binaryData": {"blob": "AAEC"},
    "immutable": True,
}


@pytest.mark.parametrize("manifest", [DEPLOYMENT, POD, SERVICE, CONFIG_MAP],
                         ids=lambda m: m["kind"])
def test_documented_manifests_have_no_unknown_fields(manifest: dict) -> None:
    group, _, version = manifest["apiVersion"].rpartition("/")
    schema = schema_for(group, version, manifest["kind"])
    assert schema is not None
    assert unknown_fields(manifest, schema) == []


def test_typos_are_reported_with_upstream_paths_in_document_order() -> None:
    deployment = copy.deepcopy(DEPLOYMENT)
    deployment["metadata"]["labelz"] = {"app": "nginx"}
    deployment["spec"] = {"replicass": 3, **deployment["spec"]}
    deployment["spec"]["template"]["spec"]["containers"][0]["imagee"] = "nginx"

    assert unknown_fields(deployment, schema_for("apps", "v1", "Deployment")) == [
        "metadata.labelz",
        "spec.replicass",
        "spec.template.spec.containers[0].imagee",
    ]


@pytest.mark.parametrize(("path", "expected"), [
    (("spex",), "spex"),
    (("spec", "containers", 0, "volumeMounts", 1, "mountpath"),
     "spec.containers[0].volumeMounts[1].mountpath"),
    (("spec", "volumes", 5, "projected", "sources", 3, "serviceAccountToken", "aud"),
     "spec.volumes[5].projected.sources[3].serviceAccountToken.aud"),
    (("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
      "nodeSelectorTerms", 0, "matchExpressions", 0, "value"),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpressions[0].value"),
    (("status", "containerStatuses", 0, "lastState", "terminated", "exitcode"),
     "status.containerStatuses[0].lastState.terminated.exitcode"),
    (("metadata", "ownerReferences", 0, "Controller"), "metadata.ownerReferences[0].Controller"),
])
def test_unknown_field_anywhere_in_a_pod_is_reported(path: tuple, expected: str) -> None:
    pod = copy.deepcopy(POD)
    target: Any = pod
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = "x"

    assert unknown_fields(pod, schema_for("", "v1", "Pod")) == [expected]


def test_map_keys_are_never_unknown_fields() -> None:
    config_map = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"spec": "x", "anything.example.com/at-all": "y"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "data": {"replicas": "3", "imagee": "typo-looking key"},
    }
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"capacity": {"cpu": "2", "example.com/gpu": "1"},
                       "allocatable": {"memory": "1Gi"}}}

    assert unknown_fields(config_map, schema_for("", "v1", "ConfigMap")) == []
    assert unknown_fields(node, schema_for("", "v1", "Node")) == []


def test_nothing_below_an_any_type_is_reported() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["volumes"].append(
        {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1", "anything": {"x": 1}}})
    pod["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Apply",
                                         "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:spec": {"f:whatever": {}}}}]

    assert unknown_fields(pod, schema_for("", "v1", "Pod")) == []


def test_fields_sent_as_null_are_dropped_at_every_depth_as_go_decodes_them() -> None:
    pod = copy.deepcopy(POD)
    pod["metadata"]["labels"] = {"app": None}  # a map value, not a field: the label app=""
    pod["spec"].update(nodeName=None, restartPolicy=None)
    pod["spec"]["containers"][0]["env"] = None
    pod["spec"]["volumes"].append({"name": "ebs", "hostPath": None,
                                   "awsElasticBlockStore": {"volumeID": None}})
    pod["spek"] = None  # unknown: left for fieldValidation to report

    drop_null_fields(pod, schema_for("", "v1", "Pod"))

    assert "nodeName" not in pod["spec"] and "restartPolicy" not in pod["spec"]
    assert "env" not in pod["spec"]["containers"][0]
    assert pod["spec"]["volumes"][-1] == {"name": "ebs",
                                          "awsElasticBlockStore": {"volumeID": None}}
    assert pod["metadata"]["labels"] == {"app": ""} and pod["spek"] is None


def test_a_null_list_item_or_map_value_is_its_types_zero_value_as_go_decodes_it() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["args"] = ["a", None]
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": None}}
    pod["spec"]["volumes"].append(None)
    pod["spec"]["tolerations"] = [None, {"key": "k", "value": None}]
    pod["spec"]["nodeSelector"] = {"zone": None}

    drop_null_fields(pod, schema_for("", "v1", "Pod"))

    assert pod["spec"]["volumes"][-1] == {}
    assert pod["spec"]["tolerations"] == [{}, {"key": "k"}]
    assert pod["spec"]["containers"][0]["args"] == ["a", ""]
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "0"}}
    assert pod["spec"]["nodeSelector"] == {"zone": ""}


def test_a_null_below_a_type_that_keeps_any_json_stays() -> None:
    crd = {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
        "type": "object", "default": None, "enum": [None]}}}]}}

    drop_null_fields(crd, schema_for("apiextensions.k8s.io", "v1", "CustomResourceDefinition"))

    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["enum"] == [None]


def test_list_items_are_checked_against_the_item_kind() -> None:
    listing = {"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {"continue": ""},
               "items": [DEPLOYMENT, {**DEPLOYMENT, "spek": {}}]}

    assert unknown_fields(listing, schema_for("apps", "v1", "DeploymentList")) == ["items[1].spek"]


def test_values_of_the_wrong_shape_are_left_to_the_decoder() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": None,
                  "spec": {"template": "not an object", "selector": ["a"]}}

    assert unknown_fields(deployment, schema_for("apps", "v1", "Deployment")) == []


@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"metadata": {"name": "a", "name": "b"}}', ["metadata.name"]),
    (b'{"kind": "Pod", "kind": "Pod", "kind": "Pod"}', ["kind"]),
    (b'{"spec": {"containers": [{"name": "a"}, {"name": "b", "image": "x", "image": "y"}]}}',
     ["spec.containers[1].image"]),
    (b'{"metadata": {"labels": {"app": "a", "app": "b"}}}', ["metadata.labels.app"]),
    (b'{"metadata": {"name": "a"}, "spec": {}}', []),
])
def test_duplicate_json_keys_are_reported_with_their_path(raw: bytes, expected: list) -> None:
    assert duplicate_fields(raw) == expected


# --- the kinds and their patch metadata ------------------------------------------------

EVERY_KIND = [
    ("", "v1", kind) for kind in (
        "Pod", "Node", "Namespace", "Service", "Endpoints", "ConfigMap", "Secret",
        "ServiceAccount", "Event", "PersistentVolumeClaim", "PersistentVolume", "LimitRange",
        "ResourceQuota", "Binding")
] + [("apps", "v1", kind) for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
     ] + [
    ("batch", "v1", "Job"), ("batch", "v1", "CronJob"),
    ("discovery.k8s.io", "v1", "EndpointSlice"), ("coordination.k8s.io", "v1", "Lease"),
    ("events.k8s.io", "v1", "Event"), ("scheduling.k8s.io", "v1", "PriorityClass"),
    ("policy", "v1", "PodDisruptionBudget"), ("autoscaling", "v1", "Scale"),
    ("networking.k8s.io", "v1", "Ingress"), ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("storage.k8s.io", "v1", "StorageClass"),
    ("apps", "v1", "ControllerRevision"),
] + [("rbac.authorization.k8s.io", "v1", kind)
     for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
     ] + [("admissionregistration.k8s.io", "v1", kind)
          for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
          ] + [("certificates.k8s.io", "v1", "CertificateSigningRequest")]


@pytest.mark.parametrize("gvk", EVERY_KIND, ids="/".join)
def test_every_kind_has_a_schema_with_type_and_object_metadata(gvk: tuple) -> None:
    schema = schema_for(*gvk)

    assert schema is not None and schema.kind == "object"
    assert {"apiVersion", "kind", "metadata"} <= set(schema.fields)
    assert schema.fields["metadata"].type.name == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def test_every_served_resource_has_a_schema_and_a_list_schema() -> None:
    for resource in RESOURCES:
        assert schema_for(resource.group, resource.version, resource.kind) is not None
        if "list" in resource.verbs:
            assert schema_for(resource.group, resource.version, resource.list_kind) is not None


def test_unknown_kinds_have_no_schema() -> None:
    assert schema_for("apps", "v1", "Deploymnet") is None
    assert schema_for("apps", "v2", "Deployment") is None


def _field(gvk: tuple, *path: str) -> Field:
    """The field at a dotted path of a kind; lists and maps are stepped through."""
    schema = schema_for(*gvk)
    assert schema is not None
    field = None
    for name in path:
        while schema.kind in ("array", "map"):
            schema = schema.items
        field = schema.fields[name]
        schema = field.type
    assert field is not None
    return field


POD_GVK = ("", "v1", "Pod")
VALIDATING_WEBHOOKS = ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration")
MUTATING_WEBHOOKS = ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration")
CSR = ("certificates.k8s.io", "v1", "CertificateSigningRequest")

# (kind, path, patch_strategy, patch_merge_key, list_type, list_map_keys), as upstream's
# struct tags and +listType markers say.
PATCH_METADATA = [
    (POD_GVK, ("spec", "containers"), "merge", "name", "map", ("name",)),
    (POD_GVK, ("spec", "initContainers"), "merge", "name", "map", ("name",)),
    (POD_GVK, ("spec", "ephemeralContainers"), "merge", "name", "map", ("name",)),
    (POD_GVK, ("spec", "volumes"), "merge,retainKeys", "name", "map", ("name",)),
    (POD_GVK, ("spec", "containers", "env"), "merge", "name", "map", ("name",)),
    (POD_GVK, ("spec", "containers", "ports"), "merge", "containerPort", "map",
     ("containerPort", "protocol")),
    (POD_GVK, ("spec", "containers", "volumeMounts"), "merge", "mountPath", "map",
     ("mountPath",)),
    (POD_GVK, ("spec", "containers", "volumeDevices"), "merge", "devicePath", "map",
     ("devicePath",)),
    (POD_GVK, ("spec", "containers", "envFrom"), None, None, "atomic", ()),
    (POD_GVK, ("spec", "containers", "command"), None, None, "atomic", ()),
    (POD_GVK, ("spec", "tolerations"), None, None, "atomic", ()),
    (POD_GVK, ("spec", "imagePullSecrets"), "merge", "name", "map", ("name",)),
    (POD_GVK, ("spec", "hostAliases"), "merge", "ip", "map", ("ip",)),
    (POD_GVK, ("spec", "topologySpreadConstraints"), "merge", "topologyKey", "map",
     ("topologyKey", "whenUnsatisfiable")),
    (POD_GVK, ("spec", "resourceClaims"), "merge,retainKeys", "name", "map", ("name",)),
    (POD_GVK, ("spec", "schedulingGates"), "merge", "name", "map", ("name",)),
    (POD_GVK, ("spec", "readinessGates"), None, None, "atomic", ()),
    (POD_GVK, ("status", "conditions"), "merge", "type", "map", ("type",)),
    (POD_GVK, ("status", "podIPs"), "merge", "ip", "map", ("ip",)),
    (POD_GVK, ("status", "hostIPs"), "merge", "ip", "atomic", ()),
    (POD_GVK, ("status", "containerStatuses"), None, None, "atomic", ()),
    (POD_GVK, ("metadata", "finalizers"), "merge", None, "set", ()),
    (POD_GVK, ("metadata", "ownerReferences"), "merge", "uid", "map", ("uid",)),
    (POD_GVK, ("metadata", "managedFields"), None, None, "atomic", ()),
    (("", "v1", "Service"), ("spec", "ports"), "merge", "port", "map", ("port", "protocol")),
    (("", "v1", "Service"), ("status", "conditions"), "merge", "type", "map", ("type",)),
    (("", "v1", "Node"), ("spec", "podCIDRs"), "merge", None, "set", ()),
    (("", "v1", "Node"), ("spec", "taints"), None, None, "atomic", ()),
    (("", "v1", "Node"), ("status", "addresses"), "merge", "type", "map", ("type",)),
    (("", "v1", "Node"), ("status", "conditions"), "merge", "type", "map", ("type",)),
    (("", "v1", "ServiceAccount"), ("secrets",), "merge", "name", "map", ("name",)),
    (("apps", "v1", "Deployment"), ("spec", "strategy"), "retainKeys", None, None, ()),
    (("apps", "v1", "Deployment"), ("status", "conditions"), "merge", "type", "map", ("type",)),
    (("apps", "v1", "StatefulSet"), ("spec", "volumeClaimTemplates"), None, None, "atomic", ()),
    (("batch", "v1", "Job"), ("status", "conditions"), "merge", "type", "atomic", ()),
    (("policy", "v1", "PodDisruptionBudget"), ("spec", "selector"), "replace", None, None, ()),
    (("rbac.authorization.k8s.io", "v1", "Role"), ("rules",), None, None, "atomic", ()),
    (VALIDATING_WEBHOOKS, ("webhooks",), "merge", "name", "map", ("name",)),
    (VALIDATING_WEBHOOKS, ("webhooks", "rules"), None, None, "atomic", ()),
    (VALIDATING_WEBHOOKS, ("webhooks", "matchConditions"), "merge", "name", "map", ("name",)),
    (VALIDATING_WEBHOOKS, ("webhooks", "admissionReviewVersions"), None, None, "atomic", ()),
    (MUTATING_WEBHOOKS, ("webhooks",), "merge", "name", "map", ("name",)),
    (CSR, ("status", "conditions"), None, None, "map", ("type",)),
    (CSR, ("spec", "usages"), None, None, "atomic", ()),
    (CSR, ("spec", "groups"), None, None, "atomic", ()),
]


@pytest.mark.parametrize(("gvk", "path", "strategy", "merge_key", "list_type", "map_keys"),
                         PATCH_METADATA,
                         ids=[".".join((gvk[2], *path)) for gvk, path, *_ in PATCH_METADATA])
def test_patch_metadata_matches_upstream(gvk: tuple, path: tuple, strategy: str | None,
                                         merge_key: str | None, list_type: str | None,
                                         map_keys: tuple) -> None:
    field = _field(gvk, *path)

    assert (field.patch_strategy, field.patch_merge_key) == (strategy, merge_key)
    assert (field.list_type, field.list_map_keys) == (list_type, map_keys)


def test_scalars_have_upstream_types() -> None:
    service = ("", "v1", "Service")
    assert _field(service, "spec", "ports", "targetPort").type.kind == "int-or-string"
    assert _field(POD_GVK, "spec", "containers", "resources", "limits").type.items.kind == (
        "quantity")
    assert _field(POD_GVK, "metadata", "creationTimestamp").type.name == (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time")
    assert _field(("autoscaling", "v1", "Scale"), "status", "selector").type.kind == "string"


def _named_types() -> dict[str, list[Type]]:
    """Every named type reachable from the kinds, with every distinct object of that name."""
    seen: dict[str, list[Type]] = {}
    pending = list(KINDS.values())
    visited: set[int] = set()
    while pending:
        schema = pending.pop()
        if id(schema) in visited:
            continue
        visited.add(id(schema))
        if schema.name and all(other is not schema for other in seen.get(schema.name, [])):
            seen.setdefault(schema.name, []).append(schema)
        pending.extend(field.type for field in schema.fields.values())
        if schema.items is not None:
            pending.append(schema.items)
    return seen


def test_each_definition_name_is_one_type() -> None:
    duplicated = {name for name, types in _named_types().items() if len(types) > 1}

    assert duplicated == set()


def _client_model(definition: str) -> type | None:
    """The kubernetes client model generated from an upstream definition, e.g.
    io.k8s.api.core.v1.Event -> CoreV1Event, io.k8s.api.core.v1.PodSpec -> V1PodSpec."""
    models = pytest.importorskip("kubernetes.client.models")
    *_, group, version, kind = definition.split(".")
    for name in (group.capitalize() + version.capitalize() + kind, version.capitalize() + kind):
        if hasattr(models, name):
            return getattr(models, name)
    return None


# The metrics API is not in the client (kube-apiserver's OpenAPI has no metrics.k8s.io):
# its fields, from k8s.io/metrics/pkg/apis/metrics/v1beta1/types.go.
_METRICS_FIELDS = {
    "NodeMetrics": {"apiVersion", "kind", "metadata", "timestamp", "window", "usage"},
    "PodMetrics": {"apiVersion", "kind", "metadata", "timestamp", "window", "containers"},
    "ContainerMetrics": {"name", "usage"},
    "NodeMetricsList": {"apiVersion", "kind", "metadata", "items"},
    "PodMetricsList": {"apiVersion", "kind", "metadata", "items"},
}


def test_object_fields_are_exactly_those_of_the_upstream_api() -> None:
    """Field names are checked against the models the kubernetes client generates from
    upstream's OpenAPI (release 1.37): no misspelt field, none missing."""
    mismatched = {}
    for name, (schema,) in _named_types().items():
        if schema.kind != "object":
            continue
        if name.startswith("io.k8s.metrics.pkg.apis.metrics.v1beta1."):
            upstream = _METRICS_FIELDS[name.rsplit(".", 1)[1]]
        else:
            model = _client_model(name)
            assert model is not None, name
            upstream = {info.serialization_alias or attr
                        for attr, info in model.model_fields.items()}
        if set(schema.fields) != upstream:
            mismatched[name] = (set(schema.fields) - upstream, upstream - set(schema.fields))

    assert mismatched == {}


# --- OpenAPI ---------------------------------------------------------------------------

def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):  # (JSONSchemaProps has a
                yield value                                # property named $ref)
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


GROUP_VERSIONS = sorted({(r.group, r.version) for r in RESOURCES} | {("autoscaling", "v1")})


@pytest.mark.parametrize("group_version", GROUP_VERSIONS, ids="/".join)
def test_every_ref_of_a_v3_document_resolves(group_version: tuple) -> None:
    document = openapi_v3_document(*group_version)
    schemas = document["components"]["schemas"]
    refs = set(_refs(document))

    assert refs
    assert all(ref.startswith("#/components/schemas/") for ref in refs)
    assert {ref.removeprefix("#/components/schemas/") for ref in refs} <= set(schemas)
    json.dumps(document)


def test_apps_document_holds_deployment_with_its_group_version_kind() -> None:
    document = openapi_v3_document("apps", "v1")
    schemas = document["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]

    assert document["openapi"] == "3.0.0"
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert deployment["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]
    for shared in ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                   "io.k8s.api.core.v1.PodSpec", "io.k8s.api.autoscaling.v1.Scale"):
        assert shared in schemas
    assert "x-kubernetes-group-version-kind" not in schemas["io.k8s.api.core.v1.PodSpec"]


def test_v3_properties_carry_patch_extensions() -> None:
    schemas = openapi_v3_document("", "v1")["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    ports = schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"]

    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-type"] == "map"
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert schemas["io.k8s.api.core.v1.PodSpec"]["required"] == ["containers"]


def test_v3_int_or_string_and_quantity_are_rendered_like_upstream() -> None:
    schemas = openapi_v3_document("", "v1")["components"]["schemas"]

    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["format"] == "int-or-string"
    assert int_or_string["oneOf"] == [{"type": "integer"}, {"type": "string"}]
    assert int_or_string["x-kubernetes-int-or-string"] is True
    assert schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"] == [
        {"type": "string"}, {"type": "number"}]
    assert schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"] == "date-time"


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: f"{r.group}/{r.plural}")
def test_kubectl_explain_finds_each_resource_kind_through_its_paths(resource: Any) -> None:
    """explain looks up .../<plural> (or .../<plural>/{name}) for an operation's
    x-kubernetes-group-version-kind, then the definition listing that GVK."""
    document = openapi_v3_document(resource.group, resource.version)
    prefix = f"/apis/{resource.group}" if resource.group else "/api"
    scope = "/namespaces/{namespace}" if resource.namespaced else ""
    collection = f"{prefix}/{resource.version}{scope}/{resource.plural}"
    gvk = {"group": resource.group, "kind": resource.kind, "version": resource.version}

    found = [operation["x-kubernetes-group-version-kind"]
             for path in (collection, collection + "/{name}") if path in document["paths"]
             for method, operation in document["paths"][path].items() if method != "parameters"]
    assert gvk in found
    assert [name for name, schema in document["components"]["schemas"].items()
            if gvk in schema.get("x-kubernetes-group-version-kind", [])]


@pytest.mark.parametrize("resource", [r for r in RESOURCES if "patch" in r.verbs],
                         ids=lambda r: f"{r.group}/{r.plural}")
def test_patch_operations_offer_field_validation_so_kubectl_validates_on_the_server(
        resource: Any) -> None:
    document = openapi_v3_document(resource.group, resource.version)
    gvk = {"group": resource.group, "kind": resource.kind, "version": resource.version}
    patches = [item["patch"] for item in document["paths"].values()
               if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"] == gvk]

    assert patches
    for patch in patches:
        assert "fieldValidation" in [parameter["name"] for parameter in patch["parameters"]]


def test_scale_subresource_is_served_as_autoscaling_scale() -> None:
    paths = openapi_v3_document("apps", "v1")["paths"]
    scale = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]

    assert scale["put"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling", "kind": "Scale", "version": "v1"}
    assert scale["get"]["operationId"] == "readAppsV1NamespacedDeploymentScale"


def test_v2_definitions_cover_every_kind_with_resolvable_refs() -> None:
    group_versions = {(group, version) for group, version, _ in KINDS}
    definitions_v2 = openapi_v2_definitions(group_versions)
    refs = set(_refs(definitions_v2))

    assert {schema.name for schema in KINDS.values()} <= set(definitions_v2)
    # only the group-versions asked for: the metrics server publishes metrics.k8s.io
    metrics_only = openapi_v2_definitions([("metrics.k8s.io", "v1beta1")])
    assert "io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics" in metrics_only
    assert "io.k8s.api.core.v1.Pod" not in metrics_only
    assert all(ref.startswith("#/definitions/") for ref in refs)
    assert {ref.removeprefix("#/definitions/") for ref in refs} <= set(definitions_v2)
    assert definitions_v2["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"
    assert definitions_v2["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]


def test_definitions_are_collected_from_roots_transitively() -> None:
    found = definitions([schema_for("", "v1", "ConfigMap")])

    assert list(found) == sorted(found)
    assert set(found) == {
        "io.k8s.api.core.v1.ConfigMap",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
        "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    }
