"""Hollow nodes: kubelets with the simulated runtime, many in one process (like kubemark)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from minikube_py.api import Obj
from minikube_py.client.errors import Forbidden, NotFound
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.kubelet.hollow import HollowNodes, read_node_tokens
from minikube_py.process import free_port
from tests.api_helpers import eventually


def node_ready(node: Obj) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in node.get("status", {}).get("conditions", []))


async def delete_nodes(api: Client, names: list[str]) -> None:
    for name in names:
        for plural, namespace in (("nodes", None), ("leases", "kube-node-lease")):
            with contextlib.suppress(NotFound):
                await api.resource(plural).delete(name, namespace)


async def test_hollow_nodes_register_heartbeat_and_run_pods(kubeconfig, api_client, namespace):
    prefix = f"hollow-{os.getpid()}-{namespace[-4:]}"
    async with Client.from_kubeconfig(kubeconfig, user_agent="kubelet") as client:
        nodes = HollowNodes(client, 3, prefix=prefix)
        await nodes.start()
        names = sorted(nodes.kubelets)
        try:
            for name in names:
                node = await eventually(
                    lambda name=name: _ready_node(api_client, name), timeout=20,
                    what=f"{name} Ready")
                assert node["spec"]["podCIDR"].startswith("10.")
                assert node["status"]["nodeInfo"]["containerRuntimeVersion"] == \
                    "simulated://0.1.0"
                lease = await eventually(lambda name=name: _lease(api_client, name),
                                         timeout=20, what=f"the Lease of {name}")
                assert lease["spec"]["holderIdentity"] == name
            pods = api_client.resource("pods")
            for index, name in enumerate(names):
                await pods.create({"metadata": {"name": f"p{index}"}, "spec": {
                    "nodeName": name, "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "app", "image": "localhost/busybox:1.36"}]}},
                    namespace)
            running = await eventually(lambda: _all_running(api_client, namespace, 3),
                                       timeout=20, what="the pods Running")
            ips = {p["status"]["podIP"] for p in running}
            assert len(ips) == 3
            await pods.delete("p0", namespace)
            await eventually(lambda: _gone(api_client, namespace, "p0"), timeout=20,
                             what="p0 deleted by its kubelet")
        finally:
            await nodes.stop()
            await delete_nodes(api_client, names)


async def _ready_node(api: Client, name: str) -> Obj | None:
    try:
        node = await api.resource("nodes").get(name)
    except NotFound:
        return None
    return node if node_ready(node) else None


async def _lease(api: Client, name: str) -> Obj | None:
    try:
        return await api.resource("leases").get(name, "kube-node-lease")
    except NotFound:
        return None


async def _all_running(api: Client, namespace: str, count: int) -> list[Obj] | None:
    items = (await api.resource("pods").list(namespace))["items"]
    running = [p for p in items if p.get("status", {}).get("phase") == "Running"
               and p["status"].get("podIP")]
    return running if len(running) == count else None


async def _gone(api: Client, namespace: str, name: str) -> bool:
    try:
        await api.resource("pods").get(name, namespace)
    except NotFound:
        return True
    return False


@pytest.mark.slow
async def test_simulate_flag_runs_hollow_nodes_in_one_process(kubeconfig, api_client,
                                                              fast_tmp: Path):
    prefix = f"sim-{os.getpid()}"
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "minikube_py.kubelet", f"--kubeconfig={kubeconfig}",
        "--simulate", "20", f"--node-name={prefix}", "--address=127.0.0.1",
        f"--port={port}", stderr=(fast_tmp / f"{prefix}.log").open("wb"))
    names = [f"{prefix}-{i}" for i in range(20)]
    try:
        for name in names:
            await eventually(lambda name=name: _ready_node(api_client, name), timeout=60,
                             what=f"{name} Ready")
    finally:
        process.terminate()
        try:
            async with asyncio.timeout(30):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()
        await delete_nodes(api_client, names)
    assert process.returncode == 0


def lease_writers(audit_log: Path, lease: str) -> set[tuple[str, str]]:
    """(verb, user) of every write of a node Lease the audit log holds."""
    writers = set()
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if ref.get("resource") == "leases" and ref.get("name") == lease:
            writers.add((event["verb"], event["user"]["username"]))
    return writers


async def test_each_hollow_node_is_its_own_user(private_etcd: EtcdProcess,
                                                fast_tmp: Path) -> None:
    """With a token per node, node 3's kubelet renews its Lease and writes its pods' status
    as system:node:<prefix>-3 (the Node authorizer and NodeRestriction accept it), and
    that identity may not touch node 4's Lease."""
    tmp = fast_tmp / f"identities-{os.getpid()}"
    tmp.mkdir()
    prefix = "own"
    tokens = tmp / "tokens.csv"
    tokens.write_text("admin-token,admin,1,system:masters\n" + "".join(
        f'node-{i}-token,system:node:{prefix}-{i},{10 + i},"system:nodes"\n'
        for i in range(5)))
    policy, audit_log = tmp / "policy.yaml", tmp / "audit.log"
    policy.write_text(yaml.safe_dump({
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
        "rules": [{"level": "Metadata", "verbs": ["create", "update", "patch"],
                   "resources": [{"group": "coordination.k8s.io",
                                  "resources": ["leases"]}]},
                  {"level": "None"}]}))
    async with APIServerProcess([private_etcd.client_url], tmp / "apiserver.log", extra_args=(
            f"--token-auth-file={tokens}", "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--disable-admission-plugins=ServiceAccount",
            f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}")) as api:
        async with Client(ClientConfig(server=api.url, token="admin-token"),
                          user_agent="kubelet") as admin:
            nodes = HollowNodes(admin, 5, prefix=prefix, tokens=read_node_tokens(tokens))
            assert sorted(nodes.node_clients) == [f"{prefix}-{i}" for i in range(5)]
            await nodes.start()
            try:
                for i in range(5):
                    await eventually(lambda i=i: _ready_node(admin, f"{prefix}-{i}"),
                                     timeout=30, what=f"{prefix}-{i} Ready")
                await admin.resource("namespaces").create({"metadata": {"name": "work"}})
                await admin.resource("pods").create({"metadata": {"name": "on-3"}, "spec": {
                    "nodeName": f"{prefix}-3",
                    "containers": [{"name": "app", "image": "localhost/busybox:1.36"}]}},
                    "work")
                await eventually(lambda: _all_running(admin, "work", 1), timeout=30,
                                 what="the pod on node 3 Running, its status written by "
                                      "node 3")
                node_3 = f"system:node:{prefix}-3"

                async def renewed() -> set[tuple[str, str]] | None:
                    found = lease_writers(audit_log, f"{prefix}-3")
                    return found if ("update", node_3) in found else None

                writers = await eventually(renewed, timeout=30, what="node 3's Lease renewed")
                assert {user for _, user in writers} == {node_3}
                as_node_3 = admin.with_token("node-3-token")
                leases = as_node_3.resource("leases", "coordination.k8s.io")
                other = await leases.get(f"{prefix}-4", "kube-node-lease")
                with pytest.raises(Forbidden, match="can only access node lease with the "
                                                    "same name as the requesting node"):
                    await leases.update(other)
                await as_node_3.close()
            finally:
                await nodes.stop()
