"""The package's shape, read from its source: imports run one way, modules stay small."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "backpropviz"
MODULES = {path: ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
           for path in PACKAGE.rglob("*.py")}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """Each package module ``path`` imports (at any depth), with the names taken."""
    name = MODULES[path]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            names = [alias.name for alias in node.names]
            for alias in names:  # `from . import cli` names a module
                if f"{target}.{alias}" in MODULES.values():
                    found.append((f"{target}.{alias}", []))
            found.append((target, names))
    return [(target, names) for target, names in found if target in MODULES.values()]


def test_no_module_imports_itself_back():
    graph = nx.DiGraph()
    for path, name in MODULES.items():
        for target, _ in _imports(path):
            if target != name and not name.startswith(target + "."):  # a package's own init
                graph.add_edge(name, target)
    graph.remove_nodes_from(["backpropviz"])  # the lazy public names load on use
    assert list(nx.simple_cycles(graph)) == []


def test_no_module_is_over_800_lines_and_the_cli_is_thin():
    sizes = {name: len(path.read_text().splitlines()) for path, name in MODULES.items()}
    assert {name: n for name, n in sizes.items() if n > 800} == {}
    assert sizes["backpropviz.cli"] < 300


def test_the_adapters_take_nothing_private_from_other_modules():
    for adapter in ("cli", "notebook", "sphinx"):
        path = PACKAGE / f"{adapter}.py"
        private = [(target, name) for target, names in _imports(path) for name in names
                   if name.startswith("_") and name != "__version__"]
        assert private == [], adapter
        assert "cli._" not in path.read_text()
