"""CertificateSigning (upstream plugin/pkg/admission/certificates/signing): issuing the
certificate of a CertificateSigningRequest takes the `sign` verb on its signer.

An update of certificatesigningrequests/status that changes status.certificate is
refused unless the user may `sign` the `signers` named after the stored request's
signerName, or its domain's `<domain>/*` (certauthorization.py). A status write that
leaves the certificate alone (a Failed condition, say) needs nothing more.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.apiserver.auth.admission import UPDATE, Attributes, Plugin
from minikube_py.apiserver.auth.admission.certauthorization import (
    CERTIFICATES_GROUP,
    authorized_for_signer_name,
)
from minikube_py.apiserver.auth.authorization import Authorizer


class CertificateSigning(Plugin):
    name = "CertificateSigning"
    operations = frozenset((UPDATE,))
    validating = True

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation in self.operations and attributes.is_resource(
            CERTIFICATES_GROUP, "certificatesigningrequests", "status"))

    async def validate(self, attributes: Attributes) -> None:
        old, new = attributes.old or {}, attributes.obj or {}
        if _certificate(old) == _certificate(new):
            return
        signer = (old.get("spec") or {}).get("signerName", "")
        if not authorized_for_signer_name(self.authorizer, attributes.user, "sign", signer):
            raise attributes.forbidden(
                f'user not permitted to sign requests with signerName "{signer}"')


def _certificate(csr: Obj) -> str:
    return (csr.get("status") or {}).get("certificate") or ""
