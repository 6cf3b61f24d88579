"""No import cycles between modules, except the one the design accepts (issue 16, DESIGN.md 4).

A cycle is a strongly connected component of the import-time graph: imports at module level
(including those inside `try`), not imports inside functions (deliberately deferred) and not
`if TYPE_CHECKING:` imports (no runtime dependency). `from pkg import name` is an edge to
`pkg.name` when that is a module, else to `pkg`; a module's edge to its own ancestor package is
left out (Python runs the package's __init__ first anyway, and a package that re-exports its
modules is not a design cycle).

The accepted cycle: the function registry (sql/functions/__init__.py registers the families, each
family module imports the registry's decorators).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("storage", "sql", "planner", "executor", "server")
ACCEPTED = {"sql.functions"}  # a cycle whose modules all live under one of these is accepted


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _import_time_nodes(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements that run at import: module level, into try/except/else/finally and plain `if`,
    but not into `if TYPE_CHECKING:`."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else (
                test.attr if isinstance(test, ast.Attribute) else "")
            if name == "TYPE_CHECKING":
                out.extend(_import_time_nodes(node.orelse))
                continue
            out.extend(_import_time_nodes(node.body) + _import_time_nodes(node.orelse))
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody,
                          *[h.body for h in node.handlers]):
                out.extend(_import_time_nodes(block))
        else:
            out.append(node)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets: list[str] = []
        for node in _import_time_nodes(tree.body):
            if isinstance(node, ast.Import):
                targets.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
        for target in targets:
            if target in modules and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root, root_edges in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(root_edges)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _accepted(component: list[str]) -> bool:
    return any(all(m == a or m.startswith(a + ".") for m in component) for a in ACCEPTED)


def test_no_import_cycles_but_the_function_registry() -> None:
    unexpected = [c for c in cycles(import_graph()) if not _accepted(c)]
    assert not unexpected, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in unexpected)


def test_the_detector_sees_a_cycle() -> None:
    """The check itself: a two-module cycle and a self-contained chain."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


if __name__ == "__main__":
    for component in cycles(import_graph()):
        print(component, file=sys.stderr)
