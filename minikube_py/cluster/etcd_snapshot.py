"""etcd backup and restore: etcdctl's snapshot commands, and the revision bump etcd 3.4 lacks.

Seed 001's disaster recovery, and what each step is here:

    backup      etcdctl snapshot save FILE       (a consistent copy of the keyspace)
                etcdctl snapshot status FILE     (its hash, revision, keys and size)
    restore     stop every API server (nothing may write, or read a half-restored etcd)
                etcdctl snapshot restore FILE --data-dir=NEW   (a new member's data)
                start etcd on NEW, API servers still stopped
                bump_revision(N), mark_compacted()            (etcdutl's --bump-revision
                                                               N --mark-compacted, online)
                start the API servers: every watch from before gets 410 Gone and lists

Why the bump: a snapshot takes etcd back to its revision R, but clients have seen
resourceVersions up to some R' > R. Without a bump, new writes would reuse R+1 ... R',
and a client would take a new object at resourceVersion R+5 for the one it saw at R+5.
Why the compaction: a watch from a version of the old history must not be served (its
events no longer exist); a compacted revision makes the API server answer 410 Gone, and
every informer lists again. etcd 3.5's `etcdutl snapshot restore` does both offline, in
the snapshot's database; Debian 12 ships etcd 3.4.23, whose restore has neither flag, so
the same two steps are done here through etcd's client API before any API server starts.
Only etcd's client URL and TLS files are needed, however etcd is run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError, EtcdTLS

ETCDCTL = "etcdctl"
# The key the bump writes, then deletes: outside /registry, so no API server reads it.
BUMP_KEY = b"/minikube-py/bump-revision"
BUMP_WRITERS = 64


class SnapshotError(Exception):
    """etcdctl failed (its own message says why), or etcd refused the bump."""


@dataclass(frozen=True)
class SnapshotStatus:
    """What `etcdctl snapshot status -w json` says of a snapshot file."""

    hash: int
    revision: int
    total_keys: int
    total_size: int


def etcdctl_environment(endpoint: str | None = None, tls: EtcdTLS | None = None
                        ) -> dict[str, str]:
    """The environment etcdctl reads: API v3, and the endpoint and TLS files if given."""
    environment = {**os.environ, "ETCDCTL_API": "3"}
    if endpoint is not None:
        environment["ETCDCTL_ENDPOINTS"] = endpoint
    if tls is not None:
        environment |= {"ETCDCTL_CACERT": str(tls.ca_file), "ETCDCTL_CERT": str(tls.cert_file),
                        "ETCDCTL_KEY": str(tls.key_file)}
    return environment


def _etcdctl(arguments: Sequence[str], environment: dict[str, str]) -> str:
    """Run etcdctl; its output, or SnapshotError with its error line."""
    try:
        result = subprocess.run([ETCDCTL, *arguments], env=environment, capture_output=True,
                                text=True, timeout=120, check=False)
    except FileNotFoundError as missing:
        raise SnapshotError("etcdctl is not on PATH: install it (apt-get install "
                            "etcd-client)") from missing
    if result.returncode != 0:
        message = result.stderr.strip().splitlines()
        raise SnapshotError(f"etcdctl {arguments[0]} {arguments[1]} failed: "
                            f"{message[-1] if message else result.returncode}")
    return result.stdout


def snapshot_save(path: Path, endpoint: str, tls: EtcdTLS | None = None) -> SnapshotStatus:
    """Backup: `etcdctl snapshot save` from the member at endpoint, then its status."""
    _etcdctl(["snapshot", "save", str(path)], etcdctl_environment(endpoint, tls))
    return snapshot_status(path)


def snapshot_status(path: Path) -> SnapshotStatus:
    """`etcdctl snapshot status -w json`: a snapshot file's hash, revision, keys and size."""
    status = json.loads(_etcdctl(["snapshot", "status", str(path), "--write-out=json"],
                                 etcdctl_environment()))
    return SnapshotStatus(hash=status["hash"], revision=status["revision"],
                          total_keys=status["totalKey"], total_size=status["totalSize"])


def snapshot_restore(path: Path, data_dir: Path, *, name: str, peer_url: str,
                     initial_cluster_token: str = "etcd-cluster") -> None:
    """Restore: a new single member's data directory from a snapshot file (which must not
    exist yet: etcdctl refuses to overwrite one)."""
    _etcdctl(["snapshot", "restore", str(path), f"--data-dir={data_dir}", f"--name={name}",
              f"--initial-cluster={name}={peer_url}",
              f"--initial-cluster-token={initial_cluster_token}",
              f"--initial-advertise-peer-urls={peer_url}"], etcdctl_environment())


async def bump_revision(client: EtcdClient, bump: int) -> int:
    """--bump-revision: move etcd's revision forward by at least `bump`; the new revision.

    Each write is one revision, so BUMP_WRITERS writers put BUMP_KEY until the revision
    has moved far enough; deleting the key then leaves nothing behind but the revisions
    (and a tombstone that mark_compacted removes).
    """
    if bump < 1:
        raise SnapshotError(f"--bump-revision must be at least 1, not {bump}")
    target = await client.current_revision() + bump

    async def writer() -> None:
        while await client.put(BUMP_KEY, b"") < target:
            pass

    try:
        async with asyncio.TaskGroup() as writers:
            for _ in range(BUMP_WRITERS):
                writers.create_task(writer())
        revision, _ = await client.delete(BUMP_KEY)
    except* EtcdError as failed:
        raise SnapshotError(f"bumping the revision failed: {failed.exceptions[0]}") from None
    return revision


async def mark_compacted(client: EtcdClient) -> int:
    """--mark-compacted: compact at the current revision; that revision.

    A watch or read at any older revision then fails with etcd's "required revision has
    been compacted", which the API server answers with 410 Gone.
    """
    revision = await client.current_revision()
    try:
        await client.compact(revision, physical=True)
    except EtcdError as failed:
        raise SnapshotError(f"compacting at {revision} failed: {failed}") from None
    return revision


async def bump_and_compact(endpoint: str, tls: EtcdTLS | None, bump: int) -> int:
    """Both steps, on the etcd at endpoint; its revision after them."""
    async with EtcdClient([endpoint], tls=tls, request_timeout=30.0) as client:
        await bump_revision(client, bump)
        return await mark_compacted(client)


def add_etcd_bump_revision_command(
        commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `etcd-bump-revision` to the minikube-py command line."""
    bump = commands.add_parser(
        "etcd-bump-revision",
        help="after `etcdctl snapshot restore`, before any API server starts: move etcd's "
             "revision forward and compact (etcdutl's --bump-revision --mark-compacted, "
             "which Debian's etcd 3.4 lacks); reads etcdctl's ETCDCTL_* variables")
    bump.add_argument("--bump-revision", type=int, required=True, metavar="N",
                      help="how far to move the revision: more than the writes made since "
                           "the snapshot was taken (e.g. 100000)")
    bump.set_defaults(run=etcd_bump_revision)


def etcd_bump_revision(args: argparse.Namespace) -> None:
    """`minikube-py etcd-bump-revision --bump-revision N`, on the etcd named by
    ETCDCTL_ENDPOINTS (and ETCDCTL_CACERT/CERT/KEY), as `minikube-py etcdctl-env` sets."""
    endpoint = os.environ.get("ETCDCTL_ENDPOINTS", "").split(",")[0]
    if not endpoint:
        raise SystemExit("error: ETCDCTL_ENDPOINTS is not set: "
                         "source <(minikube-py etcdctl-env) first")
    files = [os.environ.get(name, "") for name in ("ETCDCTL_CACERT", "ETCDCTL_CERT",
                                                   "ETCDCTL_KEY")]
    tls = EtcdTLS(*files) if all(files) else None
    try:
        revision = asyncio.run(bump_and_compact(endpoint, tls, args.bump_revision))
    except (SnapshotError, EtcdError, ValueError) as failed:
        raise SystemExit(f"error: {failed}") from None
    print(f"revision bumped by at least {args.bump_revision} and compacted at {revision}")
