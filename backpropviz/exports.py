"""The IR as a file: node-link JSON, GraphML, or the text form; never laid out."""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx

from .ir import to_graphml, to_json
from .text import to_text

__all__ = ["EXPORTS", "export"]

# Each export's text, by format.
EXPORTS: dict[str, Callable[[nx.MultiDiGraph], str]] = {
    "json": to_json,
    "graphml": to_graphml,
    "txt": to_text,
}


def export(G: nx.MultiDiGraph, fmt: str) -> bytes:
    """The IR ``G`` as the export ``fmt`` names, one line feed at its end."""
    return (EXPORTS[fmt](G).rstrip("\n") + "\n").encode("utf-8")
