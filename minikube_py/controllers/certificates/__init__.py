"""The certificate controllers: what turns a CertificateSigningRequest into a certificate.

    kubelet: POST certificatesigningrequests (CN system:node:n, O system:nodes)
      -> csrapproving  (approver.py): a kubelet's client CSR, and the requester may ask for
                       one (SubjectAccessReview on certificatesigningrequests/nodeclient or
                       /selfnodeclient)? -> condition Approved, through /approval
      -> csrsigning    (signer.py): approved, for a signer it runs, of the shape that
                       signer promises? -> status.certificate, through /status;
                       otherwise condition Failed
      -> kubelet: reads status.certificate, writes it beside its key
    csrcleaner (cleaner.py) deletes requests an hour after they were answered, a day after
    they were left pending.

Upstream: pkg/controller/certificates. Each controller keys CSRs by name (they are
cluster-scoped) and handles one at a time, level-based: a CSR already answered is left
alone, so a restart carries on where it stopped.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.controllers.base import Controller, ControllerContext

GROUP = "certificates.k8s.io"
PLURAL = "certificatesigningrequests"


class CertificateController(Controller):
    """A controller that handles every CertificateSigningRequest (upstream's
    CertificateController with its handler)."""

    # Queue every change (a polling controller reads the store on its own schedule).
    queued: ClassVar[bool] = True

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.csrs_api = self.client.resource(PLURAL, GROUP)
        informer = self.informer(PLURAL, GROUP)
        self.csrs = informer.store
        if self.queued:
            self.watch_own_kind(informer)

    async def sync(self, key: str) -> None:
        csr = self.csrs.get(key)
        if csr is not None:
            await self.handle(csr)

    @abstractmethod
    async def handle(self, csr: Obj) -> None:
        """Act on one request, as it is now."""
