"""``.. ir-contract::``: the IR's attributes, from ``backpropviz.schema.contract_rst()``.

The schema declares every attribute of the IR once; ``contract_rst()``
renders those declarations as reStructuredText, which this directive parses
into the page. Until a version of the package has that function, the
directive's own content (a hand-written summary) is shown instead.
"""

from __future__ import annotations

import importlib
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def contract_rst() -> str | None:
    """The schema's reST, or None if this version of the package has no schema."""
    try:
        schema = importlib.import_module("backpropviz.schema")
    except ModuleNotFoundError as error:
        if error.name != "backpropviz.schema":
            raise  # the schema exists and something it imports does not: say so
        return None
    render = getattr(schema, "contract_rst", None)
    return render() if render is not None else None


class IrContract(SphinxDirective):
    """The contract from the schema, else the summary written in the directive."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        text = contract_rst()
        if text is None:
            lines = self.content
        else:
            module = importlib.import_module("backpropviz.schema")
            self.env.note_dependency(module.__file__)
            lines = StringList(text.splitlines(), source="backpropviz.schema.contract_rst()")
        container = nodes.section()  # a holder: its children are what the page gets
        container.document = self.state.document
        nested_parse_with_titles(self.state, lines, container, self.content_offset)
        return list(container.children)


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("ir-contract", IrContract)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
