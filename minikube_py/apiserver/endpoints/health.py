"""/healthz, /livez and /readyz as upstream answers them (k8s.io/apiserver/pkg/server/healthz).

    GET /readyz                   "ok", or 500 with every check when one fails
    GET /readyz?verbose           every check, one line each:
                                      [+]etcd ok
                                      [-]informer-sync failed: reason withheld
                                  then "readyz check passed" (or failed)
    GET /readyz?exclude=etcd      without that check (listed as excluded)
    GET /readyz/etcd              that check alone

/livez says whether the process should be restarted, /readyz whether it should get
traffic (it adds the watch caches' first lists and the shutdown check); /healthz is the
older name of /livez.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from minikube_py.api import errors

Check = tuple[str, Callable[[], Awaitable[bool]]]


async def serve(kind: str, checks: list[Check], request: web.BaseRequest) -> web.Response:
    """Answer /<kind>, /<kind>/<check> or /<kind>?verbose&exclude=... from `checks`."""
    if request.path != f"/{kind}":  # /<kind>/<check>, exactly: /<kind>/ is no check
        single = request.path.removeprefix(f"/{kind}/")
        found = next((check for name, check in checks if name == single), None)
        if found is None:
            raise errors.APIError(404, "NotFound", "the server could not find the requested "
                                  "resource", {})
        if await found():
            return web.Response(text="ok")
        return web.Response(text=f"internal server error: {single} check failed\n",
                            status=500)
    excluded = set(request.query.getall("exclude", []))
    lines, ok = [], True
    for name, check in checks:
        if name in excluded:
            lines.append(f"[+]{name} excluded: ok")
            continue
        passed = await check()
        ok = ok and passed
        lines.append(f"[+]{name} ok" if passed else f"[-]{name} failed: reason withheld")
    if ok and "verbose" not in request.query:
        return web.Response(text="ok")
    lines.append(f"{kind} check {'passed' if ok else 'failed'}")
    return web.Response(text="\n".join(lines) + "\n", status=200 if ok else 500)
