"""``.. ir-contract::``: the IR's attributes as ``backpropviz.schema`` declares them.

The schema declares every attribute of the IR once; ``contract_rst()``
renders those declarations as reStructuredText, which this directive parses
into the page, so the docs say what ``validate`` checks.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

from backpropviz import schema


class IrContract(SphinxDirective):
    """The contract, one table per place, from the schema."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(schema.__file__)
        lines = StringList(schema.contract_rst().splitlines(),
                           source="backpropviz.schema.contract_rst()")
        container = nodes.section()  # a holder: its children are what the page gets
        container.document = self.state.document
        nested_parse_with_titles(self.state, lines, container, self.content_offset)
        return list(container.children)


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("ir-contract", IrContract)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
