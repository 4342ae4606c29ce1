"""Status bodies byte for byte as upstream writes them, and the media-type errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from minikube_py.api.goyaml.read import load
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
    assert "application/vnd.kubernetes.protobuf" not in status["message"]  # we cannot answer in it


def test_delete_answers_upstreams_status_without_a_code(apiserver: APIServerProcess,
                                                        namespace: str) -> None:
    """A store's delete answers with a Status that names the resource (its plural as the
    kind) and has no code, as upstream's registry store does."""
    url = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    body = json.dumps({"metadata": {"name": "gone"}}).encode()
    code, created = call(url, "POST", body, {"Content-Type": "application/json"})
    assert code == 201, created
    uid = json.loads(created)["metadata"]["uid"]
    code, text = call(f"{url}/gone", "DELETE")
    assert code == 200
    assert text == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
                    b'"details":{"name":"gone","kind":"configmaps","uid":"' + uid.encode()
                    + b'"}}\n')


def test_every_json_answer_ends_in_a_newline(apiserver: APIServerProcess,
                                             namespace: str) -> None:
    """Go's json.Encoder ends each value with a newline: objects, lists, discovery."""
    url = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    code, created = call(url, "POST", b'{"metadata": {"name": "nl"}}',
                         {"Content-Type": "application/json"})
    assert code == 201 and created.endswith(b"}\n")
    for path in (f"/api/v1/namespaces/{namespace}/configmaps/nl",
                 f"/api/v1/namespaces/{namespace}/configmaps", "/api", "/apis", "/api/v1",
                 "/version"):
        code, text = call(apiserver.url + path, "GET")
        assert code == 200 and text.endswith(b"}\n") and not text.endswith(b"\n\n"), path
    code, text = call(apiserver.url + "/apis", "GET", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert code == 200 and text.endswith(b"}\n")


def test_a_yaml_answer_reads_back_as_the_same_object_in_go(apiserver: APIServerProcess,
                                                            namespace: str) -> None:
    """application/yaml is written as sigs.k8s.io/yaml writes it: keys sorted, and a string
    go-yaml would read as a number or a bool (`12e45`, `0x1f`, `true`) quoted."""
    url = f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps"
    strings = {"exponent": "12e45", "hex": "0x1f", "yes": "true", "plain": "web"}
    body = json.dumps({"metadata": {"name": "numbers", "labels": {"lab": "123456e7"}},
                       "data": strings}).encode()
    assert call(url, "POST", body, {"Content-Type": "application/json"})[0] == 201
    code, text = call(f"{url}/numbers", "GET", headers={"Accept": "application/yaml"})
    assert code == 200
    document = load(text.decode())
    assert document["data"] == strings
    assert document["metadata"]["labels"] == {"lab": "123456e7"}
    assert text.decode().startswith("apiVersion: v1\ndata:\n")
    assert 'exponent: "12e45"' in text.decode()
