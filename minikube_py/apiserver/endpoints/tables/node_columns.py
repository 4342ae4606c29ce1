"""core/v1 nodes and namespaces."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import NONE, UNKNOWN, age, name_of
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column

NODE_COLUMNS = (
    NAME,
    column("Status", "string", "The status of the node"),
    column("Roles", "string", "The roles of the node"),
    AGE,
    column("Version", "string", "Kubelet Version reported by the node."),
    column("Internal-IP", "string", "List of addresses reachable to the node.", priority=1),
    column("External-IP", "string", "List of addresses reachable to the node.", priority=1),
    column("OS-Image", "string", "OS Image reported by the node.", priority=1),
    column("Kernel-Version", "string", "Kernel Version reported by the node.", priority=1),
    column(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node.",
        priority=1,
    ),
)

NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
NODE_ROLE_LABEL = "kubernetes.io/role"


def node_roles(labels: dict[str, str]) -> list[str]:
    """findNodeRoles: node-role.kubernetes.io/<role> keys and kubernetes.io/role values."""
    roles: set[str] = set()
    for key, value in labels.items():
        if key.startswith(NODE_ROLE_PREFIX) and key != NODE_ROLE_PREFIX:
            roles.add(key.removeprefix(NODE_ROLE_PREFIX))
        elif key == NODE_ROLE_LABEL and value:
            roles.add(value)
    return sorted(roles)


def node_address(node: Obj, address_type: str) -> str:
    """The first address of this type, "<none>" when there is none."""
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == address_type:
            return address.get("address", "")
    return NONE


def print_node(node: Obj, now: datetime) -> Cells:
    """printNode: Ready/NotReady/Unknown, plus SchedulingDisabled when cordoned."""
    status = node.get("status") or {}
    ready = None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            ready = condition
    states = ["Unknown"] if ready is None else [
        "Ready" if ready.get("status") == "True" else "NotReady"
    ]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    info = status.get("nodeInfo") or {}
    return [
        (node.get("metadata") or {}).get("name", ""),
        ",".join(states),
        ",".join(node_roles((node.get("metadata") or {}).get("labels") or {})) or NONE,
        age(node, now),
        info.get("kubeletVersion", ""),
        node_address(node, "InternalIP"),
        node_address(node, "ExternalIP"),
        info.get("osImage") or UNKNOWN,
        info.get("kernelVersion") or UNKNOWN,
        info.get("containerRuntimeVersion") or UNKNOWN,
    ]


NAMESPACE_COLUMNS = (NAME, column("Status", "string", "The status of the namespace"), AGE)


def print_namespace(namespace: Obj, now: datetime) -> Cells:
    """printNamespace: the namespace phase (Active, Terminating)."""
    phase = (namespace.get("status") or {}).get("phase", "")
    return [name_of(namespace), phase, age(namespace, now)]
