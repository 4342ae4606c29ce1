"""`python -m minikube_py.scheduler --kubeconfig F [--config scheduler-config.yaml]
[--leader-elect]`"""

from __future__ import annotations

import argparse
import importlib
import socket
import sys
import uuid

from prometheus_client import CollectorRegistry

from minikube_py.client.component import run_component, serve_health
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.leaderelection import LeaderElector
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client
from minikube_py.scheduler.config import ConfigError, default_configuration, load_configuration
from minikube_py.scheduler.framework.interface import Plugin
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.scheduler import Scheduler
from minikube_py.tracing.setup import add_tracing_flag, close_tracer, tracer_for


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minikube_py.scheduler",
                                     description="minikube-py scheduler")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--config", default=None,
                        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE:CLASS",
                        help="register an out-of-tree plugin (repeatable), e.g. "
                             "labs.scheduler_plugin.energy_aware:EnergyAware")
    parser.add_argument("--leader-elect", action="store_true",
                        help="schedule only while holding the kube-system/kube-scheduler Lease")
    parser.add_argument("--leader-elect-lease-duration", type=float, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=float, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=float, default=2.0)
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=10259,
                        help="/healthz and /metrics (plain HTTP); 0 disables")
    parser.add_argument("--identity", default=None, help="leader election identity")
    add_tracing_flag(parser)
    add_verbosity_flag(parser)
    return parser.parse_args(argv)


def load_plugins(specs: list[str]) -> dict[str, type[Plugin]]:
    """`module:Class` -> the plugin class, registered under its `name`."""
    plugins: dict[str, type[Plugin]] = {}
    for spec in specs:
        module_name, _, class_name = spec.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError, ValueError) as error:
            raise ConfigError(f"--plugin {spec}: cannot load it: {error}") from error
        if not (isinstance(cls, type) and issubclass(cls, Plugin) and cls.name):
            raise ConfigError(f"--plugin {spec}: not a scheduler plugin class with a name")
        plugins[cls.name] = cls
    return plugins


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging(args.v)
    try:
        registry = {**IN_TREE_PLUGINS, **load_plugins(args.plugin)}
        config = (load_configuration(args.config, set(registry)) if args.config
                  else default_configuration())
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="scheduler",
                                        trace_context=True)
    except (ConfigError, KubeconfigError) as error:
        sys.exit(f"scheduler: {error}")

    async def run() -> None:
        metrics = CollectorRegistry()
        try:
            scheduler = Scheduler(client, config, registry, metrics_registry=metrics,
                                  tracer=tracer_for("kube-scheduler", args.tracing_endpoint))
        except ConfigError as error:
            sys.exit(f"scheduler: {error}")
        runner = (await serve_health(metrics, args.bind_address, args.port)
                  if args.port else None)
        try:
            async with client:
                if args.leader_elect:
                    elector = LeaderElector(
                        client, name="kube-scheduler",
                        identity=args.identity or f"{socket.gethostname()}_{uuid.uuid4()}",
                        lease_duration=args.leader_elect_lease_duration,
                        renew_deadline=args.leader_elect_renew_deadline,
                        retry_period=args.leader_elect_retry_period)
                    await elector.run(scheduler.run)
                else:
                    await scheduler.run()
        finally:
            if runner is not None:
                await runner.cleanup()
            await close_tracer(scheduler.tracer)

    run_component("scheduler", run)


if __name__ == "__main__":
    main()
