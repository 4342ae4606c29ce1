"""csrapproving: approve kubelets' client certificates when the requester may have one.

    CSR, not yet approved, denied or issued
      -> a kubelet client certificate request (signer kube-apiserver-client-kubelet,
         O system:nodes, CN system:node:<name>, no SANs, client usages)?      else: leave it
      -> CN == the requester (a kubelet renewing its own)? SubjectAccessReview:
         create certificatesigningrequests/selfnodeclient        allowed -> Approved
      -> SubjectAccessReview: create certificatesigningrequests/nodeclient
         (bootstrap tokens are bound to it)                       allowed -> Approved
      -> neither: retried with backoff, as the requester may be granted it later

RBAC decides who may have a node's certificate: kubeadm binds `nodeclient` to the group
system:bootstrappers:kubeadm:default-node-token and `selfnodeclient` to system:nodes.
Everything else (other signers, serving certificates) waits for a person: `kubectl
certificate approve`. Upstream: pkg/controller/certificates/approver/sarapprove.go.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography import x509

from minikube_py.api import Obj
from minikube_py.controllers.base import ExpectedSyncError
from minikube_py.controllers.certificates import GROUP, PLURAL, CertificateController
from minikube_py.security import csr as csrs


@dataclass(frozen=True)
class Recognizer:
    """A kind of request this controller approves, and the permission it takes."""

    subresource: str
    message: str
    self_only: bool


RECOGNIZERS = (
    Recognizer("selfnodeclient",
               "Auto approving self kubelet client certificate after SubjectAccessReview.",
               self_only=True),
    Recognizer("nodeclient",
               "Auto approving kubelet client certificate after SubjectAccessReview.",
               self_only=False),
)


def recognizes(recognizer: Recognizer, csr: Obj, request: x509.CertificateSigningRequest
               ) -> bool:
    spec = csr["spec"]
    if spec.get("signerName") != csrs.KUBELET_CLIENT:
        return False
    if csrs.kubelet_client_error(request, spec.get("usages") or []) is not None:
        return False
    return not recognizer.self_only or spec.get("username") == csrs.common_name(request)


class CSRApprovingController(CertificateController):
    name = "csrapproving"

    async def handle(self, csr: Obj) -> None:
        if csrs.certificate_of(csr) or csrs.has_condition(csr, "Approved") or (
                csrs.has_condition(csr, "Denied")):
            return
        try:
            request = csrs.request_of(csr)
        except ValueError as error:
            raise ExpectedSyncError(
                f"unable to parse csr {csr['metadata']['name']!r}: {error}") from error
        tried = []
        for recognizer in RECOGNIZERS:
            if not recognizes(recognizer, csr, request):
                continue
            tried.append(recognizer.subresource)
            if await self.authorized(csr, recognizer.subresource):
                await self.approve(csr, recognizer.message)
                return
        if tried:
            raise ExpectedSyncError(
                f"recognized csr {csr['metadata']['name']!r} as {tried} but subject access "
                "review was not approved")

    async def authorized(self, csr: Obj, subresource: str) -> bool:
        """May the requester create this subresource? (a SubjectAccessReview)"""
        spec = csr["spec"]
        review = {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": spec.get("username", ""), "uid": spec.get("uid", ""),
                     "groups": spec.get("groups") or [], "extra": spec.get("extra") or {},
                     "resourceAttributes": {"group": GROUP, "resource": PLURAL,
                                            "verb": "create", "subresource": subresource}}}
        answer = await self.client.resource(
            "subjectaccessreviews", "authorization.k8s.io").create(review)
        return bool((answer.get("status") or {}).get("allowed"))

    async def approve(self, csr: Obj, message: str) -> None:
        await self.csrs_api.update(csrs.approved(csr, "AutoApproved", message),
                                   subresource="approval")

