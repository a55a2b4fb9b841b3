"""The architecture, checked from the code's own imports: no import cycles, and data flows one
way (bindings -> API -> services -> domain and the adapters: storage, events, providers), with
Azure's types kept to the adapters so the domain, the services and the API never see them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "shared"

# layer -> what it may not import (prefixes of module names)
FORBIDDEN = {
    "shared.domain": ("shared.storage", "shared.services", "shared.api", "shared.functions", "shared.events",
                      "shared.auth", "azure"),
    "shared.storage": ("shared.services", "shared.api", "shared.functions", "shared.events"),
    "shared.runtime": ("shared.storage", "shared.services", "shared.api", "shared.functions", "azure"),
    "shared.services": ("shared.api", "shared.functions", "azure"),
    "shared.api": ("shared.storage", "shared.functions", "azure"),
    "shared.providers": ("shared.storage", "shared.services", "shared.api", "shared.functions"),
    "shared.events": ("shared.storage", "shared.services", "shared.api", "shared.functions"),
    "shared.auth": ("shared.storage", "shared.services", "shared.api", "shared.functions", "shared.events"),
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (inside functions and TYPE_CHECKING too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {imported for imported in _imports(path) if imported in modules and imported != name}
            for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_each_layer_imports_only_what_lies_below_it():
    broken = []
    for name, path in _modules().items():
        for layer, forbidden in FORBIDDEN.items():
            if name == layer or name.startswith(layer + "."):
                broken += [f"{name} imports {imported}" for imported in sorted(_imports(path))
                           if imported.startswith(forbidden)]
    assert broken == []
