"""Layers import one way: storage <- sql <- planner <- executor <- server (STYLE.md, DESIGN.md 4).

Every .py file under the five packages is parsed with `ast`; an import of a higher layer from a
lower one fails the test (type-checking-only imports count too: the layering is about
dependencies, not runtime). Every module is also imported, so a module that does not even import
fails here first, with its traceback.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("storage", "sql", "planner", "executor", "server")
RANK = {name: i for i, name in enumerate(LAYERS)}

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def module_files() -> list[Path]:
    files: list[Path] = []
    for layer in LAYERS:
        root = REPO_ROOT / layer
        if root.is_dir():
            files.extend(p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts)
    return files


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO_ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, own: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in the file; `own` is its module name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    own = own if own is not None else module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base_parts = package.split(".") if package else []
                up = node.level - 1
                if up > len(base_parts):
                    found.append((node.lineno, "<relative import beyond top-level package>"))
                    continue
                base = ".".join(base_parts[: len(base_parts) - up] if up else base_parts)
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.append((node.lineno, target))
        elif isinstance(node, ast.Call):
            # importlib.import_module("executor.x") / __import__("server") with a literal name
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((node.lineno, arg.value))
    return found


def layer_of(module: str) -> str | None:
    top = module.split(".", 1)[0]
    return top if top in RANK else None


FILES = module_files()


def test_layer_packages_exist() -> None:
    missing = [layer for layer in LAYERS if not (REPO_ROOT / layer / "__init__.py").is_file()]
    assert not missing, f"layer packages without __init__.py: {missing}"


def test_imports_go_one_way_only() -> None:
    violations: list[str] = []
    for path in FILES:
        own_layer = layer_of(module_name(path))
        assert own_layer is not None
        for line, target in imported_modules(path):
            if target.startswith("<"):
                violations.append(f"{path.relative_to(REPO_ROOT)}:{line}: {target}")
                continue
            target_layer = layer_of(target)
            if target_layer is not None and RANK[target_layer] > RANK[own_layer]:
                violations.append(
                    f"{path.relative_to(REPO_ROOT)}:{line}: {own_layer} imports {target} "
                    f"(layer {target_layer} is above {own_layer})"
                )
    assert not violations, "layering violations:\n" + "\n".join(violations)


def _imports_logical_plan(path: Path, own: str | None = None) -> bool:
    if any(t == "planner.logical" or t.startswith("planner.logical.")
           for _, t in imported_modules(path, own)):
        return True
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return any(isinstance(n, ast.ImportFrom) and n.module == "planner"
               and any(a.name == "logical" for a in n.names) for n in ast.walk(tree))


def test_executor_never_imports_the_logical_plan() -> None:
    """executor/ reads physical plans only (executor/build.py maps each physical node to one
    operator, which takes its expressions from the node; the coordinator reads fragments and
    DataPartitions): no executor module imports planner.logical."""
    importing = {module_name(p) for p in FILES
                 if module_name(p).split(".")[0] == "executor" and _imports_logical_plan(p)}
    assert not importing, sorted(importing)


def test_logical_import_check_sees_every_spelling(tmp_path: Path) -> None:
    """The check above catches `from planner.logical import`, `import planner.logical` and
    `from planner import logical`, and leaves other planner modules alone."""
    probe = tmp_path / "probe.py"
    for text, hit in (("from planner.logical import LogicalScan\n", True),
                      ("import planner.logical as lp\n", True),
                      ("from planner import logical\n", True),
                      ("from planner.physical import OlapScan\n", False)):
        probe.write_text(text, encoding="utf-8")
        assert _imports_logical_plan(probe, "executor.probe") is hit, text


def test_layering_checker_resolves_imports(tmp_path: Path) -> None:
    """The checker itself: absolute, relative, from-package and import_module forms."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n"
        "from server import cli\n"
        "from ..batch import Batch\n"
        "from . import repository\n"
        "import importlib\n"
        "importlib.import_module('executor.scan')\n"
    )
    targets = [t for _, t in imported_modules(probe, own="storage.catalog.probe")]
    assert targets == [
        "os",
        "server",
        "storage.batch",
        "storage.catalog",
        "importlib",
        "executor.scan",
    ]
    assert [layer_of(t) for t in targets] == [
        None,
        "server",
        "storage",
        "storage",
        None,
        "executor",
    ]
    assert RANK["server"] > RANK["executor"] > RANK["planner"] > RANK["sql"] > RANK["storage"]


@pytest.mark.parametrize("path", FILES, ids=[module_name(p) for p in FILES])
def test_module_imports(path: Path) -> None:
    name = module_name(path)
    if name.endswith("__main__"):
        # `python -m server` runs this file as the program; importing it could start the CLI, so
        # it is only compiled here (its imports are checked by the layering test above and the
        # modules it imports are imported by their own cases).
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
        return
    importlib.import_module(name)


# ---- inside sql/: its sub-packages are layered too (docs/layout.md) -----------------------------
# Each may import only the sub-packages below it; sql.errors / sql.options sit beside them.
SQL_LAYERS = ("sql.parser", "sql.functions", "sql.ddl", "sql.show", "sql.binder")
SQL_RANK = {name: i for i, name in enumerate(SQL_LAYERS)}
# The catalog's write side: building a Mutation (storage.catalog.repository) is writing the
# catalog; the catalog service modules are the one place DDL asks for a write.
CATALOG_MUTATION_MODULE = "storage.catalog.repository"
CATALOG_SERVICE_MODULES = (
    "storage.catalog.service", "storage.catalog.new_table", "storage.catalog.alter_table",
    "storage.catalog.colocate",
)


def sql_package_of(module: str) -> str | None:
    parts = module.split(".")
    name = ".".join(parts[:2])
    return name if name in SQL_RANK else None


def test_sql_sub_packages_exist() -> None:
    missing = [
        p for p in SQL_LAYERS if not (REPO_ROOT / p.replace(".", "/") / "__init__.py").is_file()
    ]
    assert not missing, f"sql sub-packages without __init__.py: {missing}"


def test_sql_sub_packages_import_one_way() -> None:
    """parser <- functions <- ddl <- show <- binder: the parser knows no catalog or binding, the
    DDL analysis no SHOW or binder, SHOW no binder (the binder asks it for virtual tables)."""
    violations: list[str] = []
    for path in FILES:
        own = sql_package_of(module_name(path))
        if own is None:
            continue
        for line, target in imported_modules(path):
            other = sql_package_of(target)
            if other is not None and other != own and SQL_RANK[other] > SQL_RANK[own]:
                violations.append(f"{path.relative_to(REPO_ROOT)}:{line}: {own} imports {target}")
    assert not violations, "sql sub-package layering violations:\n" + "\n".join(violations)


def test_sql_parser_imports_nothing_of_sql() -> None:
    """The syntax layer stands alone: sqlglot and its own package, nothing else of sql/."""
    bad = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {target}"
        for path in FILES if module_name(path).startswith("sql.parser")
        for line, target in imported_modules(path)
        if target.split(".")[0] in RANK and not target.startswith("sql.parser")
    ]
    assert not bad, "sql.parser imports outside itself:\n" + "\n".join(bad)


def test_no_sql_module_writes_the_catalog() -> None:
    """Catalog writes go through the catalog service (storage/catalog/service.py and its
    siblings): no sql/ module builds a Mutation, and only sql/ddl calls the service; binder and
    SHOW only read (issue 16 point 6)."""
    bad: list[str] = []
    for path in FILES:
        name = module_name(path)
        if not name.startswith("sql."):
            continue
        for line, target in imported_modules(path):
            if target.startswith(CATALOG_MUTATION_MODULE) or (
                target.startswith(CATALOG_SERVICE_MODULES) and not name.startswith("sql.ddl")
            ):
                bad.append(f"{path.relative_to(REPO_ROOT)}:{line}: {name} imports {target}")
    assert not bad, "catalog writes outside the catalog service:\n" + "\n".join(bad)
    services = [REPO_ROOT / (m.replace(".", "/") + ".py") for m in CATALOG_SERVICE_MODULES]
    assert all(p.is_file() for p in services), "a listed catalog service module is gone"
