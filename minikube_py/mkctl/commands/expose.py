"""`mkctl expose`: make a Service for a Deployment, ReplicaSet, ReplicationController,
Pod or Service (kubectl expose).

    mkctl expose deployment web --port=80                    service/web exposed
    mkctl expose deploy web --port=8080 --target-port=80 --type=NodePort --name=web-np
    mkctl expose pod p                                       ports read from the pod

What kubectl reads from the object it exposes (polymorphichelpers):
  selector   --selector, else the Pod's labels, the workload's spec.selector (matchLabels
             only: a Service cannot select with expressions), a Service's selector;
  ports      --port, else every port its containers declare (a Service's ports), named
             port-1, port-2, ... when there are several;
  protocols  --protocol, else each declared port's protocol, else TCP;
  labels     --labels, else the object's own labels; the name --name, else the object's.
The targetPort is --target-port (a number, or a port's name), else the port itself.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl import builder
from minikube_py.mkctl.changes import DRY_RUN_FLAG, OUTPUT_FLAG, OperationPrinter, dry_run
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import Flag

EXPOSABLE = ("Deployment", "ReplicaSet", "ReplicationController", "Pod", "Service")


def _pod_spec(obj: Obj) -> Obj:
    if obj["kind"] == "Pod":
        return obj.get("spec") or {}
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def introspected_selector(obj: Obj) -> dict[str, str]:
    """MapBasedSelectorForObject."""
    kind, spec = obj["kind"], obj.get("spec") or {}
    if kind == "Pod":
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if not labels:
            raise MkctlError("the pod has no labels and cannot be exposed")
        return labels
    if kind in ("Service", "ReplicationController"):
        selector = spec.get("selector") or {}
        if not selector:
            noun = "service" if kind == "Service" else "replication controller"
            raise MkctlError(f"the {noun} has no pod selector set")
        return selector
    selector = spec.get("selector") or {}
    if selector.get("matchExpressions"):
        raise MkctlError(f"couldn't convert expressions - \"{_expressions(selector)}\" to map-"
                         "based selector format")
    return selector.get("matchLabels") or {}


def _expressions(selector: Obj) -> str:
    from minikube_py.api.selectors import label_selector_to_string

    return label_selector_to_string({"matchExpressions": selector["matchExpressions"]})


def introspected_ports(obj: Obj) -> list[tuple[str, str]]:
    """PortsForObject and ProtocolsForObject: (port, protocol) of each declared port."""
    if obj["kind"] == "Service":
        return [(str(port.get("port")), port.get("protocol") or "TCP")
                for port in (obj.get("spec") or {}).get("ports") or []]
    return [(str(port.get("containerPort")), port.get("protocol") or "TCP")
            for container in _pod_spec(obj).get("containers") or []
            for port in container.get("ports") or []]


def _port_number(text: str) -> int:
    """strconv.Atoi, with its error text."""
    try:
        return int(text, 10)
    except ValueError:
        raise MkctlError(f'strconv.Atoi: parsing "{text}": invalid syntax') from None


def _parse_map(text: str, what: str) -> dict[str, str]:
    """`a=b,c=d` as kubectl parses --labels and --selector."""
    parsed = {}
    for part in text.split(","):
        key, has_value, value = part.partition("=")
        if not has_value:
            raise MkctlError(f"invalid {what} format: {part}")
        parsed[key.strip()] = value.strip()
    return parsed


def service_for(inv: Invocation, obj: Obj) -> Obj:
    """The Service that exposes `obj`."""
    flags = inv.flags
    selector = (_parse_map(flags["selector"], "selector") if flags["selector"]
                else introspected_selector(obj))
    declared = introspected_ports(obj)
    protocols = dict(declared)
    if flags["port"]:
        ports = [flags["port"]]
    else:
        ports = list(dict.fromkeys(port for port, _ in declared))
        if not ports:
            raise MkctlError("couldn't find port via --port flag or introspection")
    service_ports = []
    for index, port_text in enumerate(ports, 1):
        port = _port_number(port_text)
        entry: Obj = {}  # in the Go struct's order: -o json prints it so
        if len(ports) > 1:
            entry["name"] = f"port-{index}"
        entry["protocol"] = flags["protocol"] or protocols.get(port_text) or "TCP"
        entry["port"] = port
        target = flags["target-port"]
        entry["targetPort"] = (int(target) if target.isdigit() else target) if target else port
        service_ports.append(entry)
    metadata = obj.get("metadata") or {}
    labels = (_parse_map(flags["labels"], "label") if flags["labels"]
              else metadata.get("labels") or {})
    spec: Obj = {"ports": service_ports, "selector": selector}
    if flags["cluster-ip"]:
        spec["clusterIP"] = flags["cluster-ip"]
    if flags["type"]:
        spec["type"] = flags["type"]
    if flags["external-ip"]:
        spec["externalIPs"] = [flags["external-ip"]]  # kubectl does not split it
    if flags["session-affinity"]:
        spec["sessionAffinity"] = flags["session-affinity"]
    if flags["load-balancer-ip"]:
        spec["loadBalancerIP"] = flags["load-balancer-ip"]
    service_metadata: Obj = {"name": flags["name"] or metadata.get("name", ""),
                             "namespace": metadata.get("namespace", "")}
    if labels:
        service_metadata["labels"] = labels
    return {"kind": "Service", "apiVersion": "v1", "metadata": service_metadata,
            "spec": spec, "status": {"loadBalancer": {}}}


def run(inv: Invocation) -> None:
    mode = dry_run(inv)
    if not inv.args:
        raise MkctlError("You must provide one or more resources by argument or filename.\n"
                         "Example resource specifications include:\n   '-f rsrc.yaml'\n"
                         "   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'")
    namespace, _ = inv.namespace()
    selection = builder.select(inv, list(inv.args), namespace=namespace, all_namespaces=False,
                               label_selector="", field_selector="")
    results = builder.fetch(inv, selection, accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
    errors: list[Exception] = list(results.errors)
    printer = OperationPrinter(inv, "exposed")
    for resource, obj in builder.each_object(results):
        if resource.kind not in EXPOSABLE:
            errors.append(MkctlError(f"cannot expose a {resource.kind}"))
            continue
        try:
            service = service_for(inv, obj)
            if mode != "client":
                params = {"fieldManager": "kubectl-expose"}
                if mode == "server":
                    params["dryRun"] = "All"
                target = obj["metadata"].get("namespace") or namespace
                service = inv.client.request_json(
                    "POST", f"/api/v1/namespaces/{target}/services", params,
                    body=service)
        except (StatusError, MkctlError) as error:
            errors.append(error)
            continue
        printer.print_obj(service, struct_order=mode == "client")
    if errors:
        raise Aggregate(errors)


COMMAND = Command(
    name="expose",
    summary="Take a replication controller, service, deployment or pod and expose it as a "
            "new Kubernetes service",
    usage="expose (-f FILENAME | TYPE NAME) [--port=port] [--protocol=TCP|UDP|SCTP] "
          "[--target-port=number-or-name] [--name=name] [--external-ip=external-ip-of-service] "
          "[--type=type] [options]",
    run=run,
    flags=[
        Flag("cluster-ip", help="ClusterIP to be assigned to the service. Leave empty to "
                                "auto-allocate, or set to 'None' to create a headless service."),
        DRY_RUN_FLAG,
        Flag("external-ip", help="Additional external IP address (not managed by "
                                 "Kubernetes) to accept for the service. If this IP is routed "
                                 "to a node, the service can be accessed by this IP in "
                                 "addition to its generated service IP."),
        Flag("labels", shorthand="l", help="Labels to apply to the service created by this "
                                           "call."),
        Flag("load-balancer-ip", help="IP to assign to the LoadBalancer. If empty, an "
                                      "ephemeral IP will be created and used "
                                      "(cloud-provider specific)."),
        Flag("name", help="The name for the newly created object."),
        OUTPUT_FLAG,
        Flag("port", help="The port that the service should serve on. Copied from the "
                          "resource being exposed, if unspecified"),
        Flag("protocol", help="The network protocol for the service to be created. Default "
                              "is 'TCP'."),
        Flag("selector", help="A label selector to use for this service. Only equality-based "
                              "selector requirements are supported. If empty (the default) "
                              "infer the selector from the replication controller or replica "
                              "set.)"),
        Flag("session-affinity", help="If non-empty, set the session affinity for the "
                                      "service to this; legal values: 'None', 'ClientIP'"),
        Flag("target-port", help="Name or number for the port on the container that the "
                                 "service should direct traffic to. Optional."),
        Flag("type", help="Type for this service: ClusterIP, NodePort, LoadBalancer, or "
                          "ExternalName. Default is 'ClusterIP'."),
    ],
    examples="""  # Create a service for an nginx deployment, which serves on port 80 and connects
  # to the containers on port 8000
  mkctl expose deployment nginx --port=80 --target-port=8000""",
)
