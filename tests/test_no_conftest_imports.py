"""No test module imports a conftest by name.

There are several conftest.py files (tests/, tests/spark/, tests/bench/); under pytest's default
import mode `import conftest` returns whichever one was loaded first, so such an import works
when a directory is run alone and breaks collection of the whole suite. Shared helpers live in
tests/support/ (e.g. `support.names.unique_db_name`)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent


def conftest_imports() -> list[str]:
    found = []
    for path in sorted(TESTS_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "conftest" or n.endswith(".conftest") for n in names):
                found.append(f"{path.relative_to(TESTS_DIR)}:{node.lineno}")
    return found


def test_no_test_imports_a_conftest() -> None:
    assert conftest_imports() == []
