"""The pod sandbox's CRI config: hostname, DNS, port mappings, labels, log directory.

Upstream `kuberuntime_sandbox.go` generatePodSandboxConfig and `network/dns/dns.go`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.podstate import (
    MANAGED_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)

PROTOCOLS = {"TCP": api_pb2.TCP, "UDP": api_pb2.UDP, "SCTP": api_pb2.SCTP}
HOST_RESOLV_CONF = Path("/etc/resolv.conf")


@dataclass
class DNSSettings:
    """The kubelet's --cluster-dns / --cluster-domain, and the host's resolver."""

    cluster_dns: list[str] = field(default_factory=list)
    cluster_domain: str = "cluster.local"
    resolv_conf: Path = HOST_RESOLV_CONF


def pod_log_directory(logs_root: Path, pod: Obj) -> Path:
    """Upstream's /var/log/pods/<namespace>_<name>_<uid>."""
    meta = pod["metadata"]
    return logs_root / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"


def pod_labels(pod: Obj) -> dict[str, str]:
    """The CRI labels that let a restarted kubelet find the pod's sandboxes and containers."""
    meta = pod["metadata"]
    return {**(meta.get("labels") or {}), POD_NAME_LABEL: meta["name"],
            POD_NAMESPACE_LABEL: meta["namespace"], POD_UID_LABEL: meta["uid"],
            MANAGED_LABEL: "true"}


def _host_resolver(path: Path) -> tuple[list[str], list[str], list[str]]:
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return servers, searches, options
    for line in lines:
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "nameserver" and len(words) > 1:
            servers.append(words[1])
        elif words[0] in ("search", "domain"):
            searches = words[1:]
        elif words[0] == "options":
            options.extend(words[1:])
    return servers, searches, options


def dns_config(pod: Obj, settings: DNSSettings) -> api_pb2.DNSConfig:
    """The pod's resolv.conf from its dnsPolicy (ClusterFirst, Default, None) and dnsConfig."""
    spec = pod["spec"]
    policy = spec.get("dnsPolicy", "ClusterFirst")
    if policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst"
                                               and not spec.get("hostNetwork")):
        policy = "ClusterFirst"
    elif policy == "ClusterFirst":
        policy = "Default"  # a hostNetwork pod with ClusterFirst uses the host's resolver
    host_servers, host_searches, host_options = _host_resolver(settings.resolv_conf)
    if policy == "ClusterFirst" and settings.cluster_dns:
        namespace, domain = pod["metadata"]["namespace"], settings.cluster_domain
        servers = list(settings.cluster_dns)
        searches = [f"{namespace}.svc.{domain}", f"svc.{domain}", domain, *host_searches]
        options = ["ndots:5"]
    elif policy == "None":
        servers, searches, options = [], [], []
    else:
        servers, searches, options = host_servers, host_searches, host_options
    extra = spec.get("dnsConfig") or {}
    servers = [*servers, *(extra.get("nameservers") or [])]
    searches = [*searches, *(extra.get("searches") or [])]
    merged: dict[str, str] = {}
    for option in options:
        merged[option.partition(":")[0]] = option
    for option in extra.get("options") or []:
        value = option.get("value")
        merged[option["name"]] = (f"{option['name']}:{value}" if value is not None
                                  else option["name"])
    return api_pb2.DNSConfig(servers=servers[:3], searches=searches[:32],
                             options=list(merged.values()))


def port_mappings(pod: Obj) -> list[api_pb2.PortMapping]:
    """hostPort mappings of every container port that asks for one."""
    mappings = []
    for container in pod["spec"].get("containers") or []:
        for port in container.get("ports") or []:
            if not port.get("hostPort"):
                continue
            mappings.append(api_pb2.PortMapping(
                protocol=PROTOCOLS.get(port.get("protocol", "TCP"), api_pb2.TCP),
                container_port=port["containerPort"], host_port=port["hostPort"],
                host_ip=port.get("hostIP", "")))
    return mappings


def sandbox_config(pod: Obj, attempt: int, *, logs_root: Path,
                   dns: DNSSettings) -> api_pb2.PodSandboxConfig:
    """generatePodSandboxConfig: what RunPodSandbox needs to build the pod's sandbox."""
    meta, spec = pod["metadata"], pod["spec"]
    # a hostNetwork pod has the node's hostname: it shares the node's UTS namespace too,
    # where runc may set no other ("unable to set hostname without a private UTS
    # namespace")
    hostname = ("" if spec.get("hostNetwork")
                else (spec.get("hostname") or meta["name"])[:63].rstrip("-."))

    namespaces = api_pb2.NamespaceOption(
        network=api_pb2.NODE if spec.get("hostNetwork") else api_pb2.POD,
        pid=api_pb2.NODE if spec.get("hostPID") else api_pb2.CONTAINER,
        ipc=api_pb2.NODE if spec.get("hostIPC") else api_pb2.POD)
    security = spec.get("securityContext") or {}
    # HasPrivilegedContainer: containerd runs a privileged container only in a
    # privileged sandbox ("no privileged container allowed in sandbox")
    privileged = any((container.get("securityContext") or {}).get("privileged")
                     for key in ("initContainers", "containers", "ephemeralContainers")
                     for container in spec.get(key) or ())
    context = api_pb2.LinuxSandboxSecurityContext(namespace_options=namespaces,
                                                  privileged=privileged)
    if security.get("runAsUser") is not None:
        context.run_as_user.value = security["runAsUser"]
    if security.get("runAsGroup") is not None:
        context.run_as_group.value = security["runAsGroup"]
    context.supplemental_groups.extend(security.get("supplementalGroups") or [])
    sysctls = {s["name"]: s["value"] for s in security.get("sysctls") or []}
    return api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=meta["name"], uid=meta["uid"],
                                            namespace=meta["namespace"], attempt=attempt),
        hostname=hostname,
        log_directory=str(pod_log_directory(logs_root, pod)),
        dns_config=dns_config(pod, dns),
        port_mappings=port_mappings(pod),
        labels=pod_labels(pod),
        annotations=meta.get("annotations") or {},
        linux=api_pb2.LinuxPodSandboxConfig(security_context=context, sysctls=sysctls),
    )
