"""Write pytest's cache of the test modules' rewritten bytecode, once, before a run.

pytest rewrites the asserts of each module it imports as a test module (test_*.py,
conftest.py and the plugins conftest.py names) and keeps the result in
__pycache__/<module>.cpython-311-pytest-<version>.pyc, unless PYTHONDONTWRITEBYTECODE is
set, as it is where CI runs: there every xdist worker rewrote all of them on every run,
16 of the 26 CPU-s its collection took. Run by `make bytecode`: only what changed since is
rewritten. pytest checks each cached file's source hash before it uses it and rewrites
whatever this did not write, so a pytest whose internals moved only makes the run slower:
this then says so and writes nothing.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def rewritten_modules() -> list[Path]:
    """The files pytest imports with their asserts rewritten."""
    found = sorted({*TESTS.rglob("test_*.py"), *TESTS.rglob("*_test.py"),
                    *TESTS.rglob("conftest.py")})
    for conftest in TESTS.rglob("conftest.py"):
        for node in ast.parse(conftest.read_text()).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == "pytest_plugins"):
                for plugin in ast.literal_eval(node.value):
                    found.append(ROOT / (plugin.replace(".", "/") + ".py"))
    return found


def main() -> int:
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc_fp,
            get_cache_dir,
        )
    except ImportError as err:
        print(f"rewrite_tests: pytest's rewrite cache not written ({err}): each worker "
              "rewrites the test modules itself", file=sys.stderr)
        return 0
    written = 0
    for module in rewritten_modules():
        pyc = get_cache_dir(module) / (module.name[:-3] + PYC_TAIL)
        try:
            if _read_pyc(module, pyc) is not None:
                continue
            source_hash, code = _rewrite_test(module, None)
        except (TypeError, AttributeError) as err:  # the private functions changed
            print(f"rewrite_tests: pytest's rewrite cache not written ({err}): each worker "
                  "rewrites the test modules itself", file=sys.stderr)
            return 0
        pyc.parent.mkdir(exist_ok=True)
        partial = pyc.with_name(f"{pyc.name}.{os.getpid()}")
        with partial.open("wb") as out:
            _write_pyc_fp(out, source_hash, code)
        partial.replace(pyc)  # atomic: a pytest reading it sees all of it or nothing
        written += 1
    if written:
        print(f"rewrite_tests: {written} test modules rewritten for pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
