"""A conversion webhook for the CronTab of crd.yaml: v1 keeps the address in one field,
`spec.hostPort: "host:port"`, v2 in two, `spec.host` and `spec.port` (the converter of
upstream's e2e test image, agnhost crd-conversion-webhook, does the same).

Standard library only: an HTTPS server that answers each ConversionReview POSTed to
/crdconvert with every object converted to request.desiredAPIVersion.

    python webhook.py --tls-cert-file server.crt --tls-private-key-file server.key \\
        --port 9443
"""

from __future__ import annotations

import argparse
import copy
import json
import ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """One CronTab in the desired version (of the same group, whatever its name); only
    apiVersion and spec change."""
    converted = copy.deepcopy(obj)
    group, _, source = str(obj.get("apiVersion", "")).rpartition("/")
    wanted_group, _, wanted = desired.rpartition("/")
    spec = converted.setdefault("spec", {})
    if group != wanted_group:
        raise ValueError(f"cannot convert {obj.get('apiVersion')} to another group: {desired}")
    if (source, wanted) == ("v1", "v2"):
        host, _, port = str(spec.pop("hostPort", "")).partition(":")
        spec["host"], spec["port"] = host, port
    elif (source, wanted) == ("v2", "v1"):
        host, port = spec.pop("host", ""), spec.pop("port", "")
        spec["hostPort"] = f"{host}:{port}"
    elif source != wanted:
        raise ValueError(f"unexpected conversion from {source} to {wanted}")
    converted["apiVersion"] = desired
    return converted


def review_response(review: dict[str, Any]) -> dict[str, Any]:
    """The ConversionReview that answers `review`: the objects converted, or a Failure
    with the reason."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", "")}
    try:
        response["convertedObjects"] = [convert(obj, request["desiredAPIVersion"])
                                        for obj in request.get("objects") or []]
        response["result"] = {"status": "Success"}
    except (ValueError, KeyError) as err:
        response["convertedObjects"] = []
        response["result"] = {"status": "Failure", "message": str(err)}
    return {"apiVersion": review.get("apiVersion", "apiextensions.k8s.io/v1"),
            "kind": "ConversionReview", "response": response}


class Handler(BaseHTTPRequestHandler):
    """POST /crdconvert: a ConversionReview in, a ConversionReview out."""

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path.partition("?")[0] != "/crdconvert":
            self.send_error(404)
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            review = json.loads(self.rfile.read(length))
        except json.JSONDecodeError as err:
            self.send_error(400, f"not JSON: {err}")
            return
        body = json.dumps(review_response(review)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tls-cert-file", required=True)
    parser.add_argument("--tls-private-key-file", required=True)
    parser.add_argument("--port", type=int, default=9443)
    args = parser.parse_args()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.tls_cert_file, args.tls_private_key_file)
    server = ThreadingHTTPServer(("", args.port), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"serving ConversionReviews on https://:{args.port}/crdconvert", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
