"""Gateway API (v1, standard channel) -> the data plane's ports, and every status the spec
asks for. Pure: it reads a `World` (what the informers hold) and returns a `Plan`.

    GatewayClass  ours when spec.controllerName is CONTROLLER_NAME: Accepted,
                  SupportedVersion (False, UnsupportedVersion, when a Gateway API CRD's
                  bundle-version is not one we know: served on a best-effort basis)
    Gateway       of one of our classes: each listener checked (protocol, a free nginx
                  port: else PortUnavailable, route kinds, TLS certificateRefs, conflicts,
                  OverlappingTLSConfig); Accepted (False, InvalidParameters, with an
                  infrastructure.parametersRef: this controller reads none; False,
                  UnsupportedAddress, with a spec.addresses type other than IPAddress),
                  Programmed (once its LoadBalancer has an address: the one spec.addresses
                  asks for, if any; else AddressNotUsable, NoResources or
                  AddressNotAssigned), status.addresses, listeners[] (attachedRoutes
                  counts the routes of a listener whose certificateRefs do not resolve,
                  though it serves none)
    HTTPRoute     each parentRef that names one of our Gateways: attached to the listeners
                  that allow it (sectionName, port, allowedRoutes, hostnames), Accepted and
                  ResolvedRefs (backendRefs and RequestMirror's: Services, cross-namespace
                  only through a ReferenceGrant; a headless Service's ready endpoints);
                  a rule with a filter this data plane lacks or two it cannot combine is
                  dropped (PartiallyInvalid), a route of only such rules is not Accepted
                  (UnsupportedValue, IncompatibleFilters); each rule's matches become
                  candidates on the listener's port, in the spec's precedence order,
                  tagged with the listener (nginx.py routes a request by the most specific
                  listener only)

A Gateway's listeners that share a port share one nginx port (from --data-plane-ports), reached
through the Gateway's own LoadBalancer Service.
"""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from minikube_py.api import Obj
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.gateway.nginx import (
    Action,
    Backend,
    Candidate,
    Certificate,
    HeaderFilter,
    Match,
    Port,
    Redirect,
    Rewrite,
)

GROUP = "gateway.networking.k8s.io"
CONTROLLER_NAME = "minikube-py.io/gateway-controller"
GATEWAY_CLASS = "minikube-py"
SUPPORTED_VERSION = "v1"
BUNDLE_VERSION = "gateway.networking.k8s.io/bundle-version"
SUPPORTED_BUNDLES = ("v1.6.",)
"""The CRD bundles (release lines) whose types this controller was written against."""
ROUTE_KIND = {"group": GROUP, "kind": "HTTPRoute"}
HTTP_PROTOCOLS = ("HTTP", "HTTPS")
SUPPORTED_FILTERS = ("RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect",
                     "URLRewrite", "RequestMirror")
INCOMPATIBLE_FILTERS = (
    ("RequestRedirect", "URLRewrite", "the spec forbids combining them"),
    ("RequestRedirect", "RequestMirror", "nginx answers a redirect (return) before it "
     "mirrors"),
    ("RequestRedirect", "ResponseHeaderModifier", "nginx's redirect answer does not take "
     "the response headers here"))
"""Filter pairs one rule cannot hold on this data plane, and why."""


def condition(kind: str, status: bool, reason: str, message: str, generation: int,
              now: str) -> Obj:
    return {"type": kind, "status": "True" if status else "False", "reason": reason,
            "message": message, "observedGeneration": generation,
            "lastTransitionTime": now}


def merge_conditions(old: list[Obj], new: list[Obj]) -> list[Obj]:
    """New conditions, keeping lastTransitionTime where the status did not change."""
    before = {item["type"]: item for item in old}
    merged = []
    for item in new:
        previous = before.get(item["type"])
        if previous is not None and previous.get("status") == item["status"]:
            item = {**item, "lastTransitionTime": previous.get("lastTransitionTime",
                                                                 item["lastTransitionTime"])}
        merged.append(item)
    return merged


@dataclass
class World:
    """What the controller knows: objects by (namespace, name), names for cluster-scoped."""

    classes: dict[str, Obj]
    gateways: dict[tuple[str, str], Obj]
    routes: dict[tuple[str, str], Obj]
    grants: list[Obj]
    services: dict[tuple[str, str], Obj]
    secrets: dict[tuple[str, str], Obj]
    namespaces: dict[str, Obj]
    addresses: dict[tuple[str, str], str]  # Gateway -> its LoadBalancer address
    ports: dict[tuple[str, str, int], int]  # (Gateway, listener port) -> nginx port
    now: str
    endpoint_slices: dict[tuple[str, str], list[Obj]] = field(default_factory=dict)
    """A Service's EndpointSlices (label kubernetes.io/service-name): a headless
    Service's backends are its endpoints."""
    crd_versions: dict[str, str] = field(default_factory=dict)
    """Each Gateway API CRD's bundle-version annotation ("" when it has none), by name."""
    load_balancer_problems: dict[tuple[str, str], str] = field(default_factory=dict)
    """Why the service-lb gives a Gateway's Service no address (or not the one it asks
    for): the message of the Service's LoadBalancerReady condition, when False."""
    taken_addresses: dict[str, str] = field(default_factory=dict)
    """Load-balancer addresses Services hold or ask for -> whose: "Gateway ns/name" for a
    Gateway's Service, else "Service ns/name"."""


@dataclass
class Plan:
    """What to write: nginx ports, TLS files, and each object's new status."""

    ports: list[Port] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    class_status: dict[str, Obj] = field(default_factory=dict)
    gateway_status: dict[tuple[str, str], Obj] = field(default_factory=dict)
    route_parents: dict[tuple[str, str], list[Obj]] = field(default_factory=dict)
    gateway_ports: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    gateway_addresses: dict[tuple[str, str], str] = field(default_factory=dict)
    """The address (spec.addresses) a Gateway's Service asks the service-lb for."""


def unsupported_bundles(crd_versions: dict[str, str]) -> list[str]:
    """The Gateway API CRDs whose bundle-version is missing or not one we support, as
    "name (version)"."""
    return [f"{name} ({version or 'no ' + BUNDLE_VERSION})"
            for name, version in sorted(crd_versions.items())
            if not version.startswith(SUPPORTED_BUNDLES)]


def gateway_class_status(obj: Obj, now: str, crd_versions: dict[str, str] | None = None
                         ) -> Obj:
    """Accepted and SupportedVersion for one of our classes. CRDs of a bundle we do not
    know: SupportedVersion False (UnsupportedVersion), the class still Accepted (the
    spec's "best effort" choice)."""
    generation = obj["metadata"].get("generation", 1)
    old = (obj.get("status") or {}).get("conditions") or []
    unsupported = unsupported_bundles(crd_versions or {})
    supported = ", ".join(f"{prefix}x" for prefix in SUPPORTED_BUNDLES)
    version = (condition("SupportedVersion", True, "SupportedVersion",
                         f"Gateway API {SUPPORTED_VERSION} (bundle {supported}) is supported",
                         generation, now)
               if not unsupported else
               condition("SupportedVersion", False, "UnsupportedVersion",
                         f"CRDs of an unsupported bundle: {', '.join(unsupported)}; "
                         f"supported: {supported} (served on a best-effort basis)",
                         generation, now))
    return {**(obj.get("status") or {}), "conditions": merge_conditions(old, [
        condition("Accepted", True, "Accepted", "handled by minikube-py's gateway controller",
                  generation, now), version])}


def hostname_matches(pattern: str, hostname: str) -> bool:
    """Whether a concrete or wildcard `hostname` falls under `pattern` (*.a.b covers x.a.b
    and y.x.a.b, not a.b)."""
    if pattern == hostname:
        return True
    if pattern.startswith("*."):
        bare = hostname[2:] if hostname.startswith("*.") else hostname
        return bare.endswith(pattern[1:]) and len(bare) > len(pattern) - 1
    return False


def intersect(listener: str | None, route: list[str]) -> list[str]:
    """The hostnames a route serves on a listener ("" is any); empty: none intersect."""
    if not route:
        return [listener or ""]
    if not listener:
        return list(route)
    found = []
    for hostname in route:
        if hostname_matches(listener, hostname):
            found.append(hostname)
        elif hostname_matches(hostname, listener):
            found.append(listener)
    return list(dict.fromkeys(found))


def granted(grants: list[Obj], from_kind: str, from_namespace: str, to_group: str,
            to_kind: str, to_namespace: str, to_name: str) -> bool:
    """Whether a ReferenceGrant in to_namespace lets a `from_kind` of from_namespace refer
    to the object."""
    for grant in grants:
        if grant["metadata"].get("namespace") != to_namespace:
            continue
        spec = grant.get("spec") or {}
        allowed_from = any(item.get("group") == GROUP and item.get("kind") == from_kind
                           and item.get("namespace") == from_namespace
                           for item in spec.get("from") or [])
        allowed_to = any((item.get("group") or "") == to_group and item.get("kind") == to_kind
                         and item.get("name") in (None, "", to_name)
                         for item in spec.get("to") or [])
        if allowed_from and allowed_to:
            return True
    return False


@dataclass
class Listener:
    """One listener, checked: valid ones take routes."""

    spec: Obj
    conditions: list[tuple[str, bool, str, str]]
    kinds: list[Obj]
    attached: int = 0

    @property
    def valid(self) -> bool:
        return all(ok for kind, ok, _, _ in self.conditions if kind != "Conflicted")

    @property
    def accepted(self) -> bool:
        """Routes attach to it (and count) even when its references do not resolve."""
        return not any(kind == "Accepted" and not ok for kind, ok, _, _ in self.conditions)


class GatewayAPI:
    """Computes the plan of one sync (see the module's docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.plan = Plan()
        self.ours = {name for name, obj in world.classes.items()
                     if (obj.get("spec") or {}).get("controllerName") == CONTROLLER_NAME}
        self.listeners: dict[tuple[str, str], list[Listener]] = {}
        self.ports: dict[int, Port] = {}
        self.not_accepted: dict[tuple[str, str], tuple[str, str]] = {}
        """Gateways not accepted: (reason, message)."""
        self.unusable_address: dict[tuple[str, str], str] = {}
        """Gateways whose spec.addresses cannot be had: why."""

    def compute(self) -> Plan:
        for name in sorted(self.ours):
            self.plan.class_status[name] = gateway_class_status(
                self.world.classes[name], self.world.now, self.world.crd_versions)
        gateways = {key: obj for key, obj in self.world.gateways.items()
                    if (obj.get("spec") or {}).get("gatewayClassName") in self.ours}
        for key, gateway in sorted(gateways.items()):
            self.listeners[key] = self.check_listeners(key, gateway)
            if ((gateway.get("spec") or {}).get("infrastructure") or {}).get("parametersRef"):
                self.not_accepted[key] = ("InvalidParameters", "spec.infrastructure."
                                          "parametersRef names nothing this controller reads")
            self.check_addresses(key, gateway)
        candidates: dict[int, list[tuple[tuple[Any, ...], Candidate]]] = {}
        for key, route in sorted(self.world.routes.items(), key=route_order):
            self.attach_route(key, route, gateways, candidates)
        for number, entries in candidates.items():
            entries.sort(key=lambda entry: entry[0])
            self.ports[number].candidates = [candidate for _, candidate in entries]
        for key, gateway in sorted(gateways.items()):
            self.plan.gateway_status[key] = self.gateway_status(key, gateway)
        self.plan.ports = list(self.ports.values())
        return self.plan

    def check_addresses(self, key: tuple[str, str], gateway: Obj) -> None:
        """spec.addresses: one IPAddress at most, the Service's loadBalancerIP. Another
        type: not accepted (UnsupportedAddress); an address that cannot be had: not
        programmed (AddressNotUsable)."""
        requested = (gateway.get("spec") or {}).get("addresses") or []
        for address in requested:
            kind = address.get("type") or "IPAddress"
            if kind != "IPAddress":
                self.not_accepted.setdefault(key, (
                    "UnsupportedAddress", f"address type {kind} is not supported: a "
                    "Gateway's address is its LoadBalancer Service's IPAddress"))
                return
        values = [address.get("value") or "" for address in requested]
        if len(values) > 1:
            self.unusable_address[key] = (
                f"addresses {', '.join(value or '(any)' for value in values)}: a Gateway has "
                "one address here (its LoadBalancer Service's); keep one")
            return
        if not values or not values[0]:
            return  # none, or any: the service-lb picks one
        value = values[0]
        try:
            ipaddress.IPv4Address(value)
        except ValueError:
            self.unusable_address[key] = (f"address {value} is not an IPv4 address: the "
                                          "load-balancer range is IPv4")
            return
        holder = self.world.taken_addresses.get(value)
        if holder not in (None, f"Gateway {key[0]}/{key[1]}"):
            self.unusable_address[key] = (f"address {value} is in use by {holder}; ask for "
                                          "another one")
            return
        self.plan.gateway_addresses[key] = value

    def nginx_port(self, key: tuple[str, str], listener_port: int) -> Port:
        number = self.world.ports[(key[0], key[1], listener_port)]
        self.plan.gateway_ports.setdefault(key, {})[listener_port] = number
        if number not in self.ports:
            self.ports[number] = Port(number, public_port=listener_port)
        return self.ports[number]

    def check_listeners(self, key: tuple[str, str], gateway: Obj) -> list[Listener]:
        """Each listener's conditions: protocol, route kinds, TLS, conflicts."""
        specs = (gateway.get("spec") or {}).get("listeners") or []
        protocols: dict[int, set[str]] = {}
        hostnames: dict[tuple[int, str], int] = {}
        for spec in specs:
            protocols.setdefault(spec["port"], set()).add(spec["protocol"])
            host_key = (spec["port"], spec.get("hostname") or "")
            hostnames[host_key] = hostnames.get(host_key, 0) + 1
        checked = []
        for spec in specs:
            conditions: list[tuple[str, bool, str, str]] = []
            kinds: list[Obj] = []
            protocol = spec["protocol"]
            if protocol not in HTTP_PROTOCOLS:
                conditions.append(("Accepted", False, "UnsupportedProtocol",
                                   f"protocol {protocol} is not supported"))
            elif (key[0], key[1], spec["port"]) not in self.world.ports:
                conditions.append(("Accepted", False, "PortUnavailable",
                                   f"port {spec['port']}: no data-plane port is free for it"))
            elif len(protocols[spec["port"]]) > 1:
                conditions.append(("Conflicted", True, "ProtocolConflict",
                                   "another listener on this port has another protocol"))
            elif hostnames[(spec["port"], spec.get("hostname") or "")] > 1:
                conditions.append(("Conflicted", True, "HostnameConflict",
                                   "another listener has this port and hostname"))
            if protocol in HTTP_PROTOCOLS:
                kinds, kinds_ok = route_kinds(spec)
                if not kinds_ok:
                    conditions.append(("ResolvedRefs", False, "InvalidRouteKinds",
                                       "a route kind in allowedRoutes is not supported"))
            if protocol == "HTTPS" and not any(kind == "Accepted" for kind, *_ in conditions):
                problem = self.check_certificates(key, spec)
                if problem is not None:
                    conditions.append(("ResolvedRefs", False, *problem))
                overlapping = overlapping_tls(spec, specs)
                if overlapping:
                    conditions.append(("OverlappingTLSConfig", True, "OverlappingHostnames",
                                       f"its hostname overlaps those of listeners "
                                       f"{', '.join(overlapping)} on port {spec['port']}"))
            checked.append(Listener(spec, conditions, kinds))
        return checked

    def check_certificates(self, key: tuple[str, str], spec: Obj) -> tuple[str, str] | None:
        """(reason, message) when a certificateRef cannot be used; else the files."""
        refs = (spec.get("tls") or {}).get("certificateRefs") or []
        if (spec.get("tls") or {}).get("mode", "Terminate") != "Terminate":
            return ("InvalidCertificateRef", "only TLS mode Terminate is supported")
        if not refs:
            return ("InvalidCertificateRef", "an HTTPS listener needs a certificateRef")
        for ref in refs:
            namespace = ref.get("namespace") or key[0]
            if (ref.get("group") or "") != "" or ref.get("kind", "Secret") != "Secret":
                return ("InvalidCertificateRef", "a certificateRef must name a Secret")
            if namespace != key[0] and not granted(self.world.grants, "Gateway", key[0], "",
                                                   "Secret", namespace, ref["name"]):
                return ("RefNotPermitted", f"no ReferenceGrant in {namespace} allows "
                        f"Secret {ref['name']}")
            secret = self.world.secrets.get((namespace, ref["name"]))
            data = (secret or {}).get("data") or {}
            if secret is None or "tls.crt" not in data or "tls.key" not in data:
                return ("InvalidCertificateRef",
                        f"Secret {namespace}/{ref['name']} is missing or not a TLS pair")
            if not tls_pair_parses(data["tls.crt"], data["tls.key"]):
                return ("InvalidCertificateRef",
                        f"Secret {namespace}/{ref['name']} does not hold a PEM certificate "
                        "and key")
        return None

    def listener_certificates(self, key: tuple[str, str], spec: Obj) -> list[Certificate]:
        certificates = []
        for ref in (spec.get("tls") or {}).get("certificateRefs") or []:
            namespace = ref.get("namespace") or key[0]
            data = self.world.secrets[(namespace, ref["name"])]["data"]
            stem = f"gateway_{namespace}_{ref['name']}"
            self.plan.files[f"{stem}.crt"] = decode(data["tls.crt"])
            self.plan.files[f"{stem}.key"] = decode(data["tls.key"])
            certificates.append(Certificate(spec.get("hostname") or "", f"{stem}.crt",
                                            f"{stem}.key"))
        return certificates

    def namespace_allowed(self, gateway_namespace: str, spec: Obj, route_namespace: str
                          ) -> bool:
        allowed = ((spec.get("allowedRoutes") or {}).get("namespaces") or {})
        source = allowed.get("from", "Same")
        if source == "All":
            return True
        if source == "Same":
            return route_namespace == gateway_namespace
        if source == "Selector":
            namespace = self.world.namespaces.get(route_namespace)
            labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
            try:
                selector = label_selector_from_dict(allowed.get("selector") or {})
            except SelectorError:
                return False
            return namespace is not None and selector.matches(labels)
        return False

    def attach_route(self, key: tuple[str, str], route: Obj, gateways: dict[tuple[str, str], Obj],
                     candidates: dict[int, list[tuple[tuple[Any, ...], Candidate]]]) -> None:
        """Each of the route's parentRefs to our Gateways: attach, and say how it went."""
        spec = route.get("spec") or {}
        generation = route["metadata"].get("generation", 1)
        parents = []
        resolved = self.resolve_backends(key, spec)
        dropped = invalid_rules(spec)
        every_rule_invalid = len(dropped) == len(spec.get("rules") or []) and bool(dropped)
        for ref in spec.get("parentRefs") or []:
            if (ref.get("group") or GROUP) != GROUP or ref.get("kind", "Gateway") != "Gateway":
                continue
            gateway_key = (ref.get("namespace") or key[0], ref["name"])
            if gateway_key not in gateways:
                continue
            accepted, reason, message, attached = self.accept(key, route, ref, gateway_key)
            if accepted and every_rule_invalid:
                accepted, (reason, message) = False, dropped[min(dropped)]
            if accepted:
                for listener, hostnames in attached:
                    listener.attached += 1
                    if not listener.valid:
                        continue
                    self.add_candidates(key, route, gateway_key, listener, hostnames,
                                        resolved, candidates, set(dropped))
            refs_ok, refs_reason, refs_message = resolved.status
            conditions = [
                condition("Accepted", accepted, reason, message, generation, self.world.now),
                condition("ResolvedRefs", refs_ok, refs_reason, refs_message, generation,
                          self.world.now)]
            if accepted and dropped:
                conditions.append(condition(
                    "PartiallyInvalid", True, "UnsupportedValue", "Dropped Rule(s): " + "; ".join(
                        f"rules[{index}] ({why})" for index, (_, why) in sorted(dropped.items())),
                    generation, self.world.now))
            parents.append({"parentRef": ref, "controllerName": CONTROLLER_NAME,
                            "conditions": conditions})
        self.plan.route_parents[key] = parents

    def accept(self, key: tuple[str, str], route: Obj, ref: Obj, gateway_key: tuple[str, str]
               ) -> tuple[bool, str, str, list[tuple[Listener, list[str]]]]:
        """Whether the parentRef attaches, why not, and to which listeners (with the
        hostnames it serves on each)."""
        listeners = [listener for listener in self.listeners[gateway_key]
                     if ref.get("sectionName") in (None, listener.spec["name"])
                     and ref.get("port") in (None, listener.spec["port"])]
        if not listeners:
            return (False, "NoMatchingParent", "no listener matches the parentRef", [])
        if gateway_key in self.not_accepted:
            return (False, "NoMatchingParent", "the Gateway is not accepted", [])
        usable = [listener for listener in listeners if listener.accepted
                  and any(kind["kind"] == "HTTPRoute" for kind in listener.kinds)]
        allowed = [listener for listener in usable
                   if self.namespace_allowed(gateway_key[0], listener.spec, key[0])]
        if not allowed:
            return (False, "NotAllowedByListeners",
                    "no listener allows routes of this kind from this namespace", [])
        route_hostnames = (route.get("spec") or {}).get("hostnames") or []
        attached = [(listener, intersect(listener.spec.get("hostname"), route_hostnames))
                    for listener in allowed]
        attached = [(listener, hostnames) for listener, hostnames in attached if hostnames]
        if not attached:
            return (False, "NoMatchingListenerHostname",
                    "no listener hostname intersects the route's hostnames", [])
        return (True, "Accepted", "attached", attached)

    def resolve_backends(self, key: tuple[str, str], spec: Obj) -> Resolved:
        """Every backendRef (and RequestMirror's): a Service's ClusterIP:port, or None
        (answered with 500)."""
        resolved = Resolved()
        for rule in spec.get("rules") or []:
            for ref in [*(rule.get("backendRefs") or []), *mirror_refs(rule)]:
                resolved.add(ref, self.resolve(key, ref))
        return resolved

    def resolve(self, key: tuple[str, str], ref: Obj) -> tuple[str | None, str, str]:
        """(ClusterIP:port or None, reason, message) for one backendRef."""
        namespace = ref.get("namespace") or key[0]
        group, kind = ref.get("group") or "", ref.get("kind", "Service")
        if group != "" or kind != "Service":
            return (None, "InvalidKind", f"backendRef kind {group or 'core'}/{kind} is not "
                    "supported")
        if namespace != key[0] and not granted(self.world.grants, "HTTPRoute", key[0], "",
                                               "Service", namespace, ref["name"]):
            return (None, "RefNotPermitted",
                    f"no ReferenceGrant in {namespace} allows Service {ref['name']}")
        service = self.world.services.get((namespace, ref["name"]))
        if service is None:
            return (None, "BackendNotFound", f"Service {namespace}/{ref['name']} not found")
        cluster_ip = (service.get("spec") or {}).get("clusterIP")
        port = ref.get("port")
        service_port = next((item for item in (service.get("spec") or {}).get("ports") or []
                             if item.get("port") == port), None)
        if port is None or service_port is None or not cluster_ip:
            return (None, "BackendNotFound",
                    f"Service {namespace}/{ref['name']} has no port {port}")
        if cluster_ip == "None":
            servers = self.endpoints(namespace, ref["name"], service_port)
            return (",".join(servers) or None, "ResolvedRefs", "")
        return (f"{cluster_ip}:{port}", "ResolvedRefs", "")

    def endpoints(self, namespace: str, service: str, service_port: Obj) -> list[str]:
        """A headless Service's ready endpoints on the port: ip:port (IPv6 in brackets)."""
        servers = []
        for endpoint_slice in self.world.endpoint_slices.get((namespace, service), []):
            ports = endpoint_slice.get("ports") or []
            number = next((item.get("port") for item in ports
                           if item.get("name", "") == service_port.get("name", "")), None)
            if number is None:
                continue
            for endpoint in endpoint_slice.get("endpoints") or []:
                if (endpoint.get("conditions") or {}).get("ready") is False:
                    continue
                for address in endpoint.get("addresses") or []:
                    host = f"[{address}]" if ":" in address else address
                    servers.append(f"{host}:{number}")
        return sorted(set(servers))

    def add_candidates(self, key: tuple[str, str], route: Obj, gateway_key: tuple[str, str],
                       listener: Listener, hostnames: list[str], resolved: Resolved,
                       candidates: dict[int, list[tuple[tuple[Any, ...], Candidate]]],
                       dropped: set[int]) -> None:
        port = self.nginx_port(gateway_key, listener.spec["port"])
        entries = candidates.setdefault(port.port, [])
        for rule_index, rule in enumerate((route.get("spec") or {}).get("rules") or []):
            if rule_index in dropped:
                continue
            matches = rule.get("matches") or [{"path": {"type": "PathPrefix", "value": "/"}}]
            for match_index, raw in enumerate(matches):
                match = to_match(raw)
                action = to_action(rule, match, resolved)
                for hostname in hostnames:
                    order = (*match_precedence(match), route_order((key, route)),
                             rule_index, match_index)
                    entries.append((order, Candidate(hostname, match, action,
                                                     listener.spec.get("hostname") or "")))

    def gateway_status(self, key: tuple[str, str], gateway: Obj) -> Obj:
        generation = gateway["metadata"].get("generation", 1)
        now = self.world.now
        old = gateway.get("status") or {}
        old_listeners = {item.get("name"): item for item in old.get("listeners") or []}
        listeners = []
        usable = key not in self.not_accepted
        programmed, address = self.gateway_programmed(key, generation)
        for listener in self.listeners[key]:
            if usable and listener.valid and listener.spec["protocol"] in HTTP_PROTOCOLS:
                port = self.nginx_port(key, listener.spec["port"])
                if (listener.spec.get("hostname") or "") not in port.listeners:
                    port.listeners.append(listener.spec.get("hostname") or "")
                if listener.spec["protocol"] == "HTTPS":
                    for certificate in self.listener_certificates(key, listener.spec):
                        if certificate not in port.certificates:
                            port.certificates.append(certificate)
            given = {kind for kind, *_ in listener.conditions}
            conditions = [condition(kind, ok, reason, message, generation, now)
                          for kind, ok, reason, message in listener.conditions]
            if "Accepted" not in given:
                conditions.append(condition("Accepted", True, "Accepted", "", generation, now))
            if "ResolvedRefs" not in given:
                conditions.append(condition("ResolvedRefs", True, "ResolvedRefs", "",
                                            generation, now))
            if "Conflicted" not in given:
                conditions.append(condition("Conflicted", False, "NoConflicts", "",
                                            generation, now))
            ready = usable and listener.valid and address is not None
            conditions.append(condition("Programmed", ready,
                                        "Programmed" if ready else "Invalid"
                                        if not (usable and listener.valid) else "Pending", "",
                                        generation, now))
            previous = (old_listeners.get(listener.spec["name"]) or {}).get("conditions") or []
            listeners.append({"name": listener.spec["name"], "supportedKinds": listener.kinds,
                              "attachedRoutes": listener.attached,
                              "conditions": merge_conditions(previous, conditions)})
        valid = [listener for listener in self.listeners[key] if listener.valid]
        if not self.listeners[key] or valid:
            accepted = condition("Accepted", True, "Accepted" if len(valid) == len(
                self.listeners[key]) else "ListenersNotValid", "", generation, now)
        else:
            accepted = condition("Accepted", False, "ListenersNotValid",
                                 "no listener is valid", generation, now)
        if not usable:
            accepted = condition("Accepted", False, *self.not_accepted[key], generation, now)
            programmed = condition("Programmed", False, "Invalid", "the Gateway is not "
                                   "accepted", generation, now)
            address = None
        if key in self.unusable_address:
            self.plan.gateway_ports.pop(key, None)  # no Service: no address it did not ask for
        status: Obj = {"conditions": merge_conditions(old.get("conditions") or [],
                                                      [accepted, programmed]),
                       "listeners": listeners}
        if address:
            status["addresses"] = [{"type": "IPAddress", "value": address}]
        return status


    def gateway_programmed(self, key: tuple[str, str], generation: int
                           ) -> tuple[Obj, str | None]:
        """The Gateway's Programmed condition and its address: the one its LoadBalancer
        Service got (the one spec.addresses asks for, if any), or why there is none: an
        address it cannot have (AddressNotUsable), none left (NoResources), or not yet."""
        now = self.world.now
        address = self.world.addresses.get(key)
        wanted = self.plan.gateway_addresses.get(key)
        problem = self.world.load_balancer_problems.get(key)
        if key in self.unusable_address:
            return condition("Programmed", False, "AddressNotUsable",
                             self.unusable_address[key], generation, now), None
        if address is not None and wanted in (None, address):
            return condition("Programmed", True, "Programmed", "", generation, now), address
        if problem is not None and wanted is not None and wanted in problem:
            return condition("Programmed", False, "AddressNotUsable", problem, generation,
                             now), None
        if problem is not None and wanted is None:
            return condition("Programmed", False, "NoResources", problem, generation,
                             now), None
        return condition("Programmed", False, "AddressNotAssigned",
                         f"waiting for the LoadBalancer's address{' ' + wanted if wanted else ''}",
                         generation, now), None


class Resolved:
    """The backendRefs of one route, resolved; the first failure is the route's reason."""

    def __init__(self) -> None:
        self.by_ref: dict[str, str | None] = {}
        self.status: tuple[bool, str, str] = (True, "ResolvedRefs", "all references resolved")

    @staticmethod
    def ref_key(ref: Obj) -> str:
        return repr(sorted((name, value) for name, value in ref.items()
                           if name not in ("weight", "filters")))

    def add(self, ref: Obj, outcome: tuple[str | None, str, str]) -> None:
        address, reason, message = outcome
        self.by_ref[self.ref_key(ref)] = address
        if reason != "ResolvedRefs" and self.status[0]:
            self.status = (False, reason, message)

    def address(self, ref: Obj) -> str | None:
        return self.by_ref.get(self.ref_key(ref))


def decode(value: str) -> bytes:
    return base64.b64decode(value)


def tls_pair_parses(cert: str, key: str) -> bool:
    """Whether a Secret's tls.crt and tls.key are a PEM certificate and private key."""
    try:
        x509.load_pem_x509_certificate(decode(cert))
        serialization.load_pem_private_key(decode(key), password=None)
    except (ValueError, TypeError):
        return False
    return True


def overlapping_tls(spec: Obj, specs: list[Obj]) -> list[str]:
    """The other HTTPS listeners on the port whose hostname overlaps this one's (one covers
    the other; no hostname covers all). The same hostname is a HostnameConflict instead."""
    mine = spec.get("hostname") or ""
    found = []
    for other in specs:
        theirs = other.get("hostname") or ""
        if (other is spec or other["protocol"] != "HTTPS" or other["port"] != spec["port"]
                or theirs == mine):
            continue
        if not mine or not theirs or hostname_matches(mine, theirs) or hostname_matches(
                theirs, mine):
            found.append(other["name"])
    return found


def route_kinds(spec: Obj) -> tuple[list[Obj], bool]:
    """The kinds a listener takes (HTTPRoute), and whether every kind it names is one."""
    named = (spec.get("allowedRoutes") or {}).get("kinds")
    if not named:
        return [dict(ROUTE_KIND)], True
    kinds = [dict(ROUTE_KIND) for kind in named
             if (kind.get("group") or GROUP) == GROUP and kind.get("kind") == "HTTPRoute"]
    return kinds[:1], len(kinds) == len(named)


def route_order(item: tuple[tuple[str, str], Obj]) -> tuple[str, str]:
    """The oldest route first, then by namespace/name (the spec's tie-breakers)."""
    key, route = item
    return (route["metadata"].get("creationTimestamp", ""), f"{key[0]}/{key[1]}")


def match_precedence(match: Match) -> tuple[int, int, int, int, int]:
    """Exact paths, longer prefixes, a method, more headers, more query params first."""
    kind = {"Exact": 0, "PathPrefix": 1}.get(match.path_type, 2)
    return (kind, -len(match.path), 0 if match.method else 1, -len(match.headers),
            -len(match.queries))


def to_match(raw: Obj) -> Match:
    path = raw.get("path") or {}
    return Match(
        path_type=path.get("type", "PathPrefix"), path=path.get("value", "/"),
        method=raw.get("method"),
        headers=tuple((item.get("type", "Exact"), item["name"], item["value"])
                      for item in raw.get("headers") or []),
        queries=tuple((item.get("type", "Exact"), item["name"], item["value"])
                      for item in raw.get("queryParams") or []))


def header_filter(raw: Obj | None) -> HeaderFilter | None:
    if raw is None:
        return None
    return HeaderFilter(set=tuple((item["name"], item["value"]) for item in raw.get("set") or []),
                        add=tuple((item["name"], item["value"]) for item in raw.get("add") or []),
                        remove=tuple(raw.get("remove") or []))


def path_modifier(raw: Obj | None, match: Match) -> tuple[str | None, tuple[str, str] | None]:
    """(ReplaceFullPath, (matched prefix, ReplacePrefixMatch))."""
    if not raw:
        return (None, None)
    if raw.get("type") == "ReplaceFullPath":
        return (raw.get("replaceFullPath", "/"), None)
    return (None, (match.path, raw.get("replacePrefixMatch", "/")))


def to_action(rule: Obj, match: Match, resolved: Resolved) -> Action:
    """A rule's filters and backends, for one of its matches (a prefix rewrite needs it)."""
    filters = {item["type"]: item for item in rule.get("filters") or []}
    redirect = None
    if "RequestRedirect" in filters:
        raw = filters["RequestRedirect"]["requestRedirect"]
        path, prefix = path_modifier(raw.get("path"), match)
        redirect = Redirect(scheme=raw.get("scheme"), hostname=raw.get("hostname"),
                            port=raw.get("port"), path=path, prefix=prefix,
                            status_code=raw.get("statusCode", 302))
    rewrite = None
    if "URLRewrite" in filters:
        raw = filters["URLRewrite"]["urlRewrite"]
        path, prefix = path_modifier(raw.get("path"), match)
        rewrite = Rewrite(hostname=raw.get("hostname"), path=path, prefix=prefix)
    backends = tuple(Backend(resolved.address(ref), ref.get("weight", 1))
                     for ref in rule.get("backendRefs") or [])
    mirrors = tuple(address for address in map(resolved.address, mirror_refs(rule))
                    if address is not None)
    return Action(
        backends=backends,
        request_headers=header_filter((filters.get("RequestHeaderModifier") or {})
                                      .get("requestHeaderModifier")),
        response_headers=header_filter((filters.get("ResponseHeaderModifier") or {})
                                       .get("responseHeaderModifier")),
        redirect=redirect, rewrite=rewrite, mirrors=mirrors)


def mirror_refs(rule: Obj) -> list[Obj]:
    """The backendRefs of a rule's RequestMirror filters."""
    return [item["requestMirror"]["backendRef"] for item in rule.get("filters") or []
            if item.get("type") == "RequestMirror" and item.get("requestMirror")]


def invalid_rules(spec: Obj) -> dict[int, tuple[str, str]]:
    """The rules this data plane cannot serve, by index: (reason, message). A filter it
    does not have is UnsupportedValue, two it cannot combine IncompatibleFilters. A route
    with some of them drops those (PartiallyInvalid), with only those is not accepted."""
    invalid = {}
    for index, rule in enumerate(spec.get("rules") or []):
        kinds = [item.get("type") for item in rule.get("filters") or []]
        unsupported = next((kind for kind in kinds if kind not in SUPPORTED_FILTERS), None)
        pair = next(((first, second, why) for first, second, why in INCOMPATIBLE_FILTERS
                     if first in kinds and second in kinds), None)
        if unsupported is not None:
            invalid[index] = ("UnsupportedValue", f"filter {unsupported} is not supported")
        elif any(ref.get("filters") for ref in rule.get("backendRefs") or []):
            invalid[index] = ("UnsupportedValue", "filters on a backendRef are not supported")
        elif pair is not None:
            invalid[index] = ("IncompatibleFilters", f"filters {pair[0]} and {pair[1]} "
                              f"cannot be combined: {pair[2]}")
    return invalid


def compute(world: World) -> Plan:
    """The plan of one sync."""
    return GatewayAPI(world).compute()

