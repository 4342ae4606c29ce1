"""CertificateSubjectRestriction (upstream
plugin/pkg/admission/certificates/subjectrestriction): no one gets a cluster-admin
client certificate by asking for one.

A client certificate from the signer kubernetes.io/kube-apiserver-client authenticates
its holder as the subject's CN, in the groups of its O values. The API server makes
everyone in `system:masters` a cluster admin without asking RBAC, so a request to that
signer whose subject names the organization system:masters is refused when it is
created, whoever sends it.
"""

from __future__ import annotations

from minikube_py.api.certificates import decode_base64, organizations, parse_csr
from minikube_py.apiserver.auth.admission import CREATE, Attributes, Plugin
from minikube_py.apiserver.auth.admission.certauthorization import CERTIFICATES_GROUP

KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
PRIVILEGED_GROUP = "system:masters"


class CertificateSubjectRestriction(Plugin):
    name = "CertificateSubjectRestriction"
    operations = frozenset((CREATE,))
    validating = True

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation in self.operations and attributes.is_resource(
            CERTIFICATES_GROUP, "certificatesigningrequests"))

    async def validate(self, attributes: Attributes) -> None:
        spec = (attributes.obj or {}).get("spec") or {}
        if spec.get("signerName") != KUBE_APISERVER_CLIENT_SIGNER:
            return
        try:
            request = parse_csr(decode_base64(spec.get("request") or ""))
        except ValueError as err:
            raise attributes.forbidden(f"failed to parse CSR: {err}") from None
        if PRIVILEGED_GROUP in organizations(request):
            raise attributes.forbidden(f"use of {KUBE_APISERVER_CLIENT_SIGNER} signer with "
                                       f"{PRIVILEGED_GROUP} group is not allowed")
