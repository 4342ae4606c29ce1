"""certificates.k8s.io/v1 CertificateSigningRequests, as upstream serves them: the
requester recorded from the request, upstream's validation, the /approval and /status
subresources (`kubectl certificate approve|deny`, a signer issuing), the table of
`kubectl get csr`, and the admission plugins in front of them (CertificateApproval,
CertificateSigning, CertificateSubjectRestriction) on a server that authorizes with
RBAC."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client, config

from minikube_py.api import Obj
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.security import pki
from tests.api_helpers import API
from tests.test_security import SecuredServer, admin_cert, kubectl, server_of_its_own

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

GROUP = "certificates.k8s.io"
CSRS = f"/apis/{GROUP}/v1/certificatesigningrequests"
SIGNER = "example.com/signer"
CLIENT_USAGES = ["digital signature", "client auth"]
# Any well-formed certificate will do: the API does not check it against the request.
ISSUED = pki.new_ca("issued").cert_pem


def unique(prefix: str = "csr") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def request_pem(common_name: str = "alice", organizations: tuple[str, ...] = ()) -> bytes:
    """A PKCS#10 request for a new key, signed by that key, as `openssl req` makes one."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)
                           for o in organizations),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(
        key, hashes.SHA256())
    return request.public_bytes(serialization.Encoding.PEM)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def csr(name: str, *, signer: str = SIGNER, request: bytes | None = None,
        **spec: Any) -> Obj:
    """A CertificateSigningRequest for `signer`, asking for a client certificate."""
    return {"apiVersion": f"{GROUP}/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": b64(request if request is not None else request_pem()),
                     "signerName": signer, "usages": CLIENT_USAGES, **spec}}


def condition(condition_type: str, reason: str = "Test") -> Obj:
    return {"type": condition_type, "status": "True", "reason": reason,
            "message": f"{condition_type} by the test"}


# --- on the shared API server (AlwaysAllow) -------------------------------------------------

@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


async def created(api: API, body: Obj) -> Obj:
    status, answer = await api.post(CSRS, body)
    assert status == 201, answer
    return answer


async def with_conditions(api: API, name: str, subresource: str, *conditions: Obj
                          ) -> tuple[int, Obj]:
    """PUT the request back through a subresource with these conditions added."""
    status, current = await api.get(f"{CSRS}/{name}")
    assert status == 200, current
    current.setdefault("status", {}).setdefault("conditions", []).extend(conditions)
    return await api.put(f"{CSRS}/{name}/{subresource}", current)


async def test_create_records_the_requester_not_what_the_client_claims(api: API) -> None:
    name = unique()
    answer = await created(api, csr(name, username="system:admin", uid="0",
                                    groups=["system:masters"], extra={"x": ["y"]},
                                    expirationSeconds=3600))
    assert answer["spec"]["username"] == "system:anonymous"  # no credentials: anonymous
    assert answer["spec"]["groups"] == ["system:unauthenticated"]
    assert "uid" not in answer["spec"] and "extra" not in answer["spec"]
    assert answer["spec"]["expirationSeconds"] == 3600
    assert answer["status"] == {}
    assert "generation" not in answer["metadata"]


async def test_a_request_cannot_be_created_approved(api: API) -> None:
    name = unique()
    body = csr(name)
    body["status"] = {"conditions": [condition("Approved")], "certificate": b64(ISSUED)}
    answer = await created(api, body)
    assert answer["status"] == {}


@pytest.mark.parametrize(("spec", "message"), [
    ({"request": b64(b"not a request")},
     "spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74, 0x20, 0x61, 0x20, 0x72, 0x65, "
     "0x71, 0x75, 0x65, 0x73, 0x74}: PEM block type must be CERTIFICATE REQUEST"),
    ({"request": b64(ISSUED)},
     "PEM block type must be CERTIFICATE REQUEST"),
    ({"signerName": "example"},
     "spec.signerName: Invalid value: \"example\": must be a fully qualified domain and "
     "path of the form 'example.com/signer-name'"),
    ({"signerName": "example/signer"},
     "spec.signerName: Invalid value: \"example\": should be a domain with at least two "
     "segments separated by dots"),
    ({"signerName": ""}, "spec.signerName: Required value"),
    ({"signerName": "kubernetes.io/legacy-unknown"},
     "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy "
     "signerName is not allowed via this API version"),
    ({"expirationSeconds": 599},
     "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 "
     "seconds (10 minutes)"),
    ({"usages": []}, "spec.usages: Required value"),
    ({"usages": ["client auth", "client auth"]},
     "spec.usages[1]: Duplicate value: \"client auth\""),
    ({"usages": ["mind control"]},
     "spec.usages[0]: Unsupported value: \"mind control\": supported values: \"any\", "
     "\"cert sign\", \"client auth\""),
])
async def test_an_invalid_request_is_refused_with_upstreams_message_and_not_stored(
        api: API, spec: Obj, message: str) -> None:
    name = unique()
    body = csr(name)
    body["spec"].update(spec)
    status, answer = await api.post(CSRS, body)
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert answer["message"].startswith(
        f'CertificateSigningRequest.certificates.k8s.io "{name}" is invalid: ')
    assert message in answer["message"]
    assert (await api.get(f"{CSRS}/{name}"))[0] == 404


async def test_an_update_changes_metadata_only(api: API) -> None:
    name = unique()
    answer = await created(api, csr(name))
    answer["metadata"]["labels"] = {"team": "a"}
    answer["spec"]["signerName"] = "example.com/other"
    answer["status"] = {"conditions": [condition("Approved")]}
    status, updated = await api.put(f"{CSRS}/{name}", answer)
    assert status == 200, updated
    assert updated["metadata"]["labels"] == {"team": "a"}
    assert updated["spec"]["signerName"] == SIGNER
    assert updated["status"] == {}


async def test_approval_sets_only_conditions_with_their_times(api: API) -> None:
    name = unique()
    await created(api, csr(name))
    status, current = await api.get(f"{CSRS}/{name}")
    current["status"] = {"conditions": [condition("Approved")], "certificate": b64(ISSUED)}
    current["spec"]["usages"] = ["server auth"]
    status, approved = await api.put(f"{CSRS}/{name}/approval", current)
    assert status == 200, approved
    assert "certificate" not in approved["status"]
    assert approved["spec"]["usages"] == CLIENT_USAGES
    [approval] = approved["status"]["conditions"]
    assert approval["lastUpdateTime"] and approval["lastTransitionTime"]
    # Approved and Denied exclude each other, and a decision is never taken back
    status, answer = await with_conditions(api, name, "approval", condition("Denied"))
    assert status == 422
    assert ('status.conditions[1].type: Invalid value: "Denied": Approved and Denied '
            "conditions are mutually exclusive") in answer["message"]
    approved["status"]["conditions"] = []
    status, answer = await api.put(f"{CSRS}/{name}/approval", approved)
    assert status == 422
    assert ('status.conditions: Forbidden: updates may not remove a condition of type '
            '"Approved"') in answer["message"]


async def test_the_signer_issues_through_status_once_and_never_approves(api: API) -> None:
    name = unique()
    await created(api, csr(name))
    status, answer = await with_conditions(api, name, "status", condition("Approved"))
    assert status == 422
    assert 'updates may not add a condition of type "Approved"' in answer["message"]
    status, _ = await with_conditions(api, name, "approval", condition("Approved"))
    assert status == 200
    status, current = await api.get(f"{CSRS}/{name}")
    current["status"]["certificate"] = b64(ISSUED)
    current["status"]["conditions"][0]["reason"] = "Rewritten"  # the approval stays as is
    status, issued = await api.put(f"{CSRS}/{name}/status", current)
    assert status == 200, issued
    assert base64.b64decode(issued["status"]["certificate"]) == ISSUED
    assert issued["status"]["conditions"][0]["reason"] == "Test"
    issued["status"]["certificate"] = b64(pki.new_ca("other").cert_pem)
    status, answer = await api.put(f"{CSRS}/{name}/status", issued)
    assert status == 422
    assert ("status.certificate: Forbidden: updates may not modify existing certificate "
            "content") in answer["message"]


async def test_a_certificate_must_be_certificate_pem_blocks(api: API) -> None:
    name = unique()
    await created(api, csr(name))
    status, current = await api.get(f"{CSRS}/{name}")
    current["status"] = {"certificate": b64(request_pem())}
    status, answer = await api.put(f"{CSRS}/{name}/status", current)
    assert status == 422
    assert ('status.certificate: Invalid value: "<certificate data>": only CERTIFICATE PEM '
            'blocks are allowed, found "CERTIFICATE REQUEST"') in answer["message"]


async def test_lists_select_on_the_signer_name(api: API) -> None:
    signer = f"{unique('signer')}.example.com/issuer"
    mine = unique()
    await created(api, csr(mine, signer=signer))
    await created(api, csr(unique()))
    status, listed = await api.get(f"{CSRS}?fieldSelector=spec.signerName={signer}")
    assert status == 200
    assert [item["metadata"]["name"] for item in listed["items"]] == [mine]


async def test_a_system_masters_client_certificate_is_never_requested(api: API) -> None:
    name = unique()
    masters = request_pem("mallory", organizations=("system:masters",))
    status, answer = await api.post(CSRS, csr(
        name, signer="kubernetes.io/kube-apiserver-client", request=masters))
    assert status == 403
    assert answer["message"] == (
        f'certificatesigningrequests.certificates.k8s.io "{name}" is forbidden: use of '
        "kubernetes.io/kube-apiserver-client signer with system:masters group is not "
        "allowed")
    assert (await api.get(f"{CSRS}/{name}"))[0] == 404
    await created(api, csr(unique(), signer="example.com/anything", request=masters))


def test_kubectl_approves_denies_and_gets_csrs(kubectl: Kubectl) -> None:
    approved, denied, pending = unique("approved"), unique("denied"), unique("pending")
    manifests = [csr(approved, expirationSeconds=86400), csr(denied), csr(pending)]
    for manifest in manifests:
        kubectl("create", "-f", "-", input=json.dumps(manifest))
    assert kubectl("certificate", "approve", approved).stdout == (
        f"certificatesigningrequest.certificates.k8s.io/{approved} approved\n")
    assert kubectl("certificate", "deny", denied).stdout == (
        f"certificatesigningrequest.certificates.k8s.io/{denied} denied\n")
    table = kubectl("get", "csr", approved, denied, pending).stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR",
                                "REQUESTEDDURATION", "CONDITION"]
    rows = {row.split()[0]: row.split()[2:] for row in table[1:]}
    assert rows == {approved: [SIGNER, "system:anonymous", "24h", "Approved"],
                    denied: [SIGNER, "system:anonymous", "<none>", "Denied"],
                    pending: [SIGNER, "system:anonymous", "<none>", "Pending"]}
    shown = json.loads(kubectl("get", "csr", approved, "-o", "json").stdout)
    [approval] = shown["status"]["conditions"]
    assert (approval["type"], approval["status"], approval["reason"]) == (
        "Approved", "True", "KubectlApprove")
    denial = kubectl("certificate", "deny", approved, check=False)
    assert denial.returncode != 0 and "is already Approved" in denial.stderr


def test_discovery_lists_csrs_with_their_subresources(kubectl: Kubectl) -> None:
    rows = [line.split() for line in kubectl("api-resources").stdout.splitlines()[1:]]
    assert ["certificatesigningrequests", "csr", f"{GROUP}/v1", "false",
            "CertificateSigningRequest"] in rows
    resources = json.loads(kubectl("get", "--raw", f"/apis/{GROUP}/v1").stdout)["resources"]
    verbs = {r["name"]: r["verbs"] for r in resources}
    assert verbs["certificatesigningrequests/approval"] == ["get", "patch", "update"]
    assert verbs["certificatesigningrequests/status"] == ["get", "patch", "update"]
    explained = kubectl("explain", "csr.status.conditions").stdout
    assert "lastTransitionTime" in explained


# --- on a server that authorizes with RBAC --------------------------------------------------

@pytest.fixture(scope="module")
def ca() -> pki.KeyPair:
    return pki.new_ca()


@pytest.fixture(scope="module")
async def server(ca: pki.KeyPair, fast_tmp: Path) -> AsyncIterator[SecuredServer]:
    async with server_of_its_own(fast_tmp / "csr-rbac", ca,
                                 "--disable-admission-plugins=ServiceAccount") as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: SecuredServer, ca: pki.KeyPair) -> Path:
    return server.kubeconfig("admin", cert=admin_cert(ca))


@pytest.fixture(scope="module")
def bob(server: SecuredServer, admin: Path) -> Iterator[client.CertificatesV1Api]:
    """The token user bob (uid 1001, groups dev and qa), who may create, read, approve
    through and write the status of CSRs, and nothing about signers yet."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "csr-writer"},
            "rules": [{"apiGroups": [GROUP], "verbs": ["create", "get", "list", "update"],
                       "resources": ["certificatesigningrequests",
                                     "certificatesigningrequests/approval",
                                     "certificatesigningrequests/status"]}]}
    made = kubectl(admin, "create", "-f", "-", stdin=json.dumps(role))
    assert made.returncode == 0, made.stderr
    bound = kubectl(admin, "create", "clusterrolebinding", "bob-csr-writer",
                    "--clusterrole=csr-writer", "--user=bob")
    assert bound.returncode == 0, bound.stderr
    api_client = config.new_client_from_config(
        config_file=str(server.kubeconfig("bob", token="bob-s3cret-token")))
    yield client.CertificatesV1Api(api_client)
    api_client.close()


def grant(admin: Path, name: str, verb: str, signers: list[str]) -> None:
    """A ClusterRole allowing `verb` on these signers, bound to bob."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": [GROUP], "resources": ["signers"], "verbs": [verb],
                       "resourceNames": signers}]}
    made = kubectl(admin, "create", "-f", "-", stdin=json.dumps(role))
    assert made.returncode == 0, made.stderr
    bound = kubectl(admin, "create", "clusterrolebinding", name, f"--clusterrole={name}",
                    "--user=bob")
    assert bound.returncode == 0, bound.stderr


def create_as(api: client.CertificatesV1Api, name: str, signer: str = SIGNER,
              organizations: tuple[str, ...] = ()) -> client.V1CertificateSigningRequest:
    return api.create_certificate_signing_request(client.V1CertificateSigningRequest(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1CertificateSigningRequestSpec(
            request=b64(request_pem("bob", organizations)), signer_name=signer,
            usages=CLIENT_USAGES, username="someone-else")))


def add_condition(api: client.CertificatesV1Api, name: str, condition_type: str
                  ) -> client.V1CertificateSigningRequest:
    current = api.read_certificate_signing_request(name)
    current.status.conditions = [client.V1CertificateSigningRequestCondition(
        type=condition_type, status="True", reason="ByBob")]
    return api.replace_certificate_signing_request_approval(name, current)


def refusal(call: Callable[[], Any]) -> tuple[int, str]:
    with pytest.raises(client.ApiException) as refused:
        call()
    return refused.value.status, json.loads(refused.value.body)["message"]


def test_the_official_client_records_the_token_users_identity(
        bob: client.CertificatesV1Api) -> None:
    name = unique()
    made = create_as(bob, name)
    assert made.spec.username == "bob"
    assert made.spec.uid == "1001"
    assert made.spec.groups == ["dev", "qa", "system:authenticated"]
    read = bob.read_certificate_signing_request(name)
    assert read.spec.signer_name == SIGNER and read.status.conditions is None


def test_approving_takes_the_approve_verb_on_the_signer(
        bob: client.CertificatesV1Api, admin: Path) -> None:
    name = unique()
    create_as(bob, name)
    status, message = refusal(lambda: add_condition(bob, name, "Approved"))
    assert status == 403
    assert message == (
        f'certificatesigningrequests.certificates.k8s.io "{name}" is forbidden: user not '
        f'permitted to approve requests with signerName "{SIGNER}"')
    grant(admin, "bob-approves-example", "approve", ["example.com/*"])  # the whole domain
    approved = add_condition(bob, name, "Approved")
    assert [c.type for c in approved.status.conditions] == ["Approved"]


def test_issuing_takes_the_sign_verb_on_the_signer(
        bob: client.CertificatesV1Api, admin: Path) -> None:
    name = unique()
    create_as(bob, name)
    current = bob.read_certificate_signing_request(name)
    current.status.conditions = [client.V1CertificateSigningRequestCondition(
        type="Failed", status="True", reason="NoCapacity")]
    bob.replace_certificate_signing_request_status(name, current)  # no certificate: allowed
    current = bob.read_certificate_signing_request(name)
    current.status.certificate = b64(ISSUED)
    status, message = refusal(lambda: bob.replace_certificate_signing_request_status(
        name, current))
    assert status == 403
    assert message == (
        f'certificatesigningrequests.certificates.k8s.io "{name}" is forbidden: user not '
        f'permitted to sign requests with signerName "{SIGNER}"')
    grant(admin, "bob-signs-example", "sign", [SIGNER])
    issued = bob.replace_certificate_signing_request_status(name, current)
    assert base64.b64decode(issued.status.certificate) == ISSUED


def test_the_bootstrap_approver_role_lets_bob_approve_for_its_signer(
        bob: client.CertificatesV1Api, admin: Path) -> None:
    role = "system:certificates.k8s.io:kube-apiserver-client-approver"
    rules = json.loads(kubectl(admin, "get", "clusterrole", role, "-o", "json").stdout)["rules"]
    assert rules == [{"apiGroups": [GROUP], "resources": ["signers"], "verbs": ["approve"],
                      "resourceNames": ["kubernetes.io/kube-apiserver-client"]}]
    name = unique()
    create_as(bob, name, signer="kubernetes.io/kube-apiserver-client")
    assert refusal(lambda: add_condition(bob, name, "Approved"))[0] == 403
    bound = kubectl(admin, "create", "clusterrolebinding", "bob-kube-apiserver-client",
                    f"--clusterrole={role}", "--user=bob")
    assert bound.returncode == 0, bound.stderr
    assert add_condition(bob, name, "Approved").status.conditions[0].type == "Approved"
    table = kubectl(admin, "get", "csr", name, "--no-headers").stdout.split()
    assert table[2:] == ["kubernetes.io/kube-apiserver-client", "bob", "<none>", "Approved"]


def test_no_one_requests_a_system_masters_client_certificate(
        bob: client.CertificatesV1Api) -> None:
    name = unique()
    status, message = refusal(lambda: create_as(
        bob, name, "kubernetes.io/kube-apiserver-client", ("system:masters",)))
    assert status == 403
    assert message.endswith("use of kubernetes.io/kube-apiserver-client signer with "
                            "system:masters group is not allowed")
