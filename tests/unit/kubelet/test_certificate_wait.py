"""How a kubelet waits for its CSR's certificate (kubelet/certificate.py `_issued`) when
the watch cannot start where it left off: the API server answers a watch from a version
older than it keeps with one ERROR event (410 Expired), as after it restarted. The
kubelet must read the CSR again and watch from there, not ask again from the same
version (which loops at full speed and never sees the certificate)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.kubelet import certificate

EXPIRED = {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410,
           "message": "too old resource version: 5 (40)"}


def csr(version: str, *, issued: bytes = b"") -> Obj:
    status: Obj = {}
    if issued:
        status = {"conditions": [{"type": "Approved", "status": "True"}],
                  "certificate": base64.b64encode(issued).decode()}
    return {"metadata": {"name": "csr-abc", "resourceVersion": version}, "status": status}


class CSRs:
    """The CSR API as the kubelet sees it: each watch replays the events scripted for the
    version it starts from (none: it ends, as at its timeout); get reads the CSR now."""

    def __init__(self, events: dict[str, list[tuple[str, Obj]]], now: Obj | None) -> None:
        self.events = events
        self.now = now
        self.watched_from: list[str] = []
        self.gets = 0

    async def watch(self, *, field_selector: str, resource_version: str,
                    timeout_seconds: int) -> AsyncIterator[tuple[str, Obj]]:
        assert field_selector == "metadata.name=csr-abc"
        self.watched_from.append(resource_version)
        if len(self.watched_from) > 10:
            raise AssertionError(f"watched again and again from {self.watched_from}")
        for event in self.events.get(resource_version, []):
            yield event

    async def get(self, name: str) -> Obj:
        self.gets += 1
        if self.now is None:
            raise NotFound({"message": f'certificatesigningrequests "{name}" not found',
                            "reason": "NotFound"}, 404)
        return self.now


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(certificate, "RELIST_PAUSE", 0.0)


async def test_an_expired_watch_reads_the_csr_again_and_watches_from_its_version() -> None:
    api = CSRs({"5": [("ERROR", EXPIRED)],
                "40": [("MODIFIED", csr("41", issued=b"the certificate"))]},
               now=csr("40"))
    assert await certificate._issued(api, csr("5")) == b"the certificate"
    assert api.watched_from == ["5", "40"] and api.gets == 1


async def test_a_certificate_issued_while_the_watch_was_down_is_found_by_the_read() -> None:
    api = CSRs({"5": [("ERROR", EXPIRED)]}, now=csr("40", issued=b"signed meanwhile"))
    assert await certificate._issued(api, csr("5")) == b"signed meanwhile"
    assert api.watched_from == ["5"]


async def test_a_csr_deleted_while_the_watch_was_down_fails_the_request() -> None:
    api = CSRs({"5": [("ERROR", EXPIRED)]}, now=None)
    with pytest.raises(certificate.CertificateRequestFailed, match="csr-abc was deleted"):
        await certificate._issued(api, csr("5"))


async def test_a_watch_that_ends_resumes_from_the_last_version_it_saw() -> None:
    api = CSRs({"5": [("BOOKMARK", {"metadata": {"resourceVersion": "9"}})],
                "9": [("MODIFIED", csr("12", issued=b"after the bookmark"))]}, now=None)
    assert await certificate._issued(api, csr("5")) == b"after the bookmark"
    assert api.watched_from == ["5", "9"] and api.gets == 0
