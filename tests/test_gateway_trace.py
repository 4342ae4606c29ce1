"""The gateway controller in the traces of the objects it serves (`mkctl trace
ingress/NAME`): its sync after an object's change is a span of that object's trace. The
controller runs in this process, against an API server of its own, its spans kept."""

from __future__ import annotations

from pathlib import Path

from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.gateway import ingress
from minikube_py.gateway.controller import INGRESS_SERVICE, NAMESPACE, GatewayController
from minikube_py.tracing.context import ANNOTATION
from minikube_py.tracing.tracer import Tracer
from tests.api_helpers import eventually
from tests.conftest import module_own_apiserver
from tests.test_proxy import KeptSpans

etcd, apiserver, kubeconfig = module_own_apiserver("gateway-trace")


def traced_ingress(trace: str) -> dict:
    return {"metadata": {"name": "traced", "annotations": {
                ANNOTATION: f"00-{trace}-{'5' * 16}-01"}},
            "spec": {"ingressClassName": ingress.INGRESS_CLASS, "rules": [{
                "host": "traced.example", "http": {"paths": [{
                    "path": "/", "pathType": "Prefix", "backend": {"service": {
                        "name": "web", "port": {"number": 80}}}}]}}]}}


async def test_a_sync_after_an_ingress_change_is_a_span_of_its_trace(kubeconfig: Path
                                                                        ) -> None:
    """The span names the Ingress and continues its trace; the status the controller
    writes to the Ingress is not a change that makes another one."""
    trace = "e" * 32
    kept = KeptSpans()
    async with Client.from_kubeconfig(kubeconfig) as api:
        await api.resource("ingressclasses", "networking.k8s.io").create(
            ingress.ingress_class_object())
        ingresses = api.resource("ingresses", "networking.k8s.io")
        await ingresses.create(traced_ingress(trace), "default")
        async with Client.from_kubeconfig(kubeconfig, trace_context=True) as client:
            informers = SharedInformerFactory(client)
            controller = GatewayController(client, informers,
                                           tracer=Tracer("gateway-controller", kept))
            informers.start()
            try:
                await informers.wait_for_cache_sync()
                await controller.sync()
                # the service-lb controller's part: an address, which the Ingress reports
                service = await api.resource("services").get(INGRESS_SERVICE, NAMESPACE)
                service["status"] = {"loadBalancer": {"ingress": [{"ip": "172.18.0.200"}]}}
                await api.resource("services").update_status(service)

                async def reported() -> bool:
                    await controller.sync()
                    current = await ingresses.get("traced", "default")
                    return bool((current.get("status") or {}).get("loadBalancer"))

                await eventually(reported, what="the Ingress's address in its status")
                await controller.sync()
            finally:
                await informers.stop()
    (span,) = [span for span in kept.spans if span.context.trace_id == trace]
    assert span.name == "gateway sync" and span.parent_id == "5" * 16
    assert span.attributes["k8s.resource"] == "ingresses"
    assert (span.attributes["k8s.namespace"], span.attributes["k8s.name"]) == (
        "default", "traced")
    assert span.attributes["result"] == "nginx.conf updated"
    assert span.end_ns >= span.start_ns
