"""May this user approve (or sign) requests for this signer? (upstream
pkg/certauthorization, IsAuthorizedForSignerName)

Signers are not stored anywhere: `signers` is a resource of certificates.k8s.io that
exists only for authorization, its names the signer names. A user may act for the signer
`example.com/foo` when allowed the verb on `signers` named `example.com/foo`, or on the
whole domain, `example.com/*`:

    rules:
    - apiGroups: ["certificates.k8s.io"]
      resources: ["signers"]
      resourceNames: ["example.com/*"]
      verbs: ["approve"]
"""

from __future__ import annotations

from minikube_py.apiserver.auth import authorization
from minikube_py.apiserver.auth.authentication import UserInfo

CERTIFICATES_GROUP = "certificates.k8s.io"


def authorized_for_signer_name(authorizer: authorization.Authorizer, user: UserInfo,
                               verb: str, signer_name: str) -> bool:
    """The verb on the signer itself, or else on every signer of its domain."""
    domain = signer_name.split("/")[0]
    return any(
        authorizer.authorize(authorization.Attributes(
            user, verb, True, api_group=CERTIFICATES_GROUP, resource="signers",
            name=name)).allowed
        for name in (signer_name, f"{domain}/*"))
