"""The root CA certificate publisher: kube-root-ca.crt in every namespace, kept as the
controller-manager's --root-ca-file says."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.base import ControllerOptions
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.rootcacertpublisher import DESCRIPTION, RootCACertPublisher
from tests.api_helpers import eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


async def test_every_namespace_gets_the_cluster_ca_and_keeps_it(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(RootCACertPublisher, options=ControllerOptions(root_ca=PEM))
    config_maps = api_client.resource("configmaps")

    async def published() -> dict | None:
        try:
            return await config_maps.get("kube-root-ca.crt", namespace)
        except NotFound:
            return None

    found = await eventually(published, what="kube-root-ca.crt published")
    assert found["data"] == {"ca.crt": PEM}
    assert found["metadata"]["annotations"]["kubernetes.io/description"] == DESCRIPTION

    found["data"] = {"ca.crt": "tampered"}
    await config_maps.update(found)

    async def restored() -> bool:
        current = await published()
        return current is not None and current["data"] == {"ca.crt": PEM}

    await eventually(restored, what="ca.crt put back")
    await config_maps.delete("kube-root-ca.crt", namespace)
    await eventually(restored, what="kube-root-ca.crt created again")

