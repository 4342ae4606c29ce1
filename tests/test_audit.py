"""The audit log, as upstream writes it: audit.k8s.io/v1 Events, one JSON line per stage,
at the level the policy's first matching rule gives (real kubectl against an API server
with TLS, --audit-policy-file and RBAC)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from minikube_py.cluster.apiserver import APIServerProcess, ServingTLS
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.security import pki

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    "rules": [
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*"]},
        {"level": "None", "users": ["system:apiserver"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["configmaps"]}]},
        {"level": "Metadata", "omitStages": ["RequestReceived"],
         "resources": [{"group": "", "resources": ["pods"]}]},
        {"level": "Metadata"},
    ],
}


def kubeconfig(path: Path, url: str, ca: pki.KeyPair, user: pki.KeyPair) -> Path:
    """An admin's kubeconfig over TLS (kubectl sends no credentials over plain HTTP)."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {
            "server": url,
            "certificate-authority-data": base64.b64encode(ca.cert_pem).decode()}}],
        "users": [{"name": "u", "user": {
            "client-certificate-data": base64.b64encode(user.cert_pem).decode(),
            "client-key-data": base64.b64encode(user.key_pem).decode()}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_each_stage_is_a_line_at_the_level_of_the_first_matching_rule(
        private_etcd: EtcdProcess, tmp_path: Path) -> None:
    policy, log = tmp_path / "policy.yaml", tmp_path / "audit.log"
    policy.write_text(yaml.safe_dump(POLICY))
    ca = pki.new_ca()
    cert, key = pki.issue(ca, "kube-apiserver", ip_addresses=("127.0.0.1",),
                          server=True).write(tmp_path, "apiserver")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    async with APIServerProcess(
            [private_etcd.client_url], tmp_path / "api.log",
            tls=ServingTLS(cert, key, tmp_path / "ca.crt"), extra_args=(
                f"--audit-policy-file={policy}", f"--audit-log-path={log}",
                "--authorization-mode=RBAC")) as api:
        admin = kubeconfig(tmp_path / "admin", api.url, ca, pki.issue(
            ca, "admin", organizations=("system:masters",), client=True))
        created = subprocess.run([KUBECTL, f"--kubeconfig={admin}", "create", "configmap",
                                  "audited", "--from-literal=k=v"], capture_output=True,
                                 text=True)
        assert created.returncode == 0, created.stderr
        subprocess.run([KUBECTL, f"--kubeconfig={admin}", "get", "pods"], check=True,
                       capture_output=True)
        subprocess.run([KUBECTL, f"--kubeconfig={admin}", "get", "pods", "--watch",
                        "--request-timeout=1s"], capture_output=True)
        # anonymous over plain HTTP: authorized by nothing, audited as forbidden
        denied = subprocess.run(["curl", "-s", "--cacert", str(tmp_path / "ca.crt"),
                                 f"{api.url}/api/v1/namespaces"],
                                capture_output=True, text=True)
        assert json.loads(denied.stdout)["code"] == 403

        def all_written() -> bool:
            """The last request's event and the watch's are in the log (a stage is
            written as it ends, after the answer: the log can lag the client)."""
            written = events(log)
            return any(e["user"]["username"] == "system:anonymous"
                       and e["stage"] == "ResponseComplete" for e in written) and any(
                e["verb"] == "watch" and e["stage"] == "ResponseStarted" for e in written)

        deadline = time.monotonic() + 60
        while not all_written():
            assert time.monotonic() < deadline, events(log)
            time.sleep(0.1)
    written = events(log)
    assert all(e["kind"] == "Event" and e["apiVersion"] == "audit.k8s.io/v1"
               for e in written)
    assert not [e for e in written if e["requestURI"].startswith(("/healthz", "/readyz"))]
    # the create: two stages of one request, with both objects at RequestResponse
    create = [e for e in written if e["verb"] == "create"
              and e.get("objectRef", {}).get("resource") == "configmaps"]
    assert [e["stage"] for e in create] == ["RequestReceived", "ResponseComplete"]
    assert len({e["auditID"] for e in create}) == 1
    done = create[1]
    assert done["level"] == "RequestResponse"
    assert done["user"] == {"username": "admin",
                            "groups": ["system:masters", "system:authenticated"]}
    assert done["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                 "apiVersion": "v1"}
    assert done["responseStatus"]["code"] == 201
    assert done["requestObject"]["data"] == {"k": "v"}
    assert done["responseObject"]["metadata"]["name"] == "audited"
    assert done["annotations"]["authorization.k8s.io/decision"] == "allow"
    # pods at Metadata, without their RequestReceived stage; the watch has begun answering
    lists = [e for e in written if e.get("objectRef", {}).get("resource") == "pods"]
    assert {e["stage"] for e in lists} == {"ResponseStarted", "ResponseComplete"}
    assert all("requestObject" not in e and "responseObject" not in e for e in lists)
    assert any(e["verb"] == "watch" and e["stage"] == "ResponseStarted" for e in lists)
    # the refusal is audited too
    refused = [e for e in written if e["user"]["username"] == "system:anonymous"
               and e["stage"] == "ResponseComplete"]
    assert refused and refused[-1]["responseStatus"]["code"] == 403
    assert refused[-1]["annotations"]["authorization.k8s.io/decision"] == "forbid"


def test_a_bad_policy_stops_the_api_server_with_one_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                      "rules": [{"level": "Everything"}]}))
    done = subprocess.run([sys.executable, "-m", "minikube_py.apiserver",
                           "--etcd-servers=http://127.0.0.1:1",
                           f"--audit-policy-file={policy}", "--audit-log-path=/dev/null"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "rules[0].level: Unsupported value: 'Everything'" in done.stderr.splitlines()[-1]
