"""Kubelets as users: the Node authorizer and NodeRestriction admission, on an API server
run as upstream's kubeadm runs it (--authorization-mode=Node,RBAC,
--enable-admission-plugins=NodeRestriction), driven by real kubectl with each node's
client certificate (CN system:node:<name>, O system:nodes)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minikube_py.security import pki
from tests.test_security import SecuredServer, admin_cert, kubectl, server_of_its_own


@pytest.fixture(scope="module")
def ca() -> pki.KeyPair:
    return pki.new_ca()


@pytest.fixture(scope="module")
async def server(ca: pki.KeyPair, fast_tmp: Path) -> AsyncIterator[SecuredServer]:
    async with server_of_its_own(fast_tmp / "nodes", ca, "--authorization-mode=Node,RBAC",
                                 "--enable-admission-plugins=NodeRestriction",
                                 "--disable-admission-plugins=ServiceAccount") as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: SecuredServer, ca: pki.KeyPair) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(ca))


def node_cert(ca: pki.KeyPair, node: str) -> pki.KeyPair:
    return pki.issue(ca, f"system:node:{node}", organizations=("system:nodes",), client=True)


def node_kubeconfig(server: SecuredServer, ca: pki.KeyPair, node: str) -> Path:
    return server.kubeconfig(f"node-{node}", cert=node_cert(ca, node))


def patch_status(server: SecuredServer, cert: pki.KeyPair, pod: str, body: str
                 ) -> tuple[int, str]:
    """PATCH pods/status as the kubelet does (kubectl would GET it first, which NodeRules
    do not allow)."""
    request = urllib.request.Request(
        f"{server.url}/api/v1/namespaces/work/pods/{pod}/status", data=body.encode(),
        method="PATCH", headers={"Content-Type": "application/merge-patch+json"})
    try:
        with urllib.request.urlopen(request, timeout=10,
                                    context=server.client_context(cert)) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())["message"]


@pytest.fixture(scope="module")
def nodes(server: SecuredServer, ca: pki.KeyPair, admin: Path) -> dict[str, Path]:
    """Nodes a and b, each registered by its own kubelet identity, and a namespace with a
    pod bound to each (created by the admin, as the scheduler would bind them)."""
    configs = {name: node_kubeconfig(server, ca, name) for name in ("node-a", "node-b")}
    for name, config in configs.items():
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        made = kubectl(config, "create", "-f", "-", stdin=json.dumps(node))
        assert made.returncode == 0, made.stderr
    assert kubectl(admin, "create", "namespace", "work").returncode == 0
    for name in configs:
        for kind, obj_name in (("secret", f"{name}-secret"), ("configmap", f"{name}-config")):
            flag = "generic" if kind == "secret" else ""
            args = [kind, *([flag] if flag else []), obj_name, "-n", "work",
                    "--from-literal=k=v"]
            assert kubectl(admin, "create", *args).returncode == 0
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"on-{name}", "namespace": "work"},
               "spec": {"nodeName": name, "containers": [{
                   "name": "c", "image": "nginx",
                   "envFrom": [{"configMapRef": {"name": f"{name}-config"}}]}],
                   "volumes": [{"name": "s", "secret": {"secretName": f"{name}-secret"}}]}}
        made = kubectl(admin, "create", "-f", "-", stdin=json.dumps(pod))
        assert made.returncode == 0, made.stderr
    return configs


def test_a_kubelet_may_edit_its_own_node_but_not_another(nodes: dict[str, Path]) -> None:
    node_a = nodes["node-a"]
    own = kubectl(node_a, "label", "node", "node-a", "ready=yes")
    assert own.returncode == 0, own.stderr
    other = kubectl(node_a, "label", "node", "node-b", "stolen=yes")
    assert other.returncode != 0
    assert other.stderr.strip() == (
        'Error from server (Forbidden): nodes "node-b" is forbidden: node "node-a" is not '
        'allowed to modify node "node-b"')
    restricted = kubectl(node_a, "label", "node", "node-a",
                         "node-restriction.kubernetes.io/pool=gold")
    assert restricted.returncode != 0
    assert "is not allowed to modify labels: node-restriction.kubernetes.io/pool" in (
        restricted.stderr)
    # NodeRules let a kubelet create and update nodes, never delete them.
    deleted = kubectl(node_a, "delete", "node", "node-a")
    assert 'cannot delete resource "nodes"' in deleted.stderr


def test_a_kubelet_may_write_status_and_delete_only_its_own_pods(
        server: SecuredServer, ca: pki.KeyPair, nodes: dict[str, Path], admin: Path) -> None:
    node_a = nodes["node-a"]
    status = json.dumps({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    cert = node_cert(ca, "node-a")
    code, _ = patch_status(server, cert, "on-node-a", status)
    assert code == 200
    assert patch_status(server, cert, "on-node-b", status) == (
        403, 'pods "on-node-b" is forbidden: node "node-a" can only update pod status for '
        "pods with spec.nodeName set to itself")
    deleted = kubectl(node_a, "delete", "pod", "on-node-b", "-n", "work", "--wait=false")
    assert deleted.stderr.strip() == (
        'Error from server (Forbidden): pods "on-node-b" is forbidden: node "node-a" can only '
        "delete pods with spec.nodeName set to itself")
    assert kubectl(admin, "get", "pod", "on-node-b", "-n", "work").returncode == 0
    # Changing a pod's spec or labels is no kubelet's business: NodeRules leave it out.
    relabel = kubectl(node_a, "label", "pod", "on-node-a", "-n", "work", "x=y")
    assert 'cannot patch resource "pods"' in relabel.stderr
    plain = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky",
                                                             "namespace": "work"},
             "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "nginx"}]}}
    made = kubectl(node_a, "create", "-f", "-", stdin=json.dumps(plain))
    assert ('pod does not have "kubernetes.io/config.mirror" annotation, node "node-a" can '
            "only create mirror pods") in made.stderr


def evict(server: SecuredServer, cert: pki.KeyPair, pod: str, query: str = ""
          ) -> tuple[int, str]:
    """POST pods/eviction as a kubelet evicting one of its pods (node-pressure eviction)."""
    body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": pod, "namespace": "work"}})
    request = urllib.request.Request(
        f"{server.url}/api/v1/namespaces/work/pods/{pod}/eviction{query}",
        data=body.encode(), method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10,
                                    context=server.client_context(cert)) as answer:
            return answer.status, json.loads(answer.read())["status"]
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())["message"]


def test_a_kubelet_may_evict_only_its_own_pods(
        server: SecuredServer, ca: pki.KeyPair, nodes: dict[str, Path], admin: Path) -> None:
    cert = node_cert(ca, "node-a")
    assert evict(server, cert, "on-node-a", "?dryRun=All") == (201, "Success")
    assert evict(server, cert, "on-node-b", "?dryRun=All") == (
        403, 'pods "on-node-b" is forbidden: node "node-a" can only evict pods with '
        "spec.nodeName set to itself")
    assert kubectl(admin, "get", "pod", "on-node-a", "-n", "work").returncode == 0


def test_a_kubelet_reads_only_the_secrets_and_configmaps_of_its_pods(
        nodes: dict[str, Path]) -> None:
    node_a = nodes["node-a"]
    assert kubectl(node_a, "get", "secret", "node-a-secret", "-n", "work").returncode == 0
    assert kubectl(node_a, "get", "configmap", "node-a-config", "-n", "work").returncode == 0
    other = kubectl(node_a, "get", "secret", "node-b-secret", "-n", "work")
    assert other.stderr.strip() == (
        'Error from server (Forbidden): secrets "node-b-secret" is forbidden: User '
        '"system:node:node-a" cannot get resource "secrets" in API group "" in the namespace '
        "\"work\": no relationship found between node 'node-a' and this object")
    listed = kubectl(node_a, "get", "secrets", "-n", "work")
    assert listed.returncode != 0 and "cannot list resource" in listed.stderr
    # ...but it may list and watch one of them by name, as its per-object watches do
    by_name = kubectl(node_a, "get", "secrets", "-n", "work", "-o", "name",
                      "--field-selector=metadata.name=node-a-secret")
    assert by_name.stdout == "secret/node-a-secret\n", by_name.stderr
    other_by_name = kubectl(node_a, "get", "secrets", "-n", "work",
                            "--field-selector=metadata.name=node-b-secret")
    assert "no relationship found between node 'node-a' and this object" in (
        other_by_name.stderr)
    assert kubectl(node_a, "auth", "can-i", "list", "pods", "--all-namespaces").stdout == (
        "yes\n")
    assert kubectl(node_a, "auth", "can-i", "create", "deployments").stdout == "no\n"


def test_a_kubelet_renews_only_its_own_lease(nodes: dict[str, Path]) -> None:
    def lease(name: str) -> str:
        return json.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": {"name": name, "namespace": "kube-node-lease"},
                           "spec": {"holderIdentity": name}})

    own = kubectl(nodes["node-a"], "create", "-f", "-", stdin=lease("node-a"))
    assert own.returncode == 0, own.stderr
    other = kubectl(nodes["node-a"], "create", "-f", "-", stdin=lease("node-b"))
    assert "can only access node lease with the same name as the requesting node" in (
        other.stderr)


def test_a_kubelet_keeps_only_its_own_csi_node_and_reads_csi_drivers(
        nodes: dict[str, Path]) -> None:
    def csi_node(name: str) -> str:
        return json.dumps({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                           "metadata": {"name": name}, "spec": {"drivers": []}})

    node_a = nodes["node-a"]
    own = kubectl(node_a, "create", "-f", "-", stdin=csi_node("node-a"))
    assert own.returncode == 0, own.stderr
    assert kubectl(node_a, "get", "csinode", "node-a").returncode == 0
    other = kubectl(node_a, "create", "-f", "-", stdin=csi_node("node-b"))
    assert other.returncode != 0
    assert other.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": csinodes.storage.k8s.io '
        '"node-b" is forbidden: can only access CSINode with the same name as the requesting '
        "node")
    read = kubectl(node_a, "get", "csinode", "node-b")
    assert 'cannot get resource "csinodes"' in read.stderr
    listed = kubectl(node_a, "get", "csidrivers")
    assert listed.returncode == 0, listed.stderr


def test_a_kubelet_may_create_only_mirror_pods_its_node_owns(
        nodes: dict[str, Path], admin: Path) -> None:
    node_a = nodes["node-a"]
    node_uid = kubectl(admin, "get", "node", "node-a", "-o", "jsonpath={.metadata.uid}").stdout

    def mirror(name: str, owner: dict | None = None, **spec: object) -> str:
        owners = [owner] if owner is not None else []
        return json.dumps({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "work",
                         "annotations": {"kubernetes.io/config.mirror": "hash"},
                         "ownerReferences": owners},
            "spec": {"nodeName": "node-a",
                     "containers": [{"name": "c", "image": "nginx"}], **spec}})

    own = {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": node_uid,
           "controller": True}
    made = kubectl(node_a, "create", "-f", "-", stdin=mirror("mirror-ok", own))
    assert made.returncode == 0, made.stderr
    refusals = {
        "no-owner": (mirror("no-owner"),
                     'node "node-a" can only create pods with an owner reference set to '
                     "itself"),
        "other-node": (mirror("other-node", {**own, "name": "node-b"}),
                       'node "node-a" can only create pods with an owner reference set to '
                       "itself"),
        "not-controller": (mirror("not-controller", {**own, "controller": False}),
                           'node "node-a" can only create pods with a controller owner '
                           "reference set to itself"),
        "blocking": (mirror("blocking", {**own, "blockOwnerDeletion": True}),
                     'node "node-a" must not set blockOwnerDeletion on an owner reference'),
        "old-uid": (mirror("old-uid", {**own, "uid": "bogus"}),
                    f"node node-a UID mismatch: expected bogus got {node_uid}"),
        "with-secret": (mirror("with-secret", own, volumes=[
                            {"name": "s", "secret": {"secretName": "node-a-secret"}}]),
                        'node "node-a" can not create pods that reference secrets'),
        "with-config": (mirror("with-config", own, volumes=[
                            {"name": "c", "configMap": {"name": "node-a-config"}}]),
                        'node "node-a" can not create pods that reference configmaps'),
        "with-account": (mirror("with-account", own, serviceAccountName="default"),
                         'node "node-a" can not create pods that reference a service '
                         "account"),
        "with-claim": (mirror("with-claim", own, volumes=[
                           {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
                       'node "node-a" can not create pods that reference '
                       "persistentvolumeclaims"),
    }
    for name, (body, why) in refusals.items():
        refused = kubectl(node_a, "create", "-f", "-", stdin=body)
        assert refused.stderr.strip() == (
            f'Error from server (Forbidden): error when creating "STDIN": pods "{name}" is '
            f"forbidden: {why}"), name
    # and it deletes its mirror pods as it may any pod bound to it
    deleted = kubectl(node_a, "delete", "pod", "mirror-ok", "-n", "work", "--wait=false")
    assert deleted.returncode == 0, deleted.stderr


def patch_claim_status(server: SecuredServer, cert: pki.KeyPair, claim: str, body: str
                       ) -> tuple[int, str]:
    """PATCH persistentvolumeclaims/status as the kubelet finishing a resize."""
    request = urllib.request.Request(
        f"{server.url}/api/v1/namespaces/work/persistentvolumeclaims/{claim}/status",
        data=body.encode(), method="PATCH",
        headers={"Content-Type": "application/merge-patch+json"})
    try:
        with urllib.request.urlopen(request, timeout=10,
                                    context=server.client_context(cert)) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())["message"]


def test_a_kubelet_may_change_only_a_claims_capacity_conditions_and_allocation(
        server: SecuredServer, ca: pki.KeyPair, nodes: dict[str, Path], admin: Path) -> None:
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "grown", "namespace": "work"},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                      "resources": {"requests": {"storage": "2Gi"}}}}
    made = kubectl(admin, "create", "-f", "-", stdin=json.dumps(claim))
    assert made.returncode == 0, made.stderr
    cert = node_cert(ca, "node-a")
    finished = json.dumps({"status": {
        "capacity": {"storage": "2Gi"}, "allocatedResources": {"storage": "2Gi"},
        "allocatedResourceStatuses": {"storage": "NodeResizeInProgress"},
        "conditions": [{"type": "FileSystemResizePending", "status": "True"}]}})
    assert patch_claim_status(server, cert, "grown", finished)[0] == 200
    assert patch_claim_status(server, cert, "grown", '{"status":{"phase":"Lost"}}') == (
        403, 'persistentvolumeclaims "grown" is forbidden: node "node-a" is not allowed to '
        "update fields other than status.capacity and status.conditions: status changed")
