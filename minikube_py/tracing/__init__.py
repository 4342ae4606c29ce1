"""Tracing: what every component did for one request, for `mkctl trace` (docs/tracing.md).

    context.py    the W3C trace context, on requests (traceparent) and on objects
                  (the tracing.minikube-py.io/traceparent annotation)
    tracer.py     spans: `with tracer.span("name", **attributes)`
    exporter.py   ended spans, batched, to an OTLP/HTTP endpoint in the background
    otlp.py       spans as OTLP/HTTP JSON, and back
    setup.py      a component's tracer from its TracingConfiguration file

The spans go to the trace store, `python -m minikube_py.tracestore` (its own package),
which `mkctl trace` reads.
"""
