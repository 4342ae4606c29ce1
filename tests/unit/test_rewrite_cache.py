"""tools/rewrite_tests.py writes the cache pytest reads the test modules from: with the
pytest installed, every module pytest rewrites has a cached file pytest accepts."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, get_cache_dir

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("rewrite_tests", ROOT / "tools" / "rewrite_tests.py")
assert _spec is not None and _spec.loader is not None
rewrite_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rewrite_tests)


def test_every_rewritten_module_is_cached_as_pytest_reads_it() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "rewrite_tests.py")],
                          capture_output=True, text=True, timeout=300, check=True)
    assert "not written" not in done.stderr, done.stderr
    modules = rewrite_tests.rewritten_modules()
    assert ROOT / "tests" / "conftest.py" in modules
    assert ROOT / "tests" / "node_fixtures.py" in modules  # conftest.py's pytest_plugins
    assert Path(__file__).resolve() in modules
    stale = [module for module in modules
             if _read_pyc(module, get_cache_dir(module) / (module.name[:-3] + PYC_TAIL)) is None]
    assert stale == []
