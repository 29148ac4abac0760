"""``.. module-list:: package``: each module of the package with what its docstring says.

The modules are read, not imported (so manim and torch are not loaded), and
the list is made as the docs are built: it names the modules there are now.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def modules(package: str) -> list[tuple[str, str]]:
    """(dotted name, first paragraph of its docstring) for every module of ``package``."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{package!r} is not a package")
    root = Path(next(iter(spec.submodule_search_locations)))
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        docstring = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
        first_paragraph = docstring.strip().split("\n\n", 1)[0]
        found.append((".".join(parts), " ".join(first_paragraph.split())))
    return found


class ModuleList(SphinxDirective):
    """A definition list: each module's name and what its docstring says it is."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        listing = nodes.definition_list(classes=["module-list"])
        for name, summary in modules(self.arguments[0]):
            item = nodes.definition_list_item()
            item += nodes.term("", "", nodes.literal(name, name))
            paragraph = nodes.paragraph()
            paragraph += self.parse_inline(summary, lineno=self.lineno)[0]
            item += nodes.definition("", paragraph)
            listing += item
        return [listing]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("module-list", ModuleList)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
