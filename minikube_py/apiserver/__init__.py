"""The API server (upstream cmd/kube-apiserver and k8s.io/apiserver): the only component
that talks to etcd. Its folders follow the path of one request.

    __main__.py   `python -m minikube_py.apiserver`: flags -> APIServerConfig
    features.py   the feature gates it knows (`--feature-gates`, apiserver/pkg/features)
    server.py     the APIServer component: the handler chain every request passes,
                  start-up (watch caches, bootstrap objects) and stop
                  (cmd/kube-apiserver/app/server.go, apiserver/pkg/server/config.go)
    endpoints/    HTTP in and out: parse the request, negotiate the media type, call the
                  store, write JSON/YAML/Table/Status, watch streams, discovery, OpenAPI
    auth/         who asks (authentication), may they (authorization), what may they
                  change (admission), and the audit log of it all
    flowcontrol/  API Priority and Fairness: which FlowSchema and priority level a request
                  belongs to, its seats and fair queues, the bootstrap configuration
                  (apiserver/pkg/util/flowcontrol)
    registry/     the generic store and one strategy per kind, plus the REST storage
                  with logic of its own (Services, bindings, scale, eviction, reviews)
    apiextensions/ CustomResourceDefinitions: their controllers (names, Established,
                  instance cleanup) and the stores of the resources they define
                  (k8s.io/apiextensions-apiserver)
    connect/      requests passed on to someone else: logs, exec, attach and
                  port-forward to kubelets, HTTP proxies, aggregated API servers
    storage/      etcd over gRPC, encryption at rest, the watch cache

A request, in order: server.py's handler chain -> auth/authentication.py ->
auth/audit.py -> auth/authorization.py -> flowcontrol/ (a seat, or 429) ->
endpoints/requestinfo.py and handlers.py ->
registry/store.py (strategy hooks and auth/admission/ inside) -> storage/etcd.py.
"""
