"""Status bodies byte for byte as upstream writes them, and the media-type errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from minikube_py.cluster.apiserver import APIServerProcess


def call(url: str, method: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_already_exists_status_is_upstreams_bytes(apiserver: APIServerProcess,
                                                   namespace: str) -> None:
    url = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    body = json.dumps({"metadata": {"name": "dup"}}).encode()
    headers = {"Content-Type": "application/json"}
    assert call(url, "POST", body, headers)[0] == 201
    code, text = call(url, "POST", body, headers)
    assert code == 409
    assert text == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                    b'"message":"configmaps \\"dup\\" already exists","reason":"AlreadyExists",'
                    b'"details":{"name":"dup","kind":"configmaps"},"code":409}\n')


def test_not_found_in_a_named_group_orders_details_as_upstream(
        apiserver: APIServerProcess, namespace: str) -> None:
    code, text = call(f"{apiserver.url}/apis/apps/v1/namespaces/{namespace}/deployments/none",
                      "GET")
    assert code == 404
    assert text.endswith(b'"details":{"name":"none","group":"apps","kind":"deployments"},'
                         b'"code":404}\n')


def test_text_plain_body_is_415_with_upstreams_message(apiserver: APIServerProcess,
                                                       namespace: str) -> None:
    code, text = call(f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps", "POST",
                      b'{"metadata": {"name": "plain"}}', {"Content-Type": "text/plain"})
    status = json.loads(text)
    assert (code, status["reason"], status["code"]) == (415, "UnsupportedMediaType", 415)
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf")
    code, _ = call(f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps/plain", "GET")
    assert code == 404  # nothing was written


def test_unproducible_accept_is_406(apiserver: APIServerProcess, namespace: str) -> None:
    code, text = call(f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps", "GET",
                      headers={"Accept": "text/html"})
    status = json.loads(text)
    assert (code, status["reason"]) == (406, "NotAcceptable")
    assert status["message"].startswith("only the following media types are accepted: ")
