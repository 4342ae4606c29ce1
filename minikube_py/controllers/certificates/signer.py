"""csrsigning: sign approved requests for the kubernetes.io signers with the cluster CA.

    CSR approved, not failed, no certificate yet, signerName one of
    kube-apiserver-client, kube-apiserver-client-kubelet, kubelet-serving, legacy-unknown
      -> the request is of the shape its signer promises (signer_error)?
           no  -> condition Failed, reason SignerValidationFailure (final: never signed)
           yes -> sign with --cluster-signing-cert-file/--cluster-signing-key-file for
                  --cluster-signing-duration, or spec.expirationSeconds when shorter
                  -> status.certificate, through /status

Without a signing certificate and key the controller does not run (as upstream, which
then logs that it skips the CSR signer). Upstream: pkg/controller/certificates/signer.
"""

from __future__ import annotations

import base64
import datetime

from minikube_py.api import Obj
from minikube_py.controllers.base import ControllerContext, ExpectedSyncError
from minikube_py.controllers.certificates import CertificateController
from minikube_py.security import csr as csrs
from minikube_py.security.pki import KeyPair

SIGNERS = (csrs.KUBELET_SERVING, csrs.KUBELET_CLIENT, csrs.KUBE_APISERVER_CLIENT,
           csrs.LEGACY_UNKNOWN)


class CSRSigningController(CertificateController):
    name = "csrsigning"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.ca: KeyPair | None = ctx.options.cluster_signing_ca
        self.ttl = datetime.timedelta(seconds=ctx.options.cluster_signing_duration)

    async def run(self, workers: int | None = None) -> None:
        if self.ca is None:
            return  # no --cluster-signing-cert-file: nothing signs
        await super().run(workers)

    async def handle(self, csr: Obj) -> None:
        spec = csr["spec"]
        if (not csrs.is_approved(csr) or csrs.has_condition(csr, "Failed")
                or csrs.certificate_of(csr) or spec.get("signerName") not in SIGNERS):
            return
        assert self.ca is not None
        name = csr["metadata"]["name"]
        try:
            request = csrs.request_of(csr)
        except ValueError as error:
            raise ExpectedSyncError(f"unable to parse csr {name!r}: {error}") from error
        usages = list(spec.get("usages") or [])
        problem = csrs.signer_error(spec["signerName"], request, usages)
        if problem is not None:
            await self.fail(csr, problem)
            return
        try:
            certificate = csrs.sign(request, usages,
                                    csrs.duration(spec.get("expirationSeconds"), self.ttl),
                                    self.ca)
        except ValueError as error:
            raise ExpectedSyncError(f"error auto signing csr: {error}") from error
        status = csr.get("status") or {}
        await self.csrs_api.update_status({**csr, "status": {
            **status, "certificate": base64.b64encode(certificate).decode()}})

    async def fail(self, csr: Obj, message: str) -> None:
        """Condition Failed: the signer will never sign this request."""
        status = csr.get("status") or {}
        now = self.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        condition = {"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                     "message": message, "lastUpdateTime": now}
        await self.csrs_api.update_status({**csr, "status": {
            **status, "conditions": [*(status.get("conditions") or []), condition]}})
