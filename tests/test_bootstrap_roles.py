"""The bootstrap roles at work: what the components' users (system:kube-scheduler,
system:kube-proxy, ...) and the controllers' ServiceAccounts may do, asked with `kubectl
auth can-i` of an API server with TLS and RBAC and no controller-manager, and the seed's
custom scheduler RBAC applied as written, then used by the lab scheduler.

`kubectl auth can-i create pods/binding` would ask about a pod named "binding": a
subresource is named with --subresource, and `update leases/kube-scheduler` names the
lease (kube-scheduler may update only its own, by resourceNames). The cluster autoscaler's
roles, which `up` creates (cluster/roles.py), are asked the same way."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.roles import CLUSTER_AUTOSCALER, grant_component_roles
from minikube_py.security import pki
from tests.api_helpers import manifests_yaml
from tests.test_security import SecuredServer, admin_cert, kubectl, start_server, stop

LAB_SCHEDULER = Path(__file__).resolve().parents[1] / "labs" / "scheduler" / "watch_scheduler.py"

# The seed's custom scheduler lab, "Step 4: RBAC + Deployment YAML", as written.
SEED_SCHEDULER_RBAC = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: my-scheduler
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: my-scheduler-binding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:kube-scheduler
subjects:
- kind: ServiceAccount
  name: my-scheduler
  namespace: kube-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-scheduler
  namespace: kube-system
spec:
  replicas: 1
  selector:
    matchLabels: {app: my-scheduler}
  template:
    metadata:
      labels: {app: my-scheduler}
    spec:
      serviceAccountName: my-scheduler
      containers:
        - name: scheduler
          image: my-py-scheduler:latest
"""
MY_SCHEDULER = "system:serviceaccount:kube-system:my-scheduler"


@pytest.fixture(scope="module")
async def roles_etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    """An etcd of this module's own: the bootstrap roles stay out of the shared one."""
    async with EtcdProcess(fast_tmp / f"etcd-roles-{uuid.uuid4().hex[:8]}") as process:
        yield process


@pytest.fixture(scope="module")
def server(roles_etcd: EtcdProcess, fast_tmp: Path) -> Iterator[SecuredServer]:
    """TLS, RBAC and a ServiceAccount signing key (tokens for the lab scheduler)."""
    directory = fast_tmp / "bootstrap-roles"
    directory.mkdir(parents=True, exist_ok=True)
    ca = pki.new_ca()
    pki.issue(ca, "service-accounts", client=True).write(directory, "sa")
    # no controller-manager gives namespaces their `default` ServiceAccount here
    started = start_server(roles_etcd.client_url, directory, ca,
                           f"--service-account-signing-key-file={directory / 'sa.key'}",
                           "--disable-admission-plugins=ServiceAccount")
    yield started
    stop(started)


@pytest.fixture(scope="module")
def admin(server: SecuredServer) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(server.ca))


def as_user(server: SecuredServer, name: str) -> Path:
    """A kubeconfig with a client certificate for the user `name`."""
    return server.kubeconfig(name.replace(":", "-"),
                             cert=pki.issue(server.ca, name, client=True))


def answers(kubeconfig: Path, *questions: str, impersonate: str = "") -> dict[str, str]:
    """`kubectl auth can-i` for each question ("create pods --subresource=binding"):
    question -> yes or no."""
    extra = [f"--as={impersonate}"] if impersonate else []
    return {question: kubectl(kubeconfig, "auth", "can-i", *question.split(), *extra
                              ).stdout.strip()
            for question in questions}


def test_the_scheduler_may_bind_pods_and_read_what_it_places_them_by(
        server: SecuredServer) -> None:
    scheduler = as_user(server, "system:kube-scheduler")
    allowed = ["create pods --subresource=binding -n default", "create bindings -n default",
               "list nodes", "watch pods --all-namespaces", "delete pods -n default",
               "patch pods --subresource=status -n default",
               "list poddisruptionbudgets.policy --all-namespaces",
               "create leases -n kube-system", "update leases/kube-scheduler -n kube-system",
               "create events.events.k8s.io -n default",
               # system:volume-scheduler, bound to the same user
               "update persistentvolumes", "update persistentvolumeclaims -n default"]
    denied = ["delete deployments.apps -n default", "create pods -n default",
              "update leases/kube-controller-manager -n kube-system",
              "update leases -n kube-system",  # no name: not only its own lease
              "list secrets -n default"]
    assert answers(scheduler, *allowed) == dict.fromkeys(allowed, "yes")
    assert answers(scheduler, *denied) == dict.fromkeys(denied, "no")


def test_kube_proxy_may_watch_services_and_endpoint_slices_and_no_more(
        server: SecuredServer) -> None:
    proxy = as_user(server, "system:kube-proxy")
    allowed = ["list endpointslices.discovery.k8s.io --all-namespaces",
               "watch endpointslices.discovery.k8s.io --all-namespaces",
               "watch services --all-namespaces", "list endpoints --all-namespaces",
               "get nodes", "create events -n default"]
    denied = ["create pods -n default", "update services -n default",
              "create endpointslices.discovery.k8s.io -n default", "list secrets -n default"]
    assert answers(proxy, *allowed) == dict.fromkeys(allowed, "yes")
    assert answers(proxy, *denied) == dict.fromkeys(denied, "no")


def test_the_controller_manager_user_lists_everything_and_writes_little(
        server: SecuredServer) -> None:
    manager = as_user(server, "system:kube-controller-manager")
    allowed = ["list deployments.apps --all-namespaces", "watch nodes",
               "create serviceaccounts/token -n kube-system",
               "update leases/kube-controller-manager -n kube-system"]
    denied = ["create pods -n default", "delete nodes", "update leases/kube-scheduler"]
    assert answers(manager, *allowed) == dict.fromkeys(allowed, "yes")
    assert answers(manager, *denied) == dict.fromkeys(denied, "no")


def test_each_controller_service_account_may_do_its_own_work(
        server: SecuredServer, admin: Path) -> None:
    def sa(name: str) -> str:
        return f"system:serviceaccount:kube-system:{name}"

    for account, question, answer in (
            ("replicaset-controller", "create pods -n default", "yes"),
            ("replicaset-controller", "update replicasets.apps --subresource=status", "yes"),
            ("replicaset-controller", "delete nodes", "no"),
            ("deployment-controller", "create replicasets.apps -n default", "yes"),
            ("deployment-controller", "create pods -n default", "no"),
            ("daemon-set-controller", "create pods --subresource=binding -n default", "yes"),
            ("generic-garbage-collector", "delete configmaps -n default", "yes"),
            ("namespace-controller", "deletecollection pods -n default", "yes"),
            ("service-account-controller", "create serviceaccounts -n default", "yes"),
            ("service-account-controller", "delete serviceaccounts -n default", "no"),
            ("endpointslice-controller", "create endpointslices.discovery.k8s.io", "yes"),
            ("node-controller", "delete nodes", "yes"),
            ("pod-garbage-collector", "delete pods -n default", "yes"),
            ("clusterrole-aggregation-controller", "escalate clusterroles", "yes"),
            ("clusterrole-aggregation-controller", "create clusterroles", "no"),
            ("root-ca-cert-publisher", "create configmaps -n default", "yes"),
            ("persistent-volume-binder", "update persistentvolumes --subresource=status",
             "yes"),
            ("persistent-volume-binder", "list storageclasses.storage.k8s.io", "yes"),
            ("pvc-protection-controller", "update persistentvolumeclaims -n default", "yes"),
            ("pvc-protection-controller", "update persistentvolumes", "no"),
            ("pv-protection-controller", "update persistentvolumes", "yes"),
            ("expand-controller", "patch persistentvolumeclaims --subresource=status -n default",
             "yes"),
            ("expand-controller", "update persistentvolumeclaims -n default", "no"),
            ("horizontal-pod-autoscaler",
             "update horizontalpodautoscalers.autoscaling --subresource=status -n default",
             "yes"),
            ("horizontal-pod-autoscaler",
             "update deployments.apps --subresource=scale -n default", "yes"),
            ("horizontal-pod-autoscaler", "watch pods -n default", "yes"),
            ("horizontal-pod-autoscaler", "update deployments.apps -n default", "no"),
            # namespaced roles: only the namespaces these controllers work in
            ("token-cleaner", "delete secrets -n kube-system", "yes"),
            ("token-cleaner", "delete secrets -n default", "no"),
            ("bootstrap-signer", "list secrets -n kube-system", "yes"),
            ("bootstrap-signer", "update configmaps/cluster-info -n kube-public", "yes"),
            ("bootstrap-signer", "update configmaps/kube-root-ca.crt -n kube-public", "no"),
            ("default", "list pods -n kube-system", "no")):
        assert answers(admin, question, impersonate=sa(account)) == {question: answer}, (
            account, question)
    review = kubectl(admin, "create", "--raw", "/apis/authorization.k8s.io/v1/"
                     "subjectaccessreviews", "-f", "-", stdin=json.dumps({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": sa("horizontal-pod-autoscaler"), "resourceAttributes": {
            "group": "metrics.k8s.io", "resource": "pods", "verb": "list",
            "namespace": "default"}}}))
    assert review.returncode == 0, review.stderr
    assert json.loads(review.stdout)["status"]["allowed"] is True
    kube_dns = answers(admin, "list services --all-namespaces",
                       impersonate=sa("kube-dns"))
    assert kube_dns == {"list services --all-namespaces": "yes"}


def test_the_cluster_autoscaler_may_make_every_call_of_its_loop_and_no_more(
        server: SecuredServer, admin: Path) -> None:
    """The roles `up` gives the user cluster-autoscaler (cluster/roles.py) cover each
    request of autoscaler/: its informers, the group's node listing, the taint, the
    evictions, the Node deletes, its events, its status ConfigMap."""
    asyncio.run(grant_component_roles(admin))
    autoscaler = as_user(server, CLUSTER_AUTOSCALER)
    allowed = ["list nodes", "watch nodes", "get nodes", "patch nodes", "delete nodes",
               "list pods --all-namespaces", "watch pods --all-namespaces",
               "create pods --subresource=eviction -n default",
               "create events -n default", "patch events -n default",
               "list poddisruptionbudgets.policy --all-namespaces",
               "create configmaps -n kube-system",
               "update configmaps/cluster-autoscaler-status -n kube-system",
               "get configmaps/cluster-autoscaler-status -n kube-system",
               "create leases.coordination.k8s.io -n kube-system",
               "update leases.coordination.k8s.io/cluster-autoscaler -n kube-system"]
    denied = ["create pods -n default", "delete pods -n default", "create nodes",
              "update configmaps/kube-proxy -n kube-system", "create configmaps -n default",
              "update leases.coordination.k8s.io/kube-scheduler -n kube-system",
              "list secrets -n kube-system"]
    deadline = time.monotonic() + 60
    while answers(autoscaler, allowed[0]) != {allowed[0]: "yes"}:
        assert time.monotonic() < deadline, "the cluster-autoscaler binding never took effect"
        time.sleep(0.2)
    assert answers(autoscaler, *allowed) == dict.fromkeys(allowed, "yes")
    assert answers(autoscaler, *denied) == dict.fromkeys(denied, "no")


def test_admin_edit_and_view_hold_their_rules_before_any_controller_manager_runs(
        admin: Path) -> None:
    view = yaml.safe_load(kubectl(admin, "get", "clusterrole", "view", "-o", "yaml").stdout)
    assert view["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {
        "rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == (
        "true")
    assert {"apiGroups": [""], "resources": ["secrets"],
            "verbs": ["get", "list", "watch"]} not in view["rules"]
    aggregate = yaml.safe_load(kubectl(admin, "get", "clusterrole",
                                       "system:aggregate-to-view", "-o", "yaml").stdout)
    assert view["rules"] == aggregate["rules"]
    node = yaml.safe_load(kubectl(admin, "get", "clusterrolebinding", "system:node",
                                  "-o", "yaml").stdout)
    assert "subjects" not in node  # upstream binds system:node to nobody


def test_the_seed_custom_scheduler_rbac_lets_its_service_account_schedule(
        server: SecuredServer, admin: Path) -> None:
    applied = kubectl(admin, "apply", "-f", "-", stdin=SEED_SCHEDULER_RBAC)
    assert applied.returncode == 0, applied.stderr
    deadline = time.monotonic() + 60
    while answers(admin, "create pods --subresource=binding -n default",
                  impersonate=MY_SCHEDULER) != {
            "create pods --subresource=binding -n default": "yes"}:
        assert time.monotonic() < deadline, "the seed's binding never took effect"
        time.sleep(0.2)
    scheduling = ["create pods --subresource=binding -n default",
                  "create bindings -n default", "list pods --all-namespaces",
                  "watch pods --all-namespaces", "list nodes"]
    assert answers(admin, *scheduling, impersonate=MY_SCHEDULER) == dict.fromkeys(
        scheduling, "yes")
    volumes = "update persistentvolumeclaims -n default"
    assert answers(admin, volumes, impersonate=MY_SCHEDULER) == {volumes: "no"}
    kubectl(admin, "create", "clusterrolebinding", "my-scheduler-volumes",
            "--clusterrole=system:volume-scheduler",
            "--serviceaccount=kube-system:my-scheduler")
    deadline = time.monotonic() + 60
    while answers(admin, volumes, impersonate=MY_SCHEDULER) != {volumes: "yes"}:
        assert time.monotonic() < deadline, "system:volume-scheduler never took effect"
        time.sleep(0.2)

    # the lab scheduler, run as that ServiceAccount, binds a pod that asks for it
    lab = uuid.uuid4().hex[:8]
    applied = kubectl(admin, "apply", "-f", "-", stdin=manifests_yaml([
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"node-{lab}", "labels": {"lab": lab}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod",
                                                         "namespace": "default"},
         "spec": {"schedulerName": "my-scheduler", "containers": [
             {"name": "pause", "image": "registry.k8s.io/pause:3.9"}]}}]))
    assert applied.returncode == 0, applied.stderr
    token = kubectl(admin, "create", "token", "my-scheduler", "-n", "kube-system"
                    ).stdout.strip()
    as_scheduler = server.kubeconfig("my-scheduler", token=token)
    scheduler = subprocess.run(
        [sys.executable, str(LAB_SCHEDULER), "--node-selector", f"lab={lab}",
         "--max-pods", "1", "--timeout", "30"],
        env={**os.environ, "KUBECONFIG": str(as_scheduler)},
        capture_output=True, text=True, timeout=60)
    assert scheduler.returncode == 0, scheduler.stdout + scheduler.stderr
    assert f"Bound default/test-pod -> node-{lab}" in scheduler.stdout, scheduler.stdout
    node = kubectl(admin, "get", "pod", "test-pod", "-o", "jsonpath={.spec.nodeName}")
    assert node.stdout == f"node-{lab}"
