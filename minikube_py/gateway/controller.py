"""The gateway controller: Ingress and Gateway API through one nginx.

    startup      our IngressClass `minikube-py` (the default class); once the Gateway API
                 CRDs are served, informers for them and our GatewayClass `minikube-py`
    any change   one key, "sync", is queued; sync() is level-based:
      1. compute   ingress.py and gatewayapi.py turn what the informers hold into nginx
                   ports, TLS files and statuses
      2. config    nginx.py renders nginx.conf; it and the TLS files go into the Secret
                   kube-system/minikube-py-gateway, which the data plane's pods mount
                   (the kubelet updates the files; the pods reload nginx with HUP)
      3. data plane  made once an Ingress or Gateway of ours exists: the Deployment
                   kube-system/minikube-py-gateway (Debian's nginx), the LoadBalancer
                   Service minikube-py-ingress (80, 443), one LoadBalancer Service per
                   Gateway (its listener ports -> nginx's ports for it; spec.addresses'
                   IPAddress as its loadBalancerIP)
      4. status    Ingress status.loadBalancer; GatewayClass, Gateway and HTTPRoute
                   conditions (what the service-lb could not give a Gateway's Service
                   comes from that Service's LoadBalancerReady condition; the CRDs'
                   bundle-version from their annotation); written only when they changed
    A failed sync is logged and tried again with backoff, as every controller's
    (workqueue.log_sync_error).
    A sync that follows a change of an Ingress, a Gateway or an HTTPRoute is a span
    "gateway sync" in the trace that object carries (`mkctl trace httproute/NAME`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import time
from datetime import UTC, datetime
from typing import Any, ClassVar

from minikube_py.api import Obj
from minikube_py.api.loadbalancer import ingress_ips, load_balancer_condition
from minikube_py.api.resources import Resource
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.informer import EventHandler, SharedInformer, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.client.workqueue import RateLimitingQueue, log_sync_error, run_workers
from minikube_py.gateway import gatewayapi, ingress, nginx
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import DISABLED, Tracer

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
DATA_PLANE = "minikube-py-gateway"
INGRESS_SERVICE = "minikube-py-ingress"
IMAGE = "docker.io/library/nginx:latest"
CONFIG_DIR = "/etc/minikube-py-gateway"
APP_LABEL = "app.kubernetes.io/name"
PART_LABEL = "minikube-py.io/gateway-data-plane"  # "ingress" or "gateway"
GATEWAY_ANNOTATION = "minikube-py.io/gateway"  # namespace/name of the Gateway served
PORTS_ANNOTATION = "minikube-py.io/ports"  # {"listener port": nginx port}
DATA_PLANE_PORTS = range(10000, 20000)
"""nginx's ports for the Gateways' listeners (--data-plane-ports); a listener port that
finds none free is PortUnavailable."""
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
CRD_POLL_SECONDS = 5.0
CRD_GROUP = "apiextensions.k8s.io"
GATEWAY_RESOURCES = {
    "gatewayclasses": Resource(gatewayapi.GROUP, "v1", "GatewayClass", "gatewayclasses",
                               False, ("gc",), subresources=("status",)),
    "gateways": Resource(gatewayapi.GROUP, "v1", "Gateway", "gateways", True, ("gtw",),
                         subresources=("status",)),
    "httproutes": Resource(gatewayapi.GROUP, "v1", "HTTPRoute", "httproutes", True,
                           subresources=("status",)),
    "referencegrants": Resource(gatewayapi.GROUP, "v1beta1", "ReferenceGrant",
                                "referencegrants", True, ("refgrant",)),
}
RELOAD_SCRIPT = f"""\
conf=/tmp/nginx/live/nginx.conf
trap 'nginx -c $conf -s quit; exit 0' TERM INT
take() {{
  rm -rf /tmp/nginx/next && mkdir -p /tmp/nginx/next &&
    cp "$1"/* /tmp/nginx/next/ && cat /tmp/nginx/next/* | md5sum
}}
place() {{
  rm -rf /tmp/nginx/old; mv /tmp/nginx/live /tmp/nginx/old 2>/dev/null
  mv /tmp/nginx/next /tmp/nginx/live
}}
version=$(readlink -f {CONFIG_DIR}/..data)
seen=$(take "$version") && place || exit 1
nginx -c $conf || exit 1
while sleep 1; do
  kill -0 "$(cat /tmp/nginx.pid)" || exit 1
  latest=$(readlink -f {CONFIG_DIR}/..data)
  [ "$latest" = "$version" ] && continue
  now=$(take "$latest") || continue
  version=$latest
  if [ "$now" != "$seen" ]; then
    seen=$now
    place
    echo "configuration changed (md5 ${{now%% *}}): testing it, then reloading"
    nginx -c $conf -t && nginx -c $conf -s reload && echo "configuration reloaded"
  fi
done
"""
"""The data plane's command: start nginx, then reload it (HUP: the old workers finish their
connections) each time the kubelet has updated the mounted configuration. nginx reads a
copy that only this loop changes, taken whole from the kubelet's last projection (the
folder `..data` names, which the kubelet never changes, only replaces: a new name is a
new projection, and the only thing the loop checks each second): had it read the
mounted files themselves, a projection landing between the check and nginx's own read
would be loaded unseen, and a later one equal to the checked files never reloaded (the
gateway tests saw nginx keep a configuration without their route, 2026-12-01)."""


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def by_key(informer: SharedInformer) -> dict[tuple[str, str], Obj]:
    return {(obj["metadata"].get("namespace", ""), obj["metadata"]["name"]): obj
            for obj in informer.store.list()}


def load_balancer_address(service: Obj | None) -> str | None:
    addresses = ingress_ips(service or {})
    return addresses[0] if addresses else None


def gateway_service_name(namespace: str, name: str) -> str:
    """kube-system's Service for a Gateway: gateway-<ns>-<name>, hashed when too long."""
    plain = f"gateway-{namespace}-{name}"
    if len(plain) <= 63:
        return plain
    return f"gateway-{hashlib.sha256(plain.encode()).hexdigest()[:16]}"


def data_plane_labels() -> dict[str, str]:
    return {APP_LABEL: DATA_PLANE}


def deployment_object() -> Obj:
    """Debian's nginx, its configuration the Secret, reloaded when that changes."""
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DATA_PLANE, "namespace": NAMESPACE, "labels": data_plane_labels()},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": data_plane_labels()},
            "template": {
                "metadata": {"labels": data_plane_labels()},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [{
                        "name": "nginx", "image": IMAGE, "command": ["sh", "-c", RELOAD_SCRIPT],
                        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR,
                                          "readOnly": True}]}],
                    "volumes": [{"name": "config", "secret": {"secretName": DATA_PLANE}}]}}}}


def service_object(name: str, ports: dict[int, int], part: str,
                   annotations: dict[str, str], load_balancer_ip: str | None = None) -> Obj:
    """A LoadBalancer Service in front of the data plane's pods (asking for
    `load_balancer_ip` when given: a Gateway's spec.addresses)."""
    service: Obj = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations,
                     "labels": {**data_plane_labels(), PART_LABEL: part}},
        "spec": {"type": "LoadBalancer", "selector": data_plane_labels(),
                 "ports": [{"name": f"port-{public}", "protocol": "TCP", "port": public,
                            "targetPort": internal}
                           for public, internal in sorted(ports.items())]}}
    if load_balancer_ip:
        service["spec"]["loadBalancerIP"] = load_balancer_ip
    return service


def same_conditions(old: Any, new: Any) -> bool:
    """Equal but for lastTransitionTime."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items()
                    if key != "lastTransitionTime"}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value
    return strip(old) == strip(new)


class GatewayController:
    """Watches, syncs and writes (see the module's docstring)."""

    name: ClassVar[str] = "gateway-controller"
    key: ClassVar[str] = "sync"

    def __init__(self, client: Client, informers: SharedInformerFactory, *,
                 tracer: Tracer = DISABLED, data_plane_ports: range = DATA_PLANE_PORTS
                 ) -> None:
        self.client = client
        self.data_plane_ports = data_plane_ports
        self.informers = informers
        self.tracer = tracer
        self._causes: dict[tuple[str, str, str], tuple[tracing_context.SpanContext, str]] = {}
        """The trace (and uid) of each changed Ingress, Gateway and HTTPRoute, by (plural,
        namespace, name), until a sync has written what it asks for."""
        self.queue = RateLimitingQueue(self.name)
        handler = EventHandler(on_add=self.enqueue, on_update=lambda _old, _new: self.enqueue(),
                               on_delete=self.enqueue)
        self.handler = handler
        self.ingresses = self.watch(informers.informer("ingresses", "networking.k8s.io"))
        self.traced(self.ingresses, "ingresses")
        self.classes = self.watch(informers.informer("ingressclasses", "networking.k8s.io"))
        self.services = self.watch(informers.informer("services"))
        self.endpoint_slices = self.watch(informers.informer("endpointslices",
                                                             "discovery.k8s.io"))
        self.secrets = self.watch(informers.informer("secrets"))
        self.namespaces = self.watch(informers.informer("namespaces"))
        # a CRD written: look again at once whether the Gateway API is served
        self.crds = self.watch(informers.informer("customresourcedefinitions", CRD_GROUP))
        self.gateway_informers: dict[str, SharedInformer] = {}
        self.gateway_class_created = False

    def watch(self, informer: SharedInformer) -> SharedInformer:
        informer.add_event_handler(self.handler)
        return informer

    def enqueue(self, _obj: Obj | None = None) -> None:
        self.queue.add(self.key)

    def traced(self, informer: SharedInformer, plural: str) -> None:
        """Keep the trace of each object of `informer` that is added, deleted or whose
        spec changes (its generation: not the statuses this controller writes), for the
        next sync."""
        def changed(obj: Obj) -> None:
            metadata = obj["metadata"]
            if self.tracer.enabled and (context := tracing_context.of_object(obj)):
                self._causes[(plural, metadata.get("namespace", ""), metadata["name"])] = (
                    context, metadata.get("uid") or "")

        def updated(old: Obj, new: Obj) -> None:
            if old["metadata"].get("generation") != new["metadata"].get("generation"):
                changed(new)
        informer.add_event_handler(EventHandler(on_add=changed, on_update=updated,
                                                on_delete=changed))

    async def run(self) -> None:
        """Create our IngressClass, then sync until cancelled (one worker: there is one
        key)."""
        try:
            await self.client.resource("ingressclasses", "networking.k8s.io").create(
                ingress.ingress_class_object())
        except AlreadyExists:
            pass
        self.enqueue()
        await run_workers(self.queue, 1, lambda _key: self.sync(), self.sync_failed)

    def sync_failed(self, key: str, error: Exception) -> None:
        """Say why the sync failed; it is tried again later, rate-limited."""
        log_sync_error(log, self.name, self.queue, key, error)

    async def gateway_api_served(self) -> bool:
        """Whether the API server serves the Gateway API kinds we read (their CRDs are
        installed and established); asked again every few seconds until it does."""
        for resource in GATEWAY_RESOURCES.values():
            try:
                await self.client.resource_for(resource).list(limit=1)
            except NotFound:
                log.debug("%s: %s not served yet", self.name, resource.plural)
                self.queue.add_after(self.key, CRD_POLL_SECONDS)
                return False
        return True

    async def start_gateway_api(self) -> bool:
        """Once the CRDs are served: their informers, synced, and our GatewayClass."""
        if not self.gateway_informers:
            if not await self.gateway_api_served():
                return False
            for plural, resource in GATEWAY_RESOURCES.items():
                self.gateway_informers[plural] = self.watch(
                    self.informers.informer_for(resource))
                if plural in ("gateways", "httproutes"):
                    self.traced(self.gateway_informers[plural], plural)
            async with asyncio.timeout(60):
                await asyncio.gather(*(informer.wait_for_sync()
                                       for informer in self.gateway_informers.values()))
        if not self.gateway_class_created:
            try:
                await self.gateway_client("gatewayclasses").create({
                    "apiVersion": f"{gatewayapi.GROUP}/v1", "kind": "GatewayClass",
                    "metadata": {"name": gatewayapi.GATEWAY_CLASS},
                    "spec": {"controllerName": gatewayapi.CONTROLLER_NAME,
                             "description": "minikube-py's nginx data plane"}})
            except AlreadyExists:
                pass
            self.gateway_class_created = True
        return True

    def gateway_client(self, plural: str) -> Any:
        return self.client.resource_for(GATEWAY_RESOURCES[plural])

    async def sync(self) -> None:
        """One level-based pass (sync_all), then a span in the trace of each object whose
        change it follows; after a failure, the next pass is theirs."""
        started_ns = time.time_ns()
        causes, self._causes = self._causes, {}
        try:
            config_changed = await self.sync_all()
        except BaseException:
            self._causes = causes | self._causes
            raise
        for (plural, namespace, name), (parent, uid) in causes.items():
            span = self.tracer.start("gateway sync", parent=parent, attributes={
                "k8s.resource": plural, "k8s.namespace": namespace, "k8s.name": name,
                "k8s.uid": uid,
                "result": "nginx.conf updated" if config_changed else "nginx.conf unchanged"})
            span.start_ns = started_ns
            span.end()

    async def sync_all(self) -> bool:
        """Compute, write the config, the data plane, the statuses; whether the data
        plane's configuration changed."""
        log.debug("%s: syncing", self.name)
        services = by_key(self.services)
        secrets = by_key(self.secrets)
        classes = {key[1]: obj for key, obj in by_key(self.classes).items()}
        ingress_plan = ingress.compute_ingress(by_key(self.ingresses), classes, services,
                                               secrets)
        ports = list(ingress_plan.ports)
        files = dict(ingress_plan.files)
        plan = None
        if await self.start_gateway_api():
            world = self.world(services, secrets)
            plan = gatewayapi.compute(world)
            ports += plan.ports
            files |= plan.files
        files["nginx.conf"] = nginx.render(ports).encode()
        config_changed = await self.write_config(files)
        # the data plane is made when first needed: a cluster without either has none
        if ingress_plan.ingresses or (plan is not None and plan.gateway_ports):
            await self.ensure_deployment()
        if ingress_plan.ingresses:
            await self.ensure_service(INGRESS_SERVICE, {
                ingress.HTTP_PORT: ingress.HTTP_PORT, ingress.HTTPS_PORT: ingress.HTTPS_PORT},
                "ingress", {})
        address = load_balancer_address(services.get((NAMESPACE, INGRESS_SERVICE)))
        await self.write_ingress_status(ingress_plan.ingresses, address)
        if plan is not None:
            await self.sync_gateway_services(plan)
            await self.write_gateway_status(plan)
        return config_changed

    def world(self, services: dict[tuple[str, str], Obj],
              secrets: dict[tuple[str, str], Obj]) -> gatewayapi.World:
        """What gatewayapi.compute reads, with each Gateway's address and nginx ports."""
        gateways = by_key(self.gateway_informers["gateways"])
        addresses: dict[tuple[str, str], str] = {}
        ports: dict[tuple[str, str, int], int] = {}
        used: set[int] = set()
        # when two Services claim one nginx port (the second was written from a store that
        # had not seen the first yet), the older keeps it (creationTimestamp, then name),
        # and the other Gateway's listener is given a free one below, its Service set to it
        for service in sorted(services.values(), key=lambda obj: (
                obj["metadata"].get("creationTimestamp") or "", obj["metadata"]["name"])):
            annotations = service["metadata"].get("annotations") or {}
            served = annotations.get(GATEWAY_ANNOTATION)
            if service["metadata"].get("namespace") != NAMESPACE or not served:
                continue
            namespace, _, name = served.partition("/")
            address = load_balancer_address(service)
            if address and (namespace, name) in gateways:
                addresses[(namespace, name)] = address
            for public, internal in json.loads(annotations.get(PORTS_ANNOTATION, "{}")).items():
                if (namespace, name) in gateways and internal not in used:
                    ports[(namespace, name, int(public))] = internal
                    used.add(internal)
        free = (port for port in self.data_plane_ports if port not in used)
        for (namespace, name), gateway in sorted(gateways.items()):
            for listener in (gateway.get("spec") or {}).get("listeners") or []:
                if (namespace, name, listener["port"]) in ports:
                    continue
                port = next(free, None)
                if port is not None:  # else none left: the listener is PortUnavailable
                    ports[(namespace, name, listener["port"])] = port
        return gatewayapi.World(
            classes={key[1]: obj for key, obj in
                     by_key(self.gateway_informers["gatewayclasses"]).items()},
            gateways=gateways, routes=by_key(self.gateway_informers["httproutes"]),
            grants=self.gateway_informers["referencegrants"].store.list(),
            services=services, secrets=secrets,
            namespaces={key[1]: obj for key, obj in by_key(self.namespaces).items()},
            addresses=addresses, ports=ports, now=now(),
            endpoint_slices=self.slices_by_service(), crd_versions=self.crd_versions(),
            load_balancer_problems=self.load_balancer_problems(services),
            taken_addresses=self.taken_addresses(services))

    def slices_by_service(self) -> dict[tuple[str, str], list[Obj]]:
        """EndpointSlices by the Service they belong to (kubernetes.io/service-name)."""
        found: dict[tuple[str, str], list[Obj]] = {}
        for endpoint_slice in self.endpoint_slices.store.list():
            metadata = endpoint_slice["metadata"]
            service = (metadata.get("labels") or {}).get(SERVICE_NAME_LABEL)
            if service:
                found.setdefault((metadata.get("namespace", ""), service), []).append(
                    endpoint_slice)
        return found

    async def write_config(self, files: dict[str, bytes]) -> bool:
        """The Secret the data plane mounts, when its content changed; whether it did."""
        data = {name: base64.b64encode(content).decode() for name, content in files.items()}
        secrets = self.client.resource("secrets")
        current = self.secrets.store.get_by_name(NAMESPACE, DATA_PLANE)
        if current is None:
            try:
                await secrets.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                      "metadata": {"name": DATA_PLANE, "namespace": NAMESPACE,
                                                   "labels": data_plane_labels()},
                                      "data": data}, NAMESPACE)
            except AlreadyExists:
                return False
            return True
        if current.get("data") == data:
            return False
        await secrets.update({**current, "data": data})
        log.info("nginx configuration updated (%d bytes)", len(files["nginx.conf"]))
        return True

    async def ensure_deployment(self) -> None:
        """The data plane's Deployment, made unless it is there. A sync runs on every
        change the informers see, several a second while routes are written: a read
        first, so that those are not each a create the API server refuses (409)."""
        deployments = self.client.resource("deployments", "apps")
        try:
            await deployments.get(DATA_PLANE, NAMESPACE)
            return
        except NotFound:
            pass
        try:
            await deployments.create(deployment_object(), NAMESPACE)
        except AlreadyExists:
            pass

    async def ensure_service(self, name: str, ports: dict[int, int], part: str,
                             annotations: dict[str, str], load_balancer_ip: str | None = None
                             ) -> None:
        """Create the Service, or set its ports, annotations and loadBalancerIP when they
        differ."""
        wanted = service_object(name, ports, part, annotations, load_balancer_ip)
        current = self.services.store.get_by_name(NAMESPACE, name)
        services = self.client.resource("services")
        if current is None:
            try:
                await services.create(wanted, NAMESPACE)
            except AlreadyExists:
                pass
            return
        current = tracing_context.without_trace_context(current)  # not one of ours
        have = [(port.get("port"), port.get("targetPort")) for port in
                (current.get("spec") or {}).get("ports") or []]
        want = [(port["port"], port["targetPort"]) for port in wanted["spec"]["ports"]]
        if have != want or (current["metadata"].get("annotations") or {}) != annotations or (
                current["spec"].get("loadBalancerIP") != load_balancer_ip):
            spec = {key: value for key, value in current["spec"].items()
                    if key != "loadBalancerIP"}
            spec |= {"ports": wanted["spec"]["ports"],
                     **({"loadBalancerIP": load_balancer_ip} if load_balancer_ip else {})}
            metadata = {**current["metadata"], "annotations": annotations}
            await services.update({**current, "metadata": metadata, "spec": spec})

    async def sync_gateway_services(self, plan: gatewayapi.Plan) -> None:
        """A LoadBalancer Service per Gateway; those of Gateways gone are deleted."""
        wanted = set()
        for (namespace, name), ports in sorted(plan.gateway_ports.items()):
            service = gateway_service_name(namespace, name)
            wanted.add(service)
            await self.ensure_service(service, ports, "gateway", {
                GATEWAY_ANNOTATION: f"{namespace}/{name}",
                PORTS_ANNOTATION: json.dumps({str(public): internal
                                              for public, internal in sorted(ports.items())})},
                plan.gateway_addresses.get((namespace, name)))
        for service in self.services.store.list(NAMESPACE):
            labels = service["metadata"].get("labels") or {}
            if labels.get(PART_LABEL) == "gateway" and (
                    service["metadata"]["name"] not in wanted):
                try:
                    await self.client.resource("services").delete(
                        service["metadata"]["name"], NAMESPACE)
                except NotFound:
                    pass

    async def write_ingress_status(self, keys: list[tuple[str, str]], address: str | None
                                   ) -> None:
        status = ingress.ingress_status(address)
        client = self.client.resource("ingresses", "networking.k8s.io")
        for namespace, name in keys:
            current = self.ingresses.store.get_by_name(namespace, name)
            if current is None or (current.get("status") or {}) == status:
                continue
            await client.update_status({**current, "status": status})

    async def write_gateway_status(self, plan: gatewayapi.Plan) -> None:
        """GatewayClasses, Gateways and HTTPRoutes whose status changed."""
        writes: list[tuple[str, Obj, Obj]] = []
        for name, status in plan.class_status.items():
            writes.append(("gatewayclasses",
                           self.gateway_informers["gatewayclasses"].store.get(name) or {},
                           status))
        for (namespace, name), status in plan.gateway_status.items():
            current = self.gateway_informers["gateways"].store.get_by_name(namespace, name)
            writes.append(("gateways", current or {}, status))
        for (namespace, name), parents in plan.route_parents.items():
            current = self.gateway_informers["httproutes"].store.get_by_name(namespace, name)
            if current is None:
                continue
            old = (current.get("status") or {}).get("parents") or []
            if not parents and not any(item.get("controllerName") == gatewayapi.CONTROLLER_NAME
                                       for item in old):
                continue
            others = [item for item in old
                      if item.get("controllerName") != gatewayapi.CONTROLLER_NAME]
            merged = []
            for parent in parents:
                previous = next((item for item in old
                                 if item.get("parentRef") == parent["parentRef"]
                                 and item.get("controllerName") == gatewayapi.CONTROLLER_NAME),
                                None)
                conditions = gatewayapi.merge_conditions(
                    (previous or {}).get("conditions") or [], parent["conditions"])
                merged.append({**parent, "conditions": conditions})
            writes.append(("httproutes", current, {**(current.get("status") or {}),
                                                   "parents": [*others, *merged]}))
        for plural, current, status in writes:
            if not current or same_conditions(current.get("status") or {}, status):
                continue
            await self.gateway_client(plural).update_status({**current, "status": status})

    def crd_versions(self) -> dict[str, str]:
        """The bundle-version annotation of each Gateway API CRD ("" without one)."""
        return {crd["metadata"]["name"]: (crd["metadata"].get("annotations") or {}).get(
                    gatewayapi.BUNDLE_VERSION, "")
                for crd in self.crds.store.list()
                if (crd.get("spec") or {}).get("group") == gatewayapi.GROUP}

    @staticmethod
    def load_balancer_problems(services: dict[tuple[str, str], Obj]
                               ) -> dict[tuple[str, str], str]:
        """Per Gateway: why the service-lb gives its Service no address (its condition
        LoadBalancerReady False), while the Service lacks the address it asks for."""
        problems = {}
        for service in services.values():
            metadata = service["metadata"]
            served = (metadata.get("annotations") or {}).get(GATEWAY_ANNOTATION)
            ready = load_balancer_condition(service)
            if metadata.get("namespace") != NAMESPACE or not served or ready is None or (
                    ready.get("status") != "False"):
                continue
            address = load_balancer_address(service)
            wanted = (service.get("spec") or {}).get("loadBalancerIP")
            if address is None or (wanted and address != wanted):
                namespace, _, name = served.partition("/")
                problems[(namespace, name)] = ready.get("message") or ready.get("reason") or ""
        return problems

    @staticmethod
    def taken_addresses(services: dict[tuple[str, str], Obj]) -> dict[str, str]:
        """Each load-balancer address a Service holds (ingress_ips) or asks for -> who:
        "Gateway ns/name" for a Gateway's Service, else "Service ns/name"."""
        taken = {}
        for (namespace, name), service in services.items():
            served = ((service["metadata"].get("annotations") or {}).get(GATEWAY_ANNOTATION)
                      if namespace == NAMESPACE else None)
            holder = f"Gateway {served}" if served else f"Service {namespace}/{name}"
            for address in [*ingress_ips(service),
                            (service.get("spec") or {}).get("loadBalancerIP")]:
                if address:
                    taken.setdefault(address, holder)
        return taken
