"""CertificateApproval (upstream plugin/pkg/admission/certificates/approval): approving
or denying a CertificateSigningRequest takes the `approve` verb on its signer.

An update of certificatesigningrequests/approval is refused unless the user may
`approve` the `signers` named after the stored request's signerName, or its domain's
`<domain>/*` (certauthorization.py). The stored request counts, not the write: the
write cannot change the signer to one the user may approve.
"""

from __future__ import annotations

from minikube_py.apiserver.auth.admission import UPDATE, Attributes, Plugin
from minikube_py.apiserver.auth.admission.certauthorization import (
    CERTIFICATES_GROUP,
    authorized_for_signer_name,
)
from minikube_py.apiserver.auth.authorization import Authorizer


class CertificateApproval(Plugin):
    name = "CertificateApproval"
    operations = frozenset((UPDATE,))
    validating = True

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation in self.operations and attributes.is_resource(
            CERTIFICATES_GROUP, "certificatesigningrequests", "approval"))

    async def validate(self, attributes: Attributes) -> None:
        signer = ((attributes.old or {}).get("spec") or {}).get("signerName", "")
        if not authorized_for_signer_name(self.authorizer, attributes.user, "approve", signer):
            raise attributes.forbidden(
                f'user not permitted to approve requests with signerName "{signer}"')
