"""`mkctl describe` next to `kubectl describe`: the same objects, the same text.

The objects are written straight through the API, status included, so every part of a
description has something to show without a kubelet or controllers: a pod with running,
waiting and terminated containers, a node with conditions, capacity, a lease and pods
bound to it, a deployment owning two replicasets, a daemonset, a statefulset, a job and
a cron job, services with EndpointSlices, configmaps, secrets, a service account, a
claim, quotas, a lease, and events about them (core and events.k8s.io). Times written
into objects are fixed; the ages the clock changes are masked as in test_mkctl.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.cluster.apiserver import APIServerProcess
from tests.test_mkctl import REPO, Clis, assert_same

STARTED = "2026-01-02T03:04:05Z"
FINISHED = "2026-01-02T03:14:15Z"
LONG_ANNOTATION = "x" * 150


def _call(base: str, method: str, path: str, body: Obj | None = None) -> Obj:
    request = urllib.request.Request(
        base + path, data=None if body is None else json.dumps(body).encode(), method=method,
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _ago(*, micro: bool = False, **delta: float) -> str:
    moment = datetime.now(UTC) - timedelta(**delta)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


TEMPLATE = {"metadata": {"labels": {"app": "web"}, "annotations": {"team": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                     "ports": [{"containerPort": 80}],
                                     "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {
                                         "fieldPath": "metadata.name"}}}],
                                     "resources": {"requests": {"cpu": "100m"}}}],
                     "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
                     "topologySpreadConstraints": [
                         {"maxSkew": 1, "topologyKey": "zone",
                          "whenUnsatisfiable": "DoNotSchedule",
                          "labelSelector": {"matchExpressions": [
                              {"key": "app", "operator": "In", "values": ["web"]}]}}],
                     "tolerations": [{"key": "dedicated", "operator": "Exists"}]}}


def _deployment() -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": TEMPLATE}}


def _replica_set(deployment: Obj, name: str, template: Obj) -> Obj:
    labels = {**template["metadata"]["labels"], "pod-template-hash": name.split("-")[-1]}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"deployment.kubernetes.io/revision": "1"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": "web", "uid": deployment["metadata"]["uid"],
                                              "controller": True}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {**template, "metadata": {**template["metadata"],
                                                           "labels": labels}}}}


SERVICES = [
    {"metadata": {"name": "web", "labels": {"app": "web"}},
     "spec": {"selector": {"app": "web", "tier": "frontend"},
              "ports": [{"name": "http", "port": 80, "targetPort": 8080},
                        {"name": "metrics", "port": 9090, "targetPort": "metrics"}]}},
    {"metadata": {"name": "lb", "annotations": {"note": "public"}},
     "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "externalIPs": ["1.2.3.4"],
              "externalTrafficPolicy": "Local", "sessionAffinity": "ClientIP",
              "loadBalancerSourceRanges": ["10.0.0.0/8"],
              "ports": [{"port": 443, "protocol": "TCP", "appProtocol": "https"}]}},
    {"metadata": {"name": "external"},
     "spec": {"type": "ExternalName", "externalName": "example.com"}},
]


def _endpoint_slice() -> Obj:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                      {"name": "metrics", "port": 9090, "protocol": "TCP"}],
            "endpoints": [{"addresses": [f"10.244.0.{i}"],
                           "conditions": {"ready": i != 3}} for i in range(1, 7)]}


def _web_pod(node: str, ns: str, owner: Obj) -> Obj:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "5d4f",
                       "suite": ns},
            "annotations": {"note": "short", "long": LONG_ANNOTATION,
                            "script": "line one\nline two\n",
                            "kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": owner["metadata"]["name"],
                                 "uid": owner["metadata"]["uid"], "controller": True}]},
        "spec": {
            "nodeName": node,
            "nodeSelector": {"disk": "ssd", "kubernetes.io/os": "linux"},
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "web"}}},
                {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname",
                 "whenUnsatisfiable": "ScheduleAnyway"}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "dedicated", "operator": "Equal", "value": "web",
                 "effect": "NoSchedule"},
                {"operator": "Exists"}],
            "initContainers": [{"name": "setup", "image": "busybox:1.36",
                                "command": ["sh", "-c", "echo one\necho two"]}],
            "containers": [
                {"name": "nginx", "image": "nginx:1.25",
                 "ports": [{"name": "http", "containerPort": 80},
                           {"containerPort": 443, "hostPort": 8443}],
                 "args": ["--verbose"],
                 "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                               "requests": {"cpu": "250m", "memory": "64Mi"}},
                 "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                 "readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]},
                                    "initialDelaySeconds": 5},
                 "startupProbe": {"tcpSocket": {"port": "http"}},
                 "env": [
                     {"name": "MODE", "value": "on"},
                     {"name": "EMPTY", "value": ""},
                     {"name": "LINES", "value": "first\nsecond"},
                     {"name": "POD_NAME",
                      "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                     {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                     {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {
                         "containerName": "nginx", "resource": "limits.cpu",
                         "divisor": "1m"}}},
                     {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {
                         "name": "creds", "key": "password"}}},
                     {"name": "COLOR", "valueFrom": {"configMapKeyRef": {
                         "name": "settings", "key": "color", "optional": True}}}],
                 "envFrom": [{"configMapRef": {"name": "settings"}},
                             {"prefix": "DB_", "secretRef": {"name": "db", "optional": True}}],
                 "volumeMounts": [
                     {"name": "data", "mountPath": "/var/data"},
                     {"name": "config", "mountPath": "/etc/config", "readOnly": True},
                     {"name": "data", "mountPath": "/var/log/app", "subPath": "logs"}]},
                {"name": "sidecar", "image": "busybox:1.36", "command": ["sleep", "infinity"]},
                {"name": "stopped", "image": "busybox:1.36"}],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "config", "configMap": {"name": "settings"}},
                {"name": "creds", "secret": {"secretName": "creds", "optional": True}},
                {"name": "host", "hostPath": {"path": "/var/run", "type": "Directory"}},
                {"name": "claim", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "share", "nfs": {"server": "nfs.example", "path": "/exports"}},
                {"name": "csi", "csi": {"driver": "csi.example.com", "volumeAttributes": {
                    "size": "1Gi", "class": "fast"}}},
                {"name": "empty-csi", "csi": {"driver": "csi.example.com", "readOnly": True}},
                {"name": "info", "downwardAPI": {"items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "token", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                    {"configMap": {"name": "kube-root-ca.crt"}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "fieldPath": "metadata.namespace"}}]}}]}}]},
    }


def _web_pod_status() -> Obj:
    def status(name: str, state: Obj, **more: Any) -> Obj:
        return {"name": name, "image": "docker.io/library/" + name, "imageID": "sha256:" + name,
                "containerID": "containerd://" + name, "state": state,
                "ready": bool(state.get("running")), "restartCount": more.pop("restarts", 0),
                **more}

    terminated = {"terminated": {"exitCode": 137, "signal": 9, "reason": "Error",
                                 "message": "killed", "startedAt": STARTED,
                                 "finishedAt": FINISHED}}
    return {
        "phase": "Running", "hostIP": "10.0.0.5", "podIP": "10.244.0.7",
        "podIPs": [{"ip": "10.244.0.7"}, {"ip": "fd00::7"}], "startTime": STARTED,
        "conditions": [{"type": t, "status": s} for t, s in (
            ("PodReadyToStartContainers", "True"), ("Initialized", "True"),
            ("Ready", "False"), ("ContainersReady", "False"), ("PodScheduled", "True"))],
        "initContainerStatuses": [status("setup", {"terminated": {
            "exitCode": 0, "reason": "Completed", "startedAt": STARTED,
            "finishedAt": FINISHED}})],
        "containerStatuses": [
            status("nginx", {"running": {"startedAt": STARTED}}, restarts=3,
                   lastState=terminated),
            status("sidecar", {"waiting": {"reason": "CrashLoopBackOff"}}),
            status("stopped", terminated)],
    }


def _node(name: str) -> Obj:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "node-role.kubernetes.io/control-plane": "",
            "node-role.kubernetes.io/worker": "true", "kubernetes.io/role": "edge"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24", "fd00::/64"],
                 "providerID": "minikube-py://" + name,
                 "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]},
    }


def _node_status() -> Obj:
    return {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi",
                     "hugepages-2Mi": "0", "example.com/gpu": "2"},
        "allocatable": {"cpu": "3500m", "memory": "7Gi", "pods": "110",
                        "ephemeral-storage": "90Gi", "hugepages-2Mi": "0",
                        "example.com/gpu": "2"},
        "conditions": [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
             "message": "kubelet has sufficient memory available",
             "lastHeartbeatTime": STARTED, "lastTransitionTime": STARTED},
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "kubelet is posting ready status",
             "lastHeartbeatTime": FINISHED, "lastTransitionTime": STARTED}],
        "addresses": [{"type": "InternalIP", "address": "10.0.0.5"},
                      {"type": "Hostname", "address": "describe-node"}],
        "nodeInfo": {"machineID": "m1", "systemUUID": "u1", "bootID": "b1",
                     "kernelVersion": "6.8.0", "osImage": "Debian GNU/Linux 12",
                     "containerRuntimeVersion": "containerd://1.7.0",
                     "kubeletVersion": "v1.37.1", "kubeProxyVersion": "",
                     "operatingSystem": "linux", "architecture": "amd64"},
    }


def _event(ns: str, obj: Obj, name: str, **fields: Any) -> Obj:
    meta = obj["metadata"]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{name}", "namespace": ns},
            "involvedObject": {"kind": obj["kind"], "name": meta["name"],
                               "namespace": meta.get("namespace", ""), "uid": meta["uid"],
                               "apiVersion": obj["apiVersion"]},
            "type": "Normal", "source": {"component": "default-scheduler"}, **fields}


@dataclass
class World:
    clis: Clis
    ns: str
    empty: str
    node: str


@pytest.fixture(scope="module")
def world(apiserver: APIServerProcess, kubeconfig: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = apiserver.url
    ident = uuid.uuid4().hex[:6]
    ns, empty, node_name = (f"describe-{ident}", f"describe-{ident}-empty",
                            f"describe-node-{ident}")
    for name in (ns, empty):
        _call(base, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    node = _call(base, "POST", "/api/v1/nodes", _node(node_name))
    _call(base, "PUT", f"/api/v1/nodes/{node_name}/status",
          {**node, "status": _node_status()})
    apps = f"/apis/apps/v1/namespaces/{ns}"
    deployment = _call(base, "POST", f"{apps}/deployments", _deployment())
    old_template = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "containers": [
        {"name": "nginx", "image": "nginx:1.24"}]}}
    _call(base, "POST", f"{apps}/replicasets", _replica_set(deployment, "web-7c9b", old_template))
    replica_set = _call(base, "POST", f"{apps}/replicasets",
                        _replica_set(deployment, "web-5d4f", TEMPLATE))
    _call(base, "POST", f"/api/v1/namespaces/{ns}/configmaps", {
        "metadata": {"name": "settings", "labels": {"app": "web"}},
        "data": {"color": "blue", "multi": "first\nsecond\n", "empty": ""},
        "binaryData": {"blob": "AAECAw=="}})
    _call(base, "POST", f"/api/v1/namespaces/{ns}/secrets", {
        "metadata": {"name": "creds"}, "type": "Opaque",
        "stringData": {"password": "hunter2", "user": "admin", "empty": ""}})
    _call(base, "POST", f"{apps}/daemonsets", {
        "metadata": {"name": "agent", "labels": {"app": "agent"}},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                       "containers": [{"name": "agent", "image": "agent:1"}]}}}})
    _call(base, "POST", f"{apps}/statefulsets", {
        "metadata": {"name": "db", "labels": {"app": "db"}},
        "spec": {"serviceName": "db", "replicas": 3,
                 "selector": {"matchLabels": {"app": "db"}},
                 "updateStrategy": {"type": "RollingUpdate",
                                    "rollingUpdate": {"partition": 1}},
                 "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
                 "volumeClaimTemplates": [
                     {"metadata": {"name": "data", "labels": {"app": "db"}},
                      "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                               "resources": {"requests": {"storage": "1Gi"}}}},
                     {"metadata": {"name": "logs"},
                      "spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                               "resources": {"requests": {}}}}]}})
    job = _call(base, "POST", f"/apis/batch/v1/namespaces/{ns}/jobs", {
        "metadata": {"name": "migrate"},
        "spec": {"completions": 3, "parallelism": 2, "completionMode": "Indexed",
                 "backoffLimit": 4, "ttlSecondsAfterFinished": 60,
                 "activeDeadlineSeconds": 600,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [
                     {"name": "migrate", "image": "migrate:1", "args": ["up"]}]}}}})
    _call(base, "PUT", f"/apis/batch/v1/namespaces/{ns}/jobs/migrate/status", {**job, "status": {
        "startTime": STARTED, "completionTime": FINISHED, "succeeded": 3, "ready": 0,
        "completedIndexes": "0-2", "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": FINISHED,
             "lastTransitionTime": FINISHED},
            {"type": "Complete", "status": "True", "lastProbeTime": FINISHED,
             "lastTransitionTime": FINISHED}]}})
    _call(base, "POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {
        "metadata": {"name": "builder"},
        "imagePullSecrets": [{"name": "registry"}, {"name": "mirror"}]})
    _call(base, "POST", f"/api/v1/namespaces/{ns}/endpoints", {
        "metadata": {"name": "manual"},
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                     "notReadyAddresses": [{"ip": "10.0.0.3"}],
                     "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
                    {"notReadyAddresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 53}]}]})
    cron_job = _call(base, "POST", f"/apis/batch/v1/namespaces/{ns}/cronjobs", {
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "timeZone": "Etc/UTC", "startingDeadlineSeconds": 30,
                 "jobTemplate": {"spec": {"completions": 1, "template": {"spec": {
                     "restartPolicy": "OnFailure",
                     "containers": [{"name": "backup", "image": "backup:1"}]}}}}}})
    _call(base, "PUT", f"/apis/batch/v1/namespaces/{ns}/cronjobs/nightly/status", {
        **cron_job, "status": {"lastScheduleTime": STARTED, "active": [
            {"kind": "Job", "name": "nightly-1", "namespace": ns},
            {"kind": "Job", "name": "nightly-2", "namespace": ns}]}})
    claims = f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
    _call(base, "POST", claims, {
        "metadata": {"name": "data", "labels": {"app": "web"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                 "resources": {"requests": {"storage": "1Gi"}}}})
    claim = _call(base, "POST", claims, {
        "metadata": {"name": "bound"},
        "spec": {"accessModes": ["ReadWriteMany", "ReadWriteOnce"], "volumeName": "pv-1",
                 "volumeMode": "Filesystem",
                 "dataSource": {"kind": "PersistentVolumeClaim", "name": "data"},
                 "resources": {"requests": {"storage": "1Gi"}}}})
    _call(base, "PUT", f"{claims}/bound/status", {**claim, "status": {
        "phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
        "capacity": {"storage": "2Gi"}}})
    for service in SERVICES:
        _call(base, "POST", f"/api/v1/namespaces/{ns}/services", service)
    _call(base, "POST", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
          _endpoint_slice())
    pods = f"/api/v1/namespaces/{ns}/pods"
    pod = _call(base, "POST", pods, _web_pod(node_name, ns, replica_set))
    _call(base, "PUT", f"{pods}/web-1/status", {**pod, "status": _web_pod_status()})
    _call(base, "POST", pods, {"metadata": {"name": "web-2",
                                            "labels": {"app": "web", "suite": ns}},
                               "spec": {"containers": [{"name": "app", "image": "app:1"}]}})
    _call(base, "POST", pods, {"metadata": {"name": "db-1"}, "spec": {
        "nodeName": node_name, "containers": [{"name": "db", "image": "postgres:16",
                                               "resources": {"limits": {"cpu": "1",
                                                                        "memory": "1Gi"}}}]}})
    events = f"/api/v1/namespaces/{ns}/events"
    pod = {"kind": "Pod", "apiVersion": "v1", **_call(base, "GET", f"{pods}/web-1")}
    _call(base, "POST", events, _event(ns, pod, "scheduled", reason="Scheduled",
                                       message=f"Successfully assigned {ns}/web-1",
                                       firstTimestamp=_ago(minutes=30),
                                       lastTimestamp=_ago(minutes=30), count=1))
    _call(base, "POST", events, _event(ns, pod, "backoff", type="Warning", reason="BackOff",
                                       message="Back-off restarting failed container\n",
                                       source={"component": "kubelet", "host": node_name},
                                       involvedObject={**_event(ns, pod, "")["involvedObject"],
                                                       "fieldPath": "spec.containers{sidecar}"},
                                       firstTimestamp=_ago(hours=3),
                                       lastTimestamp=_ago(minutes=20), count=4))
    _call(base, "POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", {
        "metadata": {"name": "web-1.pulling"}, "eventTime": _ago(minutes=15, micro=True),
        "series": {"count": 3, "lastObservedTime": _ago(minutes=12, micro=True)},
        "reportingController": "kubelet", "reportingInstance": node_name,
        "action": "Pulling", "reason": "Pulling", "type": "Normal",
        "note": "Pulling image \"nginx:1.25\"",
        "regarding": {**_event(ns, pod, "")["involvedObject"],
                      "fieldPath": "spec.containers{nginx}"}})
    node = {"kind": "Node", "apiVersion": "v1", **node}
    kubelet_event = _event("default", node, "starting", reason="Starting",
                           message="Starting kubelet.",
                           source={"component": "kubelet", "host": node_name},
                           firstTimestamp=_ago(minutes=40), lastTimestamp=_ago(minutes=40))
    kubelet_event["involvedObject"]["uid"] = node_name  # the kubelet names the node by name
    _call(base, "POST", "/api/v1/namespaces/default/events", kubelet_event)
    _call(base, "POST", "/api/v1/namespaces/default/events", _event(
        "default", node, "registered", reason="RegisteredNode",
        message=f"Node {node_name} event: Registered Node {node_name} in Controller",
        source={"component": "node-controller"}, firstTimestamp=_ago(minutes=45),
        lastTimestamp=_ago(minutes=45), count=1))
    _call(base, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
          {"metadata": {"name": node_name},
           "spec": {"holderIdentity": node_name, "leaseDurationSeconds": 40,
                    "renewTime": "2026-01-02T03:04:05.123456Z"}})
    deployment = {"kind": "Deployment", "apiVersion": "apps/v1", **deployment}
    _call(base, "POST", events, _event(ns, deployment, "scaled", reason="ScalingReplicaSet",
                                       message="Scaled up replica set web-5d4f from 0 to 2",
                                       source={"component": "deployment-controller"},
                                       firstTimestamp=_ago(minutes=50),
                                       lastTimestamp=_ago(minutes=50), count=1))
    _call(base, "POST", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
          {"metadata": {"name": "leader", "labels": {"app": "web"}},
           "spec": {"holderIdentity": "web-1_4f2a", "leaseDurationSeconds": 15,
                    "leaseTransitions": 2, "acquireTime": "2026-01-02T03:04:05.000000Z"}})
    # last: with a quota the namespace would take no pod until the quota's status is known
    _call(base, "POST", f"/api/v1/namespaces/{ns}/resourcequotas", {
        "metadata": {"name": "compute"},
        "spec": {"hard": {"pods": "10", "requests.cpu": "4"}, "scopes": ["NotBestEffort"]}})
    _call(base, "POST", f"/api/v1/namespaces/{ns}/limitranges", {
        "metadata": {"name": "limits"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"},
                             "max": {"cpu": "2"}}]}})
    yield World(Clis(kubeconfig, tmp_path_factory.mktemp("describe-cache")), ns, empty,
                node_name)
    # The node would otherwise stay in the shared server, Ready, for the tests after these.
    for path in (f"/api/v1/nodes/{node_name}",
                 f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node_name}",
                 f"/api/v1/namespaces/default/events/{node_name}.starting",
                 f"/api/v1/namespaces/default/events/{node_name}.registered",
                 f"/api/v1/namespaces/{ns}", f"/api/v1/namespaces/{empty}"):
        _call(base, "DELETE", path)


CASES = [
    "describe pod web-1 -n {ns}",
    "describe pods/web-1 -n {ns}",
    "describe pod web-2 -n {ns}",
    "describe pods -n {ns}",
    "describe pods -n {ns} --show-events=true",
    "describe pod web-1 -n {ns} --show-events=false",
    "describe pods -l app=web -n {ns}",
    "describe pod web -n {ns}",
    "describe pod web-1 web-2 -n {ns}",
    "describe pods -n {empty}",
    "describe pods -A -l suite={ns}",
    "describe pods,svc -A -l suite={ns}",
    "describe pods -A -l suite=nothing-has-this",
    "describe",
    "describe nosuchkind",
    "describe pod -A web-1",
    "describe deploy/nope svc/nope -n {ns}",
    "describe pod nope -n {ns}",
    "describe pod nope web-1 -n {ns}",
    "describe pods/nope -n {ns}",
    "describe node {node}",
    "describe nodes/{node} --show-events=false",
    "describe node {node} nope",
    "describe cm settings -n {ns}",
    "describe ns {ns}",
    "describe secret creds -n {ns}",
    "describe pvc -n {ns} --show-events=true",
    "describe sa builder -n {ns}",
    "describe endpoints manual -n {ns}",
    "describe lease {node} -n kube-node-lease",
    "describe leases -n {ns}",
    "describe leases -n {ns} --field-selector=x",
    "describe namespace {empty}",
    "describe svc -n {ns}",
    "describe svc web -n {ns}",
    "describe service/lb -n {ns}",
    "describe deploy web -n {ns}",
    "describe deployments -n {ns} --show-events=true",
    "describe rs -n {ns}",
    "describe ds agent -n {ns}",
    "describe sts db -n {ns}",
    "describe job migrate -n {ns}",
    "describe cronjob nightly -n {ns}",
    "describe replicaset web-5d4f -n {ns}",
    "describe rs/web-7c9b deploy/web pod/web-2 -n {ns}",
]


@pytest.mark.parametrize("case", CASES)
def test_describe_prints_what_kubectl_prints(world: World, case: str) -> None:
    args = case.format(ns=world.ns, empty=world.empty, node=world.node).split()
    assert_same(*world.clis.compare(*args))


def test_the_descriptions_show_what_the_objects_around_them_say(world: World) -> None:
    """The cases above compare with kubectl; these check they had something to compare:
    events found by involvedObject (a node's by its UID and by its name), the
    deployment's ReplicaSets, the service's endpoints, the node's pods and lease."""
    def describe(*args: str) -> str:
        result = world.clis.mkctl("describe", *args)
        assert result.code == 0, result.err
        return "\n".join(" ".join(line.split()) for line in result.out.splitlines())

    node = describe("node", world.node)
    assert "Starting kubelet." in node and "RegisteredNode" in node
    assert f"HolderIdentity: {world.node}" in node
    assert "Non-terminated Pods: (2 in total)" in node
    pod = describe("pod", "web-1", "-n", world.ns)
    assert "x4 over" in pod and "spec.containers{sidecar}: Back-off" in pod
    assert "(x3 over" in pod and "kubelet spec.containers{nginx}: Pulling image" in pod
    assert "Controlled By: ReplicaSet/web-5d4f" in pod
    deployment = describe("deploy", "web", "-n", world.ns)
    assert "OldReplicaSets: web-7c9b (0/2 replicas created)" in deployment
    assert "NewReplicaSet: web-5d4f (0/2 replicas created)" in deployment
    assert "ScalingReplicaSet" in deployment
    service = describe("svc", "web", "-n", world.ns)
    assert ("10.244.0.1:8080,10.244.0.2:8080,10.244.0.4:8080 + 2 more..." in service)
    replica_set = describe("rs", "web-5d4f", "-n", world.ns)
    assert "Pods Status: 1 Running / 0 Waiting / 0 Succeeded / 0 Failed" in replica_set


@pytest.mark.parametrize("args", [["pod", "web-1"], ["node"], ["deploy", "web"]])
def test_describe_imports_no_yaml_library_asyncio_or_api_server_code(world: World,
                                                                    args: list[str]) -> None:
    if args == ["node"]:
        args = ["node", world.node]
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "minikube_py.mkctl", *world.clis.flags(),
         "describe", *args, "-n", world.ns], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert completed.returncode == 0, completed.stderr
    imported = {line.split("|")[-1].strip() for line in completed.stderr.splitlines()
                if line.startswith("import time:")}
    for heavy in ("yaml", "asyncio", "aiohttp", "orjson", "http.client", "ssl",
                  "minikube_py.apiserver", "minikube_py.api.schema", "minikube_py.client"):
        assert heavy not in imported
