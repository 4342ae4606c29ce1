"""Tracing: what every component did for one request, for `mkctl trace` (docs/tracing.md).

    context.py    the W3C trace context, on requests (traceparent) and on objects
                  (the tracing.minikube-py.io/traceparent annotation)
    tracer.py     spans: `with tracer.span("name", **attributes)`
    exporter.py   ended spans, batched, to an OTLP/HTTP endpoint in the background
    otlp.py       spans as OTLP/HTTP JSON, and back
    store.py      the receiver's bounded, on-disk memory of spans
    receiver.py   `python -m minikube_py.traces`: the OTLP endpoint `mkctl trace` reads
"""
