"""Endpoints: from an HTTP request to a store call and back (upstream
k8s.io/apiserver/pkg/endpoints).

    filters.py         the handler chain every request passes first: request id,
                       metrics, log, tracing, authentication, impersonation, audit,
                       authorization, in-flight limits, Status errors
                       (endpoints/filters, server/filters, server/config.go)
    requestinfo.py     the path -> verb, group, version, resource, namespace, name
                       (endpoints/request/requestinfo.go)
    request_params.py  query parameters and the body of a request (handlers/rest.go)
    negotiation.py     what the body is and what shape the client wants back
                       (handlers/negotiation/negotiate.go)
    handlers.py        one handler per verb, each calling the generic store
                       (handlers/create.go, get.go, update.go, patch.go, delete.go)
    apply.py           server-side apply's PATCH (handlers/fieldmanager)
    watch.py           the watch stream (handlers/watch.go)
    responses.py       objects, lists, Tables and Status errors written out
                       (handlers/responsewriters)
    tables/            the columns `kubectl get` shows (pkg/printers/internalversion)
    discovery.py       /api, /apis and aggregated discovery (endpoints/discovery)
    openapi.py         /openapi/v2 and /openapi/v3 (kube-openapi's handlers)
    health.py          /healthz, /livez, /readyz (server/healthz)
    metrics.py         /metrics, named as upstream's (endpoints/metrics/metrics.go)
    tracing.py         a span per write request (endpoints/filters/traces.go)
"""
