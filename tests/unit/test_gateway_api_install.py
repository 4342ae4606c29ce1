"""examples/gateway-api/standard-install.yaml, the Gateway API CRDs a user (and
labs/gateway/) applies, is the standard channel the tests apply from the shared data
(../shared/data/crds/gateway-api/): the same objects, so what the lab installs is what
tests/e2e/test_ingress_gateway.py and tests/test_gateway_controller.py checked."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "examples" / "gateway-api" / "standard-install.yaml"
# ../shared/data/crds/gateway-api from the checkout: /work/main's parent, or a worktree's
# ancestor
CRDS = next((parent / "shared/data/crds/gateway-api" for parent in Path(__file__).resolve().parents
             if (parent / "shared/data/crds/gateway-api").is_dir()), None)


def test_the_install_file_holds_the_shared_standard_channel() -> None:
    if CRDS is None:
        pytest.skip("no ../shared/data/crds/gateway-api")
    shared = [document for path in sorted(CRDS.glob("gateway.networking.k8s.io_*.yaml"))
              for document in yaml.load_all(path.read_text(), LOADER) if document]
    installed = [document for document in yaml.load_all(INSTALL.read_text(), LOADER)
                 if document]
    assert installed == shared
    assert {document["metadata"]["annotations"]["gateway.networking.k8s.io/channel"]
            for document in installed if document["kind"] == "CustomResourceDefinition"
            } == {"standard"}
