"""How a component turns tracing on: a flag, or upstream's TracingConfiguration file.

    --tracing-endpoint http://127.0.0.1:4318       every component (OTLP/HTTP)
    --tracing-config-file tracing.yaml             the API server, as upstream's:
        apiVersion: apiserver.config.k8s.io/v1
        kind: TracingConfiguration
        endpoint: 127.0.0.1:4318                   (host:port, or a URL)
        samplingRatePerMillion: 1000000
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from minikube_py.tracing.exporter import OTLPExporter
from minikube_py.tracing.tracer import Tracer

API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1",
                "apiserver.config.k8s.io/v1alpha1")


def add_tracing_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracing-endpoint", default="", metavar="URL",
                        help="send spans to this OTLP/HTTP endpoint (http://host:4318); "
                             "none: no tracing")


def _url(endpoint: str) -> str:
    return endpoint if "://" in endpoint else f"http://{endpoint}"


def tracer_for(service: str, endpoint: str, sampling: float = 1.0) -> Tracer:
    """A tracer sending to `endpoint`, or one that records nothing when it is empty."""
    if not endpoint:
        return Tracer(service)
    return Tracer(service, OTLPExporter(_url(endpoint), service), sampling=sampling)


def read_tracing_config(path: Path) -> tuple[str, float]:
    """(endpoint, sampling share) of a TracingConfiguration; ValueError when it is not
    one."""
    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"cannot read the tracing configuration {path}: {error}") from error
    if not isinstance(config, dict) or config.get("kind") != "TracingConfiguration" or (
            config.get("apiVersion") not in API_VERSIONS):
        raise ValueError(f"{path}: want kind TracingConfiguration of {API_VERSIONS[0]}")
    rate = config.get("samplingRatePerMillion", 0)
    if not isinstance(rate, int) or not 0 <= rate <= 1_000_000:
        raise ValueError(f"{path}: samplingRatePerMillion must be between 0 and 1000000, "
                         f"not {rate!r}")
    endpoint = config.get("endpoint") or "localhost:4318"
    if not isinstance(endpoint, str):
        raise ValueError(f"{path}: endpoint must be a host:port or a URL")
    return _url(endpoint), rate / 1_000_000


async def close_tracer(tracer: Tracer) -> None:
    """Send the spans still queued (a component's last act before it exits)."""
    if isinstance(tracer.exporter, OTLPExporter):
        await tracer.exporter.close()
