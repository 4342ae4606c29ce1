"""Pytest plugin: a real containerd node for the session, with the shipped images imported.

`containerd_node` starts one containerd (CRI on runc, a CNI bridge on its own pod CIDR)
under the session's scratch dir and tears it down completely at the end. A crashed run
cannot do that, so the next test run first removes what such a run left of its node.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from minikube_py.cluster.runtime_setup import (
    Containerd,
    NodeRuntimeConfig,
    cleanup_stale,
    free_pod_cidr,
    load_image,
    runtime_missing,
)
from minikube_py.images.catalog import build_catalog
from tests.conftest import SCRATCH_PREFIX, TMPFS

NODE_DIR = "containerd-node"
"""The node's base dir inside the session's scratch dir (fast_tmp)."""

@dataclass(frozen=True)
class ContainerdNode:
    """The session's node: its runtime config, CRI endpoint, and the image archives."""

    config: NodeRuntimeConfig
    images_dir: Path

    @property
    def endpoint(self) -> str:
        return self.config.endpoint

    @property
    def pod_cidr(self) -> str:
        return self.config.pod_cidr

    @property
    def base_dir(self) -> Path:
        return self.config.base_dir


def _node_dirs_of_dead_runs() -> list[Path]:
    """The node dirs in scratch dirs whose test run (named by its pid) is gone."""
    found = []
    for root in {TMPFS, Path(tempfile.gettempdir())}:
        for scratch in root.glob(f"{SCRATCH_PREFIX}*"):
            pid = scratch.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
            node_dir = scratch / NODE_DIR
            if pid.isdigit() and not Path(f"/proc/{pid}").exists() and node_dir.is_dir():
                found.append(node_dir)
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before fast_tmp removes a crashed run's scratch dir: remove its node's pods, shims,
    mounts, bridge and iptables rules, which deleting files alone cannot."""
    if runtime_missing() is None:
        for node_dir in _node_dirs_of_dead_runs():
            asyncio.run(cleanup_stale(node_dir))


@pytest.fixture(scope="session")
async def containerd_node(fast_tmp: Path) -> AsyncIterator[ContainerdNode]:
    """One containerd node for the session, with pause, busybox and echo imported."""
    reason = runtime_missing()
    if reason is not None:
        pytest.skip(reason)
    images_dir = fast_tmp / "images"
    archives = await asyncio.to_thread(build_catalog, images_dir)
    config = NodeRuntimeConfig(node_name=f"test-{os.getpid()}", base_dir=fast_tmp / NODE_DIR,
                               pod_cidr=free_pod_cidr())
    async with Containerd(config):
        for archive in archives:
            await load_image(config, archive.path)
        yield ContainerdNode(config=config, images_dir=images_dir)
