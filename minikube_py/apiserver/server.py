"""The API server: an aiohttp application in front of the generic store and etcd.

    HTTP(S) request
      -> the handler chain (handler_chain; endpoints/filters.py), outermost first:
           with_audit_id                the request's id, Audit-Id on the answer
           with_request_info            verb, group, resource, namespace, name
                                        (endpoints/requestinfo.py)
           with_tracing                 a span per write (endpoints/tracing.py)
           with_http_logging            a JSON log line
           with_request_metrics         apiserver_request_total, _duration_seconds
           with_status_errors           errors raised further in, as Status responses
           with_authentication          who asks (auth/authentication.py; 401)
           with_impersonation           whom they act as (auth/impersonation.py; 403
                                        unless allowed)
           with_audit                   RequestReceived ... ResponseComplete, as the
                                        policy says (auth/audit.py)
           with_status_errors           (again, so that audit sees them answered)
           with_authorization           may they (auth/authorization.py: AlwaysAllow,
                                        Node, RBAC; 403)
           with_priority_and_fairness   API Priority and Fairness: seats per priority
                                        level, fair queues, 429 (flowcontrol/); or
           with_max_inflight_limit      429 past the in-flight limits (APF disabled)
           with_audit_response_started  ResponseStarted, for long-running requests
      -> _endpoint, which routes by path (_route):
           non-resource paths: /healthz /livez /readyz /metrics /version, discovery,
           OpenAPI (endpoints/)
           resource paths: endpoints/handlers.py -> registry/store.py -> storage/etcd.py
           (reviews: answered by the authorizer, registry/reviews.py)

`APIServer` owns everything it starts (etcd client, one watch cache per resource, the
compaction loop, the HTTP site) and stops all of it in `stop()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import ssl
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from minikube_py.api import errors
from minikube_py.api.resources import RESOURCES
from minikube_py.apiserver.apiextensions.controller import CustomResourceDefinitions
from minikube_py.apiserver.apiextensions.stores import CustomResourceDefinitionStore
from minikube_py.apiserver.auth.admission.chain import (
    DEFAULT_PLUGINS,
    AdmissionSources,
    build_chain,
)
from minikube_py.apiserver.auth.audit import AuditLog, load_policy
from minikube_py.apiserver.auth.authentication import Authenticator, UserInfo, read_token_file
from minikube_py.apiserver.auth.authorization import (
    AlwaysAllow,
    Authorizer,
    RBACAuthorizer,
)
from minikube_py.apiserver.auth.bootstrappolicy.ensure import ensure_rbac_policy
from minikube_py.apiserver.auth.bootstraptoken import BootstrapTokenAuthenticator
from minikube_py.apiserver.auth.nodeauthorizer import NodeAuthorizer, UnionAuthorizer
from minikube_py.apiserver.auth.serviceaccount_tokens import (
    DEFAULT_ISSUER,
    Binding,
    TokenIssuer,
    load_public_key,
    load_signing_key,
    serve_token_request,
)
from minikube_py.apiserver.connect.aggregation import Aggregator
from minikube_py.apiserver.connect.apiservices import APIServiceAvailability
from minikube_py.apiserver.connect.kubeletclient import KubeletClient
from minikube_py.apiserver.connect.proxy import proxy_transport
from minikube_py.apiserver.endpoints import discovery, filters, health, openapi
from minikube_py.apiserver.endpoints.handlers import ResourceHandler
from minikube_py.apiserver.endpoints.metrics import APIServerMetrics, InstrumentedEtcd
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.endpoints.responses import json_response, no_such_resource
from minikube_py.apiserver.features import CONSISTENT_LIST_FROM_CACHE, DEFAULTS
from minikube_py.apiserver.flowcontrol.apf_controller import APFController, ConcurrencyLimits
from minikube_py.apiserver.flowcontrol.ensurer import ConfigProducer
from minikube_py.apiserver.registry.allocators import (
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_CIDR,
    IPAllocator,
    PortAllocator,
)
from minikube_py.apiserver.registry.lease_reconciler import LeaseEndpointReconciler
from minikube_py.apiserver.registry.reviews import REVIEWS, serve_review
from minikube_py.apiserver.registry.service_storage import (
    AllocationRepair,
    ServiceAllocators,
    ServiceStore,
    ensure_kubernetes_service,
)
from minikube_py.apiserver.registry.store import Store
from minikube_py.apiserver.registry.strategies import strategy_for
from minikube_py.apiserver.storage.encryption import load_encryption_config
from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError, EtcdTLS
from minikube_py.apiserver.storage.watchcache import WatchCache, decode
from minikube_py.client.logs import kv
from minikube_py.lifecycle import Component
from minikube_py.security.pki import server_ssl_context
from minikube_py.tracing.setup import close_tracer, read_tracing_config, tracer_for
from minikube_py.tracing.tracer import Tracer

FORCE_LIVE_LOOKUP_SECONDS = 30.0
# How long a stopping server waits for the requests in flight (a log stream, an exec)
# before it cuts them: SIGTERM stops it within 2 s (upstream waits up to its request
# timeout, 60 s, for requests that are not long-running).
SHUTDOWN_TIMEOUT = 1.0
ENDPOINT_REMOVAL_TIMEOUT = 1.0  # seconds a stopping server tries to drop its master lease
log = logging.getLogger("minikube_py.apiserver")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
GIT_VERSION = "v1.37.0-minikube-py"
RBAC_PLURALS = ("clusterroles", "roles", "clusterrolebindings", "rolebindings")


@dataclass
class APIServerConfig:
    etcd_servers: list[str]
    bind_address: str = "127.0.0.1"
    port: int = 6443
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    # --enable-priority-and-fairness: APF (flowcontrol/) instead of the two in-flight
    # limits; its seats are their sum
    enable_priority_and_fairness: bool = True
    compaction_interval: float = 300.0  # seconds; 0 disables, as upstream
    log_requests: bool = True
    service_cluster_ip_range: str = DEFAULT_SERVICE_CIDR
    service_node_port_range: str = DEFAULT_NODE_PORT_RANGE
    # TLS, and who may do what (plain HTTP and AlwaysAllow when unset)
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    token_auth_file: str = ""
    enable_bootstrap_token_auth: bool = False  # bootstrap tokens (kube-system Secrets)
    anonymous_auth: bool = True
    authorization_mode: str = "AlwaysAllow"  # or Node,RBAC (comma-separated, in order)
    admission_plugins: tuple[str, ...] = DEFAULT_PLUGINS
    # How it reaches kubelets: https with this client certificate (plain http without)
    kubelet_client_certificate: str = ""
    kubelet_client_key: str = ""
    kubelet_certificate_authority: str = ""
    # What it shows the https backends of pods/proxy and services/proxy (none when unset)
    proxy_client_cert_file: str = ""
    proxy_client_key_file: str = ""
    # The address pods reach this server at (the kubernetes Service's endpoint); by
    # default the bind address, unless that is loopback or every address
    advertise_address: str = ""
    encryption_provider_config: str = ""  # an EncryptionConfiguration (Secrets at rest)
    # etcd over TLS: the CA its certificate is checked against, this server's client
    # certificate (https etcd servers need all three)
    etcd_cafile: str = ""
    etcd_certfile: str = ""
    etcd_keyfile: str = ""
    audit_policy_file: str = ""
    audit_log_path: str = ""
    tracing_config_file: str = ""  # a TracingConfiguration: where spans go (tracing/setup.py)
    # ServiceAccount tokens: the key that signs them, the keys that check them
    service_account_signing_key_file: str = ""
    service_account_key_files: tuple[str, ...] = ()
    service_account_issuer: str = DEFAULT_ISSUER
    api_audiences: tuple[str, ...] = ()
    # --shutdown-delay-duration: how long a stopping server goes on serving, /readyz
    # failing, before it stops listening (seconds; 0, upstream's default: at once)
    shutdown_delay: float = 0.0
    # --endpoint-reconciler-type: "lease" (the kubernetes Service's endpoints are the API
    # servers whose master lease is alive, lease_reconciler.py) or "none"
    endpoint_reconciler_type: str = "lease"
    # --feature-gates: every gate features.py knows, on or off
    feature_gates: dict[str, bool] = field(default_factory=lambda: dict(DEFAULTS))


class APIServer(Component):
    """One API server: `await run()` in its process, or `async with APIServer(config):`."""

    def __init__(self, config: APIServerConfig) -> None:
        self.config = config
        self.metrics = APIServerMetrics()
        transformer = (load_encryption_config(Path(config.encryption_provider_config))
                       if config.encryption_provider_config else None)
        etcd_tls = (EtcdTLS(config.etcd_cafile, config.etcd_certfile, config.etcd_keyfile)
                    if config.etcd_cafile else None)
        self.etcd_client = EtcdClient(config.etcd_servers, transformer=transformer,
                                      tls=etcd_tls)
        self.etcd: Any = InstrumentedEtcd(self.etcd_client, self.metrics)
        self.caches: dict[str, WatchCache] = {}
        self.stores: dict[tuple[str, str, str], Store] = {}
        self.handler: ResourceHandler
        self._tasks: list[asyncio.Task[None]] = []
        self._system_namespaces = asyncio.Event()
        self._bootstrap_policy = asyncio.Event()
        self._listening = asyncio.Event()
        self._runner: web.ServerRunner | None = None
        # NamespaceLifecycle's force-live-lookup: namespaces deleted through this server
        # in the last seconds are read from etcd, not from the watch cache, which may not
        # show them Terminating yet (name -> until when, monotonic).
        self._recently_deleted_namespaces: dict[str, float] = {}
        self.port = config.port
        self.service_allocators = ServiceAllocators(
            IPAllocator(self.etcd, config.service_cluster_ip_range),
            PortAllocator(self.etcd, config.service_node_port_range),
        )
        self.token_issuer = _token_issuer(config)
        self._build_stores()
        self.endpoint_reconciler = self._endpoint_reconciler()
        self._rbac_caches = tuple(self.caches[f"/registry/{plural}/"] for plural in RBAC_PLURALS)
        self.authenticator = Authenticator(
            read_token_file(Path(config.token_auth_file)) if config.token_auth_file else None,
            anonymous=config.anonymous_auth,
            service_account_tokens=(self._service_account_user if self.token_issuer
                                    else None),
            bootstrap_tokens=(BootstrapTokenAuthenticator(self._token_secret).authenticate
                              if config.enable_bootstrap_token_auth else None))
        self.authorizer = self._authorizer(config.authorization_mode)
        self._build_admission()
        self.tracer = (tracer_for("kube-apiserver",
                                  *read_tracing_config(Path(config.tracing_config_file)))
                       if config.tracing_config_file else Tracer("kube-apiserver"))
        self.audit: AuditLog | None = None
        if config.audit_policy_file and config.audit_log_path:
            self.audit = AuditLog(load_policy(Path(config.audit_policy_file)),
                                  open(config.audit_log_path, "ab"))  # noqa: SIM115
        # Fixed paths (GET only); OpenAPI v3 documents and resources are routed by prefix.
        # Upstream serves /version, /api and each group's discovery as go-restful web
        # services, which answer their root with a trailing slash too; /apis/ is the
        # aggregator's plain group list. /healthz/, /openapi/v2/ and /metrics/ are 404.
        self._routes = {
            "/healthz": self._healthz,
            "/livez": self._healthz,
            "/readyz": self._readyz,
            "/metrics": self._metrics,
            "/version": self._version,
            "/version/": self._version,
            "/api": self._api,
            "/api/": self._api,
            "/apis": self._apis,
            "/apis/": self._group_list,
            "/openapi/v2": self._openapi_v2,
            "/openapi/v3": self._openapi_v3_index,
            "/debug/api_priority_and_fairness/dump_priority_levels":
                self._dump_priority_levels,
            "/debug/api_priority_and_fairness/dump_queues": self._dump_queues,
        }

    # -- wiring ----------------------------------------------------------------------------

    def _build_stores(self) -> None:
        self.aggregator = Aggregator()
        for resource in RESOURCES:
            prefix = resource.etcd_prefix
            if prefix not in self.caches:
                self.caches[prefix] = self._new_cache(
                    prefix, resource.storage_plural or resource.plural, resource.group)
            args = (resource, strategy_for(resource), self.etcd, self.caches[prefix])
            if (resource.group, resource.plural) == ("", "services"):
                self.services = ServiceStore(*args, self.service_allocators)
                self.stores[(resource.group, resource.version, resource.plural)] = self.services
            elif resource.group == "apiextensions.k8s.io":
                self.stores[(resource.group, resource.version, resource.plural)] = (
                    CustomResourceDefinitionStore(*args))
            else:
                self.stores[(resource.group, resource.version, resource.plural)] = Store(*args)
        # each Established definition adds its resources' stores to self.stores
        self.custom_resources = CustomResourceDefinitions(
            self.stores[("apiextensions.k8s.io", "v1", "customresourcedefinitions")],
            self.stores, self.caches, lambda: self.admission, self._new_cache)
        flowcontrol = "flowcontrol.apiserver.k8s.io"
        self.config_producer = ConfigProducer(
            self.stores[(flowcontrol, "v1", "flowschemas")],
            self.stores[(flowcontrol, "v1", "prioritylevelconfigurations")],
            self.caches["/registry/flowschemas/"],
            self.caches["/registry/prioritylevelconfigurations/"])
        self.apf = APFController(
            self.config.max_requests_inflight + self.config.max_mutating_requests_inflight,
            self.caches["/registry/flowschemas/"],
            self.caches["/registry/prioritylevelconfigurations/"], self._note_apf_limits)
        self.handler = ResourceHandler(self.stores, KubeletClient.from_files(
            self.config.kubelet_client_certificate, self.config.kubelet_client_key,
            self.config.kubelet_certificate_authority), proxy_transport(
            self.config.proxy_client_cert_file, self.config.proxy_client_key_file))

    def _build_admission(self) -> None:
        """The admission chain every store runs (it reads the caches and the authorizer)."""
        self.admission = build_chain(AdmissionSources(
            namespace=self._namespace_exists, cached=self._cached_objects, stores=self.stores,
            authorizer=self.authorizer, signs_tokens=self.token_issuer is not None),
            self.config.admission_plugins)
        for store in self.stores.values():
            store.admission = self.admission

    def _service_account_user(self, token: str) -> UserInfo:
        """The user a ServiceAccount token names, if its account and pod still exist."""
        assert self.token_issuer is not None

        def exists(binding: Binding) -> bool:
            account = self.caches["/registry/serviceaccounts/"].get(
                f"/registry/serviceaccounts/{binding.namespace}/{binding.name}")
            if account is None or account["metadata"].get("uid") != binding.uid:
                return False
            if not binding.pod_name:
                return True
            pod = self.caches["/registry/pods/"].get(
                f"/registry/pods/{binding.namespace}/{binding.pod_name}")
            return pod is not None and pod["metadata"].get("uid") == binding.pod_uid

        return self.token_issuer.verify(token, exists)[0]

    def _token_secret(self, name: str) -> dict[str, Any] | None:
        """A bootstrap token's Secret in kube-system, from the watch cache."""
        return self.caches["/registry/secrets/"].get(f"/registry/secrets/kube-system/{name}")

    def _authorizer(self, modes: str) -> Authorizer:
        """--authorization-mode: AlwaysAllow, or Node and/or RBAC, asked in that order."""
        chosen: list[Authorizer] = []
        for mode in modes.split(","):
            if mode == "Node":
                pods = self.caches["/registry/pods/"]
                claims = self.caches["/registry/persistentvolumeclaims/"]
                chosen.append(NodeAuthorizer(
                    pods.list, claims.list,
                    lambda pods=pods, claims=claims: pods.changes + claims.changes))
            elif mode == "RBAC":
                chosen.append(RBACAuthorizer(self._rbac_objects, self._rbac_version))
            else:
                chosen.append(AlwaysAllow())
        return chosen[0] if len(chosen) == 1 else UnionAuthorizer(chosen)

    def _cached_objects(self, prefix: str) -> list[dict[str, Any]]:
        """Every object under an etcd prefix (`/registry/limitranges/ns/`), from the
        watch cache: what admission plugins read, as upstream's read informers."""
        plural = prefix.removeprefix("/registry/").split("/", 1)[0]
        return self.caches[f"/registry/{plural}/"].list(prefix.removeprefix(
            f"/registry/{plural}/"))

    def _rbac_objects(self, plural: str) -> list[dict[str, Any]]:
        return self.caches[f"/registry/{plural}/"].list()

    def _rbac_version(self) -> tuple[int, ...]:
        first, second, third, fourth = self._rbac_caches  # per request: no generator
        return first.changes, second.changes, third.changes, fourth.changes

    def _new_cache(self, prefix: str, plural: str, group: str) -> WatchCache:
        """The watch cache of one etcd prefix, counted in the server's metrics."""
        events, event_labels = self.metrics.watch_events, (plural,)
        resource = f"{plural}.{group}" if group else plural
        reads = self.metrics.consistent_reads

        def count_read(success: bool, fallback: bool) -> None:
            reads.inc((str(fallback).lower(), resource, str(success).lower()))

        return WatchCache(
            self.etcd, prefix,
            on_event=lambda _event: events.inc(event_labels),
            consistent_list_from_cache=self.config.feature_gates[CONSISTENT_LIST_FROM_CACHE],
            on_consistent_read=count_read)

    async def _namespace_exists(self, name: str) -> dict[str, Any] | None:
        cache = self.caches["/registry/namespaces/"]
        found = cache.get(f"/registry/namespaces/{name}")
        deleted_until = self._recently_deleted_namespaces.get(name)
        if deleted_until is not None and deleted_until < time.monotonic():
            del self._recently_deleted_namespaces[name]
            deleted_until = None
        if found is not None and deleted_until is None:
            return found
        kv = await self.etcd.get(f"/registry/namespaces/{name}".encode())
        return decode(kv) if kv is not None else None

    def build_server(self) -> web.Server:
        """aiohttp's low-level server with one handler, the handler chain, whose endpoint
        routes by path.

        The API server needs no more than a dict of fixed paths and one catch-all for
        resources, so it does without web.Application's router and middleware chain,
        which cost about a tenth of a GET's CPU; its filters are nested closures.
        """
        return web.Server(self.handler_chain(), request_factory=self._make_request,
                          handler_cancellation=True, access_log=None)

    def _make_request(self, message: Any, payload: Any, protocol: Any, writer: Any,
                      task: asyncio.Task[None]) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task,
                               asyncio.get_running_loop(), client_max_size=filters.MAX_BODY_BYTES)

    def _route(self, request: web.BaseRequest) -> Any:
        """The endpoint for request: a fixed path (GET only), OpenAPI v3, or a resource."""
        path = request.path
        endpoint = self._routes.get(path)
        if endpoint is not None:
            return endpoint if request.method in ("GET", "HEAD") else self._method_not_allowed
        if path.startswith("/openapi/v3/") and request.method in ("GET", "HEAD"):
            return self._openapi_v3
        if path.startswith(("/healthz/", "/livez/", "/readyz/")) and request.method in (
                "GET", "HEAD"):
            return self._readyz if path.startswith("/readyz/") else self._healthz
        return self._resource

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until cancelled: watch caches, the HTTP listener, then the bootstrap
        (system namespaces, the `kubernetes` Service)."""
        try:
            await self._listen()
            await asyncio.Event().wait()
        finally:
            await self._close()

    async def wait_started(self) -> None:
        """The listener is bound (self.port is the real port when 0 was asked for)."""
        await self._listening.wait()

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Every watch cache has its first list."""
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(cache.ready.wait() for cache in self.caches.values()))

    async def _listen(self) -> None:
        await self.etcd_client.__aenter__()
        for cache in self.caches.values():
            self._tasks.append(asyncio.create_task(cache.run()))
        self._tasks.append(asyncio.create_task(self.custom_resources.run()))
        if self.config.enable_priority_and_fairness:
            self._tasks.append(asyncio.create_task(self.apf.run()))
        if self.config.compaction_interval > 0:
            self._tasks.append(asyncio.create_task(self._compact_periodically()))
        self._runner = web.ServerRunner(self.build_server(), shutdown_timeout=SHUTDOWN_TIMEOUT)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.bind_address, self.config.port,
                           reuse_address=True, ssl_context=self._ssl_context())
        await site.start()
        if self.config.port == 0:
            server = site._server
            assert server is not None and server.sockets
            self.port = server.sockets[0].getsockname()[1]
        self._tasks.append(asyncio.create_task(self._bootstrap()))
        self._listening.set()

    def _ssl_context(self) -> ssl.SSLContext | None:
        """TLS when a serving certificate is configured (--tls-cert-file)."""
        config = self.config
        if not config.tls_cert_file:
            return None
        return server_ssl_context(Path(config.tls_cert_file), Path(config.tls_private_key_file),
                                  Path(config.client_ca_file) if config.client_ca_file else None)

    async def _close(self) -> None:
        """Graceful termination, in upstream's order (genericapiserver.go's
        [graceful-termination] events):

            ShutdownInitiated        /readyz fails its `shutdown` check; requests are still
                                     served for --shutdown-delay-duration, so that load
                                     balancers take this server out first
            NotAcceptingNewRequest   the listener closes and keep-alive connections close
                                     after their request; every watch ends, as upstream's
                                     handler returns on the server's shutdown signal, so
                                     that clients watch again (elsewhere, or here once
                                     the server is back) from the last version they saw
            InFlightRequestsDrained  the requests still running finish, or are cut after
                                     SHUTDOWN_TIMEOUT seconds
        then the server's own loops, the tracer's last spans and the etcd client stop."""
        self._listening.clear()
        log.info(kv("[graceful-termination] shutdown event", name="ShutdownInitiated"))
        if self.endpoint_reconciler is not None:
            # upstream's pre-shutdown hook: the others need not wait for this lease's TTL
            with contextlib.suppress(TimeoutError, EtcdError, errors.APIError):
                async with asyncio.timeout(ENDPOINT_REMOVAL_TIMEOUT):
                    await self.endpoint_reconciler.remove_endpoints()
        if self._runner is not None:
            if self.config.shutdown_delay > 0:
                await asyncio.sleep(self.config.shutdown_delay)
            for site in list(self._runner.sites):
                await site.stop()
            if self._runner.server is not None:
                self._runner.server.pre_shutdown()
            for cache in self.caches.values():
                cache.end_watches()
            log.info(kv("[graceful-termination] shutdown event", name="NotAcceptingNewRequest"))
            await self._runner.cleanup()
            self._runner = None
            log.info(kv("[graceful-termination] shutdown event",
                        name="InFlightRequestsDrained"))
        if self.audit is not None:
            self.audit.sink.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await close_tracer(self.tracer)
        await self.etcd_client.close()
        log.info(kv("[graceful-termination] apiserver is exiting"))

    async def _bootstrap(self) -> None:
        """Create the system namespaces, as upstream's system-namespaces controller does,
        then the `kubernetes` service; repair service IP and node port allocations."""
        await self.wait_ready(timeout=3600)
        store = self.stores[("", "v1", "namespaces")]
        for name in SYSTEM_NAMESPACES:
            while True:
                try:
                    await store.create("", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": name}})
                    break
                except errors.APIError as err:
                    if err.code == 409:
                        break
                    await asyncio.sleep(1)
        self._system_namespaces.set()
        if "RBAC" in self.config.authorization_mode.split(","):
            await self._ensure_bootstrap_policy()
            self._bootstrap_policy.set()
        repair = AllocationRepair(self.etcd, self.services.resource.etcd_prefix,
                                  self.service_allocators)
        api_services = APIServiceAvailability(
            self.stores[("apiregistration.k8s.io", "v1", "apiservices")], self.services,
            self.stores[("discovery.k8s.io", "v1", "endpointslices")], self.aggregator)
        await asyncio.gather(ensure_kubernetes_service(self.services, self.port),
                             self._reconcile_kubernetes_endpoints(), repair.run(),
                             api_services.run(), self.config_producer.run())

    def _endpoint_reconciler(self) -> LeaseEndpointReconciler | None:
        """The lease reconciler, publishing this server as one of the kubernetes Service's
        endpoints at its --advertise-address, else at the address it listens on when pods
        can reach it (not loopback, not every address); None with
        --endpoint-reconciler-type=none or without such an address."""
        address = self.config.advertise_address or self.config.bind_address
        try:
            usable = not ipaddress.ip_address(address).is_loopback and (
                not ipaddress.ip_address(address).is_unspecified)
        except ValueError:
            usable = False
        if not usable or self.config.endpoint_reconciler_type == "none":
            return None
        return LeaseEndpointReconciler(
            self.etcd_client, self.stores[("", "v1", "endpoints")],
            self.stores[("discovery.k8s.io", "v1", "endpointslices")], address, self.port)

    async def _reconcile_kubernetes_endpoints(self) -> None:
        """Run the lease endpoint reconciler (lease_reconciler.py), if there is one."""
        if self.endpoint_reconciler is not None:
            await self.endpoint_reconciler.run()

    async def _ensure_bootstrap_policy(self) -> None:
        """The default ClusterRoles, Roles and their bindings, each created when missing
        and reconciled when it exists (bootstrappolicy/ensure.py; the Roles' kube-*
        namespaces were created just before)."""
        group = "rbac.authorization.k8s.io"
        await ensure_rbac_policy({plural: self.stores[(group, "v1", plural)] for plural in (
            "clusterroles", "clusterrolebindings", "roles", "rolebindings")})

    async def _compact_periodically(self) -> None:
        """Compact etcd every interval to the revision seen one interval ago (upstream)."""
        previous = 0
        while True:
            await asyncio.sleep(self.config.compaction_interval)
            try:
                current = await self.etcd.current_revision()
                if previous:
                    await self.etcd.compact(previous)
                    log.info(orjson.dumps({"msg": "compacted etcd", "revision": previous}).decode())
                previous = current
            except EtcdError as err:
                log.warning("compaction failed: %s", err)

    # -- every request ---------------------------------------------------------------------

    def handler_chain(self) -> filters.Handler:
        """The filters every request passes, outermost first, around the endpoint (upstream's
        DefaultBuildHandlerChain); nested once, here, not walked per request."""
        config = self.config
        return filters.build_handler_chain(self._endpoint, [
            filters.with_audit_id,
            filters.with_request_info,
            partial(filters.with_tracing, tracer=self.tracer),
            partial(filters.with_http_logging, enabled=config.log_requests),
            partial(filters.with_request_metrics, metrics=self.metrics),
            filters.with_status_errors,  # authentication's refusals and crashes, as Status
            partial(filters.with_authentication, authenticator=self.authenticator),
            partial(filters.with_impersonation, authorizer=self.authorizer),
            partial(filters.with_audit, audit=self.audit),
            filters.with_status_errors,  # every later error, as Status before audit sees it
            partial(filters.with_authorization, authorizer=self.authorizer),
            (partial(filters.with_priority_and_fairness, controller=self.apf,
                     object_count=self._object_count, watch_count=self._watch_count,
                     metrics=self.metrics)
             if config.enable_priority_and_fairness else
             partial(filters.with_max_inflight_limit,
                     max_requests=config.max_requests_inflight,
                     max_mutating=config.max_mutating_requests_inflight,
                     metrics=self.metrics)),
            partial(filters.with_audit_response_started, audit=self.audit),
        ])

    def _note_apf_limits(self, limits: dict[str, ConcurrencyLimits],
                         current: dict[str, int]) -> None:
        """apiserver_flowcontrol_nominal_limit_seats and _current_limit_seats per level."""
        for name, level in limits.items():
            self.metrics.flowcontrol_nominal_limit.labels(name).set(level.nominal)
            self.metrics.flowcontrol_current_limit.labels(name).set(current[name])

    def _object_count(self, info: RequestInfo) -> int:
        """How many objects of the request's resource are stored (APF's LIST estimate)."""
        store = self.stores.get((info.group, info.version, info.resource))
        return len(store.cache.objects) if store is not None else 0

    def _watch_count(self, info: RequestInfo) -> int:
        """How many watches the request's resource has (APF's estimate of a write's
        events; upstream counts only those of its namespace and name, and every
        namespace's)."""
        store = self.stores.get((info.group, info.version, info.resource))
        return len(store.cache.watchers) if store is not None else 0

    async def _endpoint(self, request: web.BaseRequest) -> web.StreamResponse:
        """The end of the chain: the endpoint the path names answers."""
        response = await self._route(request)(request)
        info = request[filters.REQUEST_INFO]
        if (info.verb == "delete" and info.resource == "namespaces" and not info.subresource
                and response.status < 300):
            self._recently_deleted_namespaces[info.name] = (
                time.monotonic() + FORCE_LIVE_LOOKUP_SECONDS)
        return response

    # -- endpoints -------------------------------------------------------------------------

    async def _method_not_allowed(self, request: web.Request) -> web.Response:
        raise errors.method_not_allowed()

    async def _healthz(self, request: web.Request) -> web.Response:
        kind = "healthz" if request.path.startswith("/healthz") else "livez"
        return await health.serve(kind, self._health_checks(ready=False), request)

    async def _readyz(self, request: web.Request) -> web.Response:
        return await health.serve("readyz", self._health_checks(ready=True), request)

    def _health_checks(self, *, ready: bool) -> list[health.Check]:
        """Upstream's checks, in its order: readiness adds the caches and the shutdown."""

        async def passing() -> bool:
            return True

        async def etcd() -> bool:
            try:
                async with asyncio.timeout(2.0):
                    await self.etcd.current_revision()
                return True
            except (EtcdError, TimeoutError):
                return False

        async def informers() -> bool:
            return all(cache.ready.is_set() for cache in self.caches.values())

        async def namespaces() -> bool:
            # ready once `default` and the other system namespaces exist, so a client's
            # first create in `default` cannot get a 404
            return self._system_namespaces.is_set()

        async def bootstrap_roles() -> bool:
            return self._bootstrap_policy.is_set()

        async def serving() -> bool:
            return self._listening.is_set()

        async def flowcontrol_config() -> bool:
            return self.config_producer.ensured.is_set()

        checks: list[health.Check] = [("ping", passing), ("log", passing), ("etcd", etcd)]
        if ready:
            checks += [("etcd-readiness", etcd), ("informer-sync", informers)]
        checks.append(("poststarthook/start-system-namespaces-controller", namespaces))
        if "RBAC" in self.config.authorization_mode.split(","):
            checks.append(("poststarthook/rbac/bootstrap-roles", bootstrap_roles))
        checks.append(("poststarthook/priority-and-fairness-config-producer",
                       flowcontrol_config))
        if ready:
            checks.append(("shutdown", serving))
        return checks

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _dump_priority_levels(self, request: web.Request) -> web.Response:
        """APF's debug table: each level's queues, waiting, executing and rejected."""
        return web.Response(text=self.apf.dump_priority_levels(), content_type="text/plain")

    async def _dump_queues(self, request: web.Request) -> web.Response:
        """APF's debug table: each queue's waiting and executing requests and seats."""
        return web.Response(text=self.apf.dump_queues(), content_type="text/plain")

    async def _version(self, request: web.Request) -> web.Response:
        return json_response({
            "major": "1", "minor": "37", "gitVersion": GIT_VERSION, "gitCommit": "",
            "gitTreeState": "clean", "buildDate": "2026-11-21T00:00:00Z",
            "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
            "compiler": "cpython", "platform": "linux/amd64",
        })

    async def _api(self, request: web.Request) -> web.Response:
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            return self._aggregated(discovery.aggregated(core=True))
        return json_response(discovery.api_versions(f"{request.host}"))

    async def _apis(self, request: web.Request) -> web.Response:
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            body = discovery.aggregated(core=False, custom=self.custom_resources.resources)
            body["items"] += self.aggregator.aggregated_groups()
            return self._aggregated(body)
        return await self._group_list(request)

    async def _group_list(self, request: web.Request) -> web.Response:
        """/apis/: the APIGroupList, whatever Accept asks (upstream's aggregator serves
        this path with its plain handler, without aggregated discovery)."""
        body = discovery.api_group_list(self.custom_resources.resources)
        body["groups"] += self.aggregator.api_groups()
        return json_response(body)

    @staticmethod
    def _aggregated(body: dict[str, Any]) -> web.Response:
        response = web.Response(body=orjson.dumps(body) + b"\n")
        response.headers["Content-Type"] = discovery.AGGREGATED_V2
        return response

    async def _openapi_v2(self, request: web.Request) -> web.Response:
        if "protobuf" in request.headers.get("Accept", ""):
            return web.Response(body=openapi.v2_protobuf(),
                                headers={"Content-Type": "application/octet-stream"})
        return web.Response(body=openapi.v2_json(
            self.aggregator.openapi_v2_definitions()
            | self.custom_resources.openapi.v2_definitions), content_type="application/json")

    async def _openapi_v3_index(self, request: web.Request) -> web.Response:
        return web.Response(body=openapi.v3_index(
            self.aggregator.openapi_v3_paths() | self.custom_resources.openapi.v3_paths),
                            content_type="application/json")

    async def _openapi_v3(self, request: web.Request) -> web.Response:
        path = request.path.removeprefix("/openapi/v3/")
        body = (openapi.v3_document(path) or self.aggregator.openapi_v3(path)
                or self.custom_resources.openapi.v3_documents.get(path))
        if body is None:
            raise no_such_resource()
        return web.Response(body=body, content_type="application/json")

    async def _resource(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        info = request[filters.REQUEST_INFO]
        parts = [p for p in path.strip("/").split("/") if p]
        if info.resource in REVIEWS and info.verb == "create":
            store = self.stores[(info.group, info.version, info.resource)]
            return await serve_review(request, store.resource, request[filters.USER],
                                      self.authorizer, self.authenticator, info.namespace)
        if info.resource == "serviceaccounts" and info.subresource == "token" and (
                info.verb == "create"):
            return await serve_token_request(
                request, self.token_issuer, self.stores[("", "v1", "serviceaccounts")],
                self.stores[("", "v1", "pods")], info.namespace, info.name)
        if len(parts) >= 2 and parts[0] == "apis":  # a group another server serves
            remote = self.aggregator.serving(parts[1], parts[2] if len(parts) > 2 else "")
            if remote is not None:
                return await self.aggregator.proxy(request, remote)
        if not info.is_resource_request:
            return self._group_discovery(path)
        return await self.handler.handle(request, info)

    def _group_discovery(self, path: str) -> web.Response:
        parts = [p for p in path.strip("/").split("/") if p]
        body: dict[str, Any] | None = None
        if len(parts) == 2 and parts[0] == "api":
            body = discovery.api_resource_list("", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            body = discovery.api_group(parts[1], self.custom_resources.resources)
        elif len(parts) == 3 and parts[0] == "apis":
            body = discovery.api_resource_list(parts[1], parts[2],
                                               self.custom_resources.resources)
        if body is None:
            raise no_such_resource()
        return json_response(body)


def _token_issuer(config: APIServerConfig) -> TokenIssuer | None:
    """ServiceAccount tokens, when a key to sign or to check them is configured."""
    signing = (load_signing_key(Path(config.service_account_signing_key_file).read_bytes())
               if config.service_account_signing_key_file else None)
    public = [load_public_key(Path(path).read_bytes())
              for path in config.service_account_key_files]
    if signing is not None and not public:
        public = [signing.public_key()]
    if signing is None and not public:
        return None
    return TokenIssuer(signing, public, config.service_account_issuer,
                       list(config.api_audiences))
