"""`minikube-py dashboard [--url] [--port N]`: the dashboard in a browser, as
`minikube dashboard` opens it.

    1. the dashboard add-on enabled, unless it is (cluster/addons.py): the dashboard's
       Deployment and the Service kubernetes-dashboard/kubernetes-dashboard in front of
       it; the cluster must be running
    2. the cluster's kubeconfig ($MINIKUBE_PY_HOME/kubeconfig): that Service must be there,
       and it must have a ready endpoint (its pod serves), as `minikube dashboard`
       verifies the dashboard's health before it starts its proxy
    3. a local proxy on 127.0.0.1 (client/apiproxy.py, like `kubectl proxy`), passing on
       only GETs of that Service's proxy path
    4. the URL through it, upstream's: .../api/v1/namespaces/kubernetes-dashboard/
       services/https:kubernetes-dashboard:/proxy/, printed, and opened in a browser
       unless --url
    5. the proxy serves until Ctrl-C

No port is opened but the proxy's, on loopback; the dashboard itself is reached through
the API server's service proxy, with the kubeconfig's credentials.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import webbrowser
from collections.abc import Callable
from functools import partial
from pathlib import Path

from minikube_py.client.apiproxy import APIProxy
from minikube_py.client.errors import ClientError, NotFound
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.rest import Client
from minikube_py.cluster.addons import NAMESPACE, PROXY_PATH, SERVICE

READY_TIMEOUT = 180.0
"""s to wait for the dashboard's pod to serve (its image pulled, its informers synced)."""


async def wait_for_endpoint(client: Client) -> None:
    """Until an EndpointSlice of the dashboard's Service has a ready endpoint (an unset
    `ready` counts as ready, as upstream's consumers read it)."""
    slices = client.resource("endpointslices", "discovery.k8s.io")
    async with asyncio.timeout(READY_TIMEOUT):
        while True:
            listed = await slices.list(
                NAMESPACE, label_selector=f"kubernetes.io/service-name={SERVICE}")
            if any((endpoint.get("conditions") or {}).get("ready") is not False
                   for item in listed["items"] for endpoint in item.get("endpoints") or ()):
                return
            await asyncio.sleep(0.5)


async def serve(kubeconfig: Path, port: int, open_browser: bool) -> None:
    """Check the dashboard is there, then proxy to it until cancelled."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-dashboard") as client:
        try:
            await client.resource("services").get(SERVICE, NAMESPACE)
        except NotFound:
            sys.exit(f"error: the dashboard is not deployed in this cluster (no Service "
                     f"{NAMESPACE}/{SERVICE}), and this home holds only a kubeconfig, no "
                     f"minikube-py cluster to deploy it in: run `python -m "
                     f"minikube_py.dashboard` behind such a Service")
        except ClientError as error:
            sys.exit(f"error: cannot reach the cluster's API server: {error}")
        print("waiting for the dashboard's pod to serve ...", file=sys.stderr, flush=True)
        try:
            await wait_for_endpoint(client)
        except TimeoutError:
            sys.exit(f"error: the dashboard's Service {NAMESPACE}/{SERVICE} has no ready "
                     f"endpoint after {READY_TIMEOUT:.0f} s: see `kubectl get pods -n "
                     f"{NAMESPACE}` and its pod's events")
        proxy = APIProxy(client, PROXY_PATH, port)
        try:
            await proxy.start()
        except OSError as error:
            sys.exit(f"error: cannot listen on 127.0.0.1:{port}: {error}")
        print(proxy.url, flush=True)
        if open_browser:
            webbrowser.open(proxy.url)
        try:
            await asyncio.Event().wait()
        finally:
            await proxy.stop()


def dashboard_command(args: argparse.Namespace, home: Callable[[], Path],
                      deploy: Callable[[Path], None]) -> None:
    kubeconfig = home() / "kubeconfig"
    if not kubeconfig.is_file():
        sys.exit(f"error: no cluster in {home()} ({kubeconfig} is missing): "
                 "run `minikube-py up` first")
    deploy(home())
    try:
        asyncio.run(serve(kubeconfig, args.port, open_browser=not args.url))
    except KubeconfigError as error:
        sys.exit(f"error: {error}")
    except KeyboardInterrupt:
        pass


def add_dashboard_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                          home: Callable[[], Path], deploy: Callable[[Path], None]) -> None:
    """Add `dashboard` to the minikube-py command line; `deploy(home)` enables the
    dashboard add-on of the cluster in home where it does not run."""
    command = commands.add_parser(
        "dashboard", help="open the dashboard through a local proxy to the API server "
                          "(enabling its add-on first when it does not run)")
    command.add_argument("--url", action="store_true",
                         help="only print the URL, do not open a browser (the proxy serves "
                              "until Ctrl-C either way)")
    command.add_argument("--port", type=int, default=0,
                         help="the local proxy's port on 127.0.0.1 (default: a free one)")
    command.set_defaults(run=partial(dashboard_command, home=home, deploy=deploy))
