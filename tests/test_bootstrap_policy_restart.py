"""The bootstrap policy across a restart: an API server started again on the etcd of an
earlier one (as after an upgrade of minikube-py) reconciles the roles and bindings it
finds, as upstream's rbac/bootstrap-roles hook does: what they lack of the policy comes
back, what was added to them stays, and what is marked autoupdate "false" is left alone."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.security import pki
from tests.test_security import SecuredServer, admin_cert, kubectl, start_server, stop

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
ENDPOINT_SLICES = {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                   "verbs": ["list", "watch"]}
CUSTOM = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
SERVICES = {"apiGroups": [""], "resources": ["endpoints", "services"],
            "verbs": ["list", "watch"]}


def get(admin: Path, kind: str, name: str) -> dict[str, Any]:
    got = kubectl(admin, "get", kind, name, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def replace(admin: Path, obj: dict[str, Any]) -> None:
    replaced = kubectl(admin, "replace", "-f", "-", stdin=json.dumps(obj))
    assert replaced.returncode == 0, replaced.stderr


def log_lines(server: SecuredServer) -> list[dict[str, Any]]:
    """The server's JSON log messages (each after its line's klog header)."""
    lines = (server.directory / "apiserver.log").read_text().splitlines()
    messages = [line.partition("] ")[2] for line in lines]
    return [json.loads(message) for message in messages if message.startswith("{")]


def test_a_restart_brings_back_dropped_rules_and_subjects_and_keeps_added_ones(
        private_etcd: EtcdProcess, fast_tmp: Path) -> None:
    directory = fast_tmp / f"bootstrap-restart-{uuid.uuid4().hex[:8]}"
    ca = pki.new_ca()
    first = start_server(private_etcd.client_url, directory, ca)
    try:
        admin = first.kubeconfig("admin", cert=admin_cert(ca))
        # kube-proxy's role as an older version wrote it, plus a rule of the user's own
        proxier = get(admin, "clusterrole", "system:node-proxier")
        assert ENDPOINT_SLICES in proxier["rules"]
        proxier["rules"] = [r for r in proxier["rules"] if r != ENDPOINT_SLICES] + [CUSTOM]
        replace(admin, proxier)
        # kube-dns's role and binding, which their owner has taken over
        dns = get(admin, "clusterrole", "system:kube-dns")
        dns["metadata"]["annotations"][AUTOUPDATE] = "false"
        dns["rules"] = [CUSTOM]
        replace(admin, dns)
        # a binding that lost its subject and gained another
        binding = get(admin, "clusterrolebinding", "system:node-proxier")
        binding["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                "name": "my-proxy"}]
        replace(admin, binding)
        # a binding of the bootstrap name that binds another role (roleRef is immutable)
        assert kubectl(admin, "delete", "clusterrolebinding", "system:kube-scheduler"
                       ).returncode == 0
        assert kubectl(admin, "create", "clusterrolebinding", "system:kube-scheduler",
                       "--clusterrole=view", "--user=alice").returncode == 0
    finally:
        stop(first)

    second = start_server(private_etcd.client_url, directory, ca)
    try:
        admin = second.kubeconfig("admin", cert=admin_cert(ca))
        proxier = get(admin, "clusterrole", "system:node-proxier")
        # back, one rule per verb at the end, after the user's own rule, which stays
        assert proxier["rules"][-3:] == [CUSTOM, ENDPOINT_SLICES | {"verbs": ["list"]},
                                         ENDPOINT_SLICES | {"verbs": ["watch"]}]
        dns = get(admin, "clusterrole", "system:kube-dns")
        assert dns["rules"] == [CUSTOM] and SERVICES not in dns["rules"]
        assert dns["metadata"]["annotations"][AUTOUPDATE] == "false"
        subjects = get(admin, "clusterrolebinding", "system:node-proxier")["subjects"]
        assert [s["name"] for s in subjects] == ["my-proxy", "system:kube-proxy"]
        scheduler = get(admin, "clusterrolebinding", "system:kube-scheduler")
        assert scheduler["roleRef"]["name"] == "system:kube-scheduler"
        assert [s["name"] for s in scheduler["subjects"]] == ["system:kube-scheduler"]
        assert scheduler["metadata"]["annotations"] == {AUTOUPDATE: "true"}

        # one line per object written, saying what changed
        logged = {(line["msg"], line["object"]): line for line in log_lines(second)
                  if "object" in line}
        updated = logged["updated bootstrap policy object",
                         "clusterrole.rbac.authorization.k8s.io/system:node-proxier"]
        assert updated["changes"] == {"addedRules": proxier["rules"][-2:]}
        assert ("recreated bootstrap policy object",
                "clusterrolebinding.rbac.authorization.k8s.io/system:kube-scheduler") in logged
        skipped = logged["skipped reconcile-protected bootstrap policy object",
                         "clusterrole.rbac.authorization.k8s.io/system:kube-dns"]
        assert len(skipped["changes"]["addedRules"]) == 4  # 2 resources x 2 verbs
        assert not any(msg.startswith("created") for msg, _ in logged)
        assert len(logged) == 4  # nothing else was written
    finally:
        stop(second)
