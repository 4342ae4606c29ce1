"""projected volume: ConfigMaps, Secrets, downward API files and a service account token
projected together into one directory (on a tmpfs), kept up to date.

Upstream: pkg/volume/projected/projected.go, and pkg/kubelet/token (the token manager:
a token is requested once and reused until 80% of its lifetime, at most 24 hours, has
passed). The `kube-api-access-*` volume every pod gets is one of these.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.kubelet.volumes import configmap, downwardapi, secret
from minikube_py.kubelet.volumes.atomic_writer import FileProjection
from minikube_py.kubelet.volumes.configmap import DEFAULT_MODE
from minikube_py.kubelet.volumes.emptydir import setup_tmpfs
from minikube_py.kubelet.volumes.plugin import GetObject, SetUpError, aggregate, project

# (the pod, audience, expiration seconds) -> a token for the pod's service account,
# bound to the pod (it stops working when the pod is gone)
GetServiceAccountToken = Callable[[Obj, str, int], Awaitable[str]]
DEFAULT_TOKEN_EXPIRATION = 3600
MAX_TOKEN_TTL = 24 * 3600


class ServiceAccountTokens:
    """The token manager: one token per pod and request, renewed near its expiry."""

    def __init__(self, request_token: GetServiceAccountToken) -> None:
        self._request_token = request_token
        # (pod uid, audience, expiration) -> (token, when it was issued)
        self._tokens: dict[tuple[str, str, int], tuple[str, float]] = {}

    async def get(self, pod: Obj, audience: str, expiration: int) -> str:
        """A token for the pod's service account; a cached one while it is fresh."""
        key = (pod["metadata"]["uid"], audience, expiration)
        cached = self._tokens.get(key)
        if cached is not None:
            age = time.monotonic() - cached[1]
            if age < min(expiration * 0.8, MAX_TOKEN_TTL):
                return cached[0]
        token = await self._request_token(pod, audience, expiration)
        self._tokens[key] = (token, time.monotonic())
        return token

    def forget(self, pod_uid: str) -> None:
        """Drop the tokens of a pod that is gone."""
        for key in [key for key in self._tokens if key[0] == pod_uid]:
            del self._tokens[key]


async def collect_data(source: Obj, pod: Obj, *, get_config_map: GetObject,
                       get_secret: GetObject, tokens: ServiceAccountTokens | None,
                       allocatable: Obj) -> dict[str, FileProjection]:
    """collectData: the files of every source, later sources overwriting earlier ones;
    all failures are reported together. Without a token source the token is skipped."""
    namespace = pod["metadata"]["namespace"]
    default_mode = source.get("defaultMode", DEFAULT_MODE)
    payload: dict[str, FileProjection] = {}
    errors: list[str] = []
    for projection in source.get("sources") or []:
        try:
            if "configMap" in projection:
                ref = projection["configMap"]
                found = await get_config_map(namespace, ref.get("name", ""))
                if found is None and not ref.get("optional"):
                    raise SetUpError(f'configmap "{ref.get("name", "")}" not found')
                payload.update(configmap.make_payload(
                    ref.get("items") or [], configmap.config_map_files(found or {}),
                    default_mode, bool(ref.get("optional"))))
            elif "secret" in projection:
                ref = projection["secret"]
                found = await get_secret(namespace, ref.get("name", ""))
                if found is None and not ref.get("optional"):
                    raise SetUpError(f'secret "{ref.get("name", "")}" not found')
                payload.update(configmap.make_payload(
                    ref.get("items") or [], secret.secret_files(found or {}), default_mode,
                    bool(ref.get("optional")), kind="secret"))
            elif "downwardAPI" in projection:
                payload.update(downwardapi.collect_data(
                    projection["downwardAPI"].get("items") or [], pod, default_mode,
                    allocatable))
            elif "serviceAccountToken" in projection and tokens is not None:
                request = projection["serviceAccountToken"]
                payload[request["path"]] = FileProjection(
                    (await _token(tokens, pod, request)).encode(), default_mode)
        except SetUpError as error:
            errors.append(str(error))
    if errors:
        raise SetUpError(aggregate(errors))
    return payload


async def _token(tokens: ServiceAccountTokens, pod: Obj, request: Obj) -> str:
    try:
        return await tokens.get(pod, request.get("audience", ""),
                                request.get("expirationSeconds", DEFAULT_TOKEN_EXPIRATION))
    except Exception as error:  # whatever the token source raises, as upstream's err
        raise SetUpError(f"failed to fetch token: {error}") from error


async def set_up(path: Path, source: Obj, pod: Obj, *, get_config_map: GetObject,
                 get_secret: GetObject, tokens: ServiceAccountTokens | None,
                 allocatable: Obj, tmpfs_size: int | None) -> bool:
    """SetUp: collect every source and project them into a tmpfs at `path`."""
    payload = await collect_data(source, pod, get_config_map=get_config_map,
                                 get_secret=get_secret, tokens=tokens, allocatable=allocatable)
    await setup_tmpfs(path, tmpfs_size)
    return await project(path, payload)
