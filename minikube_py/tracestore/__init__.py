"""The trace receiver, a component: `python -m minikube_py.tracestore` keeps the spans every
other component exports (the shared library `minikube_py.tracing` makes and sends them)
and answers `mkctl trace`.

    receiver.py   OTLP/HTTP in (POST /v1/traces), queries out (GET /api/v1/traces...)
    store.py      the spans, bounded, on disk, indexed by trace and by object
"""
