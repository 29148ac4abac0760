"""``.. module-list:: package`` (or ``folder/``): each module there, with what its docstring says.

The modules are read, not imported (so manim and torch are not loaded), and
the list is made as the docs are built: it names the modules there are now.
A folder is relative to the page; ``:classes:`` adds each module's classes
(a folder of manim scenes: the scenes).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


def package_folder(package: str) -> Path:
    """Where an importable package's modules are."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{package!r} is not a package")
    return Path(next(iter(spec.submodule_search_locations)))


def modules(root: Path, dotted: bool) -> list[tuple[Path, str, str, list[str]]]:
    """(file, name, first paragraph of its docstring, its classes) for each module under
    ``root``: a dotted name for a package, else the file's path from ``root``'s parent."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        relative = path.relative_to(root.parent)
        if dotted:
            parts = relative.with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        else:
            name = relative.as_posix()
        first_paragraph = (ast.get_docstring(tree) or "").strip().split("\n\n", 1)[0]
        classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        found.append((path, name, " ".join(first_paragraph.split()), classes))
    return found


class ModuleList(SphinxDirective):
    """A definition list: each module's name and what its docstring says it is."""

    required_arguments = 1
    option_spec = {"classes": directives.flag}  # noqa: RUF012 (docutils reads it from the class)

    def run(self) -> list[nodes.Node]:
        where = self.arguments[0]
        if "/" in where:
            root, dotted = Path(self.env.relfn2path(where, self.env.docname)[1]), False
        else:
            root, dotted = package_folder(where), True
        listing = nodes.definition_list(classes=["module-list"])
        for path, name, summary, classes in modules(root, dotted):
            self.env.note_dependency(str(path))
            item = nodes.definition_list_item()
            item += nodes.term("", "", nodes.literal(name, name))
            paragraph = nodes.paragraph()
            paragraph += self.parse_inline(summary, lineno=self.lineno)[0]
            if "classes" in self.options and classes:
                paragraph += nodes.Text(" Classes: ")
                for k, cls in enumerate(classes):
                    paragraph += nodes.Text(", " if k else "")
                    paragraph += nodes.literal(cls, cls)
                paragraph += nodes.Text(".")
            item += nodes.definition("", paragraph)
            listing += item
        return [listing]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("module-list", ModuleList)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
