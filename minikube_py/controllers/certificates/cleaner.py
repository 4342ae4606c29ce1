"""csrcleaner: delete certificate requests nobody needs any more.

    every hour, every CSR:
      issued, approved more than an hour ago  -> delete
      issued, its certificate expired         -> delete
      denied more than an hour ago            -> delete
      pending (no condition) for a day        -> delete

Kubelets ask for a new certificate on every rotation; without this the requests would
pile up. Upstream: pkg/controller/certificates/cleaner/cleaner.go.
"""

from __future__ import annotations

import asyncio
import datetime
import logging

from cryptography import x509

from minikube_py.api import Obj
from minikube_py.client.errors import ClientError, NotFound
from minikube_py.controllers.certificates import CertificateController
from minikube_py.security import csr as csrs

log = logging.getLogger(__name__)

POLLING_INTERVAL = 3600.0
APPROVED_EXPIRATION = datetime.timedelta(hours=1)
DENIED_EXPIRATION = datetime.timedelta(hours=1)
PENDING_EXPIRATION = datetime.timedelta(hours=24)


def _time(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _older_than(value: str | None, age: datetime.timedelta, now: datetime.datetime) -> bool:
    moment = _time(value)
    return moment is not None and now - moment > age


def why_clean(csr: Obj, now: datetime.datetime) -> str | None:
    """The reason this CSR is due for deletion, or None to keep it."""
    conditions = csrs.conditions(csr)
    certificate = csrs.certificate_of(csr)
    for condition in conditions:
        updated = condition.get("lastUpdateTime")
        if condition.get("type") == "Approved" and certificate:
            if _older_than(updated, APPROVED_EXPIRATION, now):
                return f"it is more than {APPROVED_EXPIRATION} old and approved"
            try:
                expires = x509.load_pem_x509_certificate(certificate).not_valid_after_utc
            except ValueError:
                continue
            if now > expires:
                return "the associated certificate is expired"
        if condition.get("type") == "Denied" and _older_than(updated, DENIED_EXPIRATION, now):
            return f"it is more than {DENIED_EXPIRATION} old and denied"
    created = csr["metadata"].get("creationTimestamp")
    if not conditions and _older_than(created, PENDING_EXPIRATION, now):
        return f"it is more than {PENDING_EXPIRATION} old and unhandled"
    return None


class CSRCleanerController(CertificateController):
    name = "csrcleaner"
    queued = False

    async def run(self, workers: int | None = None) -> None:
        """Not queue-driven: look at every request once an hour."""
        while True:
            for csr in self.csrs.list():
                try:
                    await self.handle(csr)
                except ClientError as error:
                    log.warning("Error while attempting to clean CSR %r: %s",
                                csr["metadata"]["name"], error)
            await asyncio.sleep(POLLING_INTERVAL)

    async def handle(self, csr: Obj) -> None:
        reason = why_clean(csr, self.now())
        if reason is None:
            return
        name = csr["metadata"]["name"]
        log.info("Cleaning CSR %r as %s.", name, reason)
        try:
            await self.csrs_api.delete(name)
        except NotFound:
            pass
