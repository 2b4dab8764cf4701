"""The service's packages import one way: a lower layer never imports a higher one, and no import cycle appears.

Read from the source (AST), every import counted, deferred and type-only ones too: the layers are the architecture
(DESIGN.md): errors at the bottom; the pure domain; text and embedding beside it; the configuration, read once
and passed down (its sections are plain values); running aids (metrics, logs, tracing, keys, TLS, the event loop);
the store; search (scopes held in memory, a search's candidates gathered from them); the engine's use cases;
extraction on top of them; the API faces; the server that starts it all; the command line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import npc_memory

PACKAGE = Path(npc_memory.__file__).parent
LAYERS = (
    ("errors",), ("domain",), ("text", "embedding"), ("config",), ("ops",), ("store",), ("search",), ("engine",),
    ("extraction",), ("api",), ("server",), ("cli",),
)
"""Lowest first; a package may import its own layer's and lower ones (packages in one layer: not each other)."""
LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    """``npc_memory.store.pool`` for .../npc_memory/store/pool.py."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, runtime_only: bool = False) -> Iterator[str]:
    """The npc_memory modules a file imports (``runtime_only``: at module level, outside ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = list(_module_level(tree.body)) if runtime_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("npc_memory."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("npc_memory."):
            module = node.module or ""
            for alias in node.names:  # ``from npc_memory.store import search`` imports the module store.search
                sub = f"{module}.{alias.name}"
                yield sub if _exists(sub) else module


def _module_level(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run when the module is imported: not in functions or classes, nor under TYPE_CHECKING."""
    for statement in statements:
        if isinstance(statement, ast.If):
            if "TYPE_CHECKING" not in ast.dump(statement.test):
                yield from _module_level(statement.body + statement.orelse)
        elif isinstance(statement, ast.Try):
            handlers = [s for h in statement.handlers for s in h.body]
            yield from _module_level(statement.body + handlers + statement.orelse + statement.finalbody)
        else:
            yield statement


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative / "__init__.py").exists()


def package_of(module: str) -> str:
    """The top package under npc_memory (``cli`` for npc_memory.cli)."""
    return module.split(".")[1]


def sources() -> list[Path]:
    """Every module of the service."""
    return sorted(PACKAGE.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    """A new package must be placed in the layers, so its imports are checked."""
    packages = {package_of(module_name(p)) for p in sources() if module_name(p) != "npc_memory"}
    assert packages - set(LEVEL) == set()


def test_no_package_imports_a_higher_one() -> None:
    """Each import goes down (or within a package), never up, never sideways within a layer."""
    wrong = []
    for path in sources():
        source = module_name(path)
        if source == "npc_memory":
            continue
        for target in imports(path):
            a, b = package_of(source), package_of(target)
            if a != b and LEVEL[b] >= LEVEL[a]:
                wrong.append(f"{source} -> {target}")
    assert wrong == []


def test_no_import_cycle() -> None:
    """Module-level imports form no cycle (a cycle makes import order matter and hides a layer broken in two)."""
    graph = {module_name(p): set(imports(p, runtime_only=True)) for p in sources()}
    for module, targets in graph.items():  # importing a submodule imports its packages first
        graph[module] = {t for t in targets if t in graph and t != module}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target] if target in path else [module, target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []
