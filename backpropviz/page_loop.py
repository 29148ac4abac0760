"""The page's loop panel: a rolled loop's numbers at any repetition, chosen with a slider.

A rolled view (rolling.py) draws one repetition of a loop's block; each block
value keeps its data and gradient at every repetition (``loop_data``,
``loop_grad``, the engine's numbers). The panel lists those values, as the
drawing formats numbers, at the repetition the slider picks.
"""

from __future__ import annotations

from html import escape
from typing import Any

import networkx as nx

from .formatting import format_array
from .names import subscripted, value_names

__all__ = ["loop_data", "loop_panel"]


def _cells(x: Any, precision: int) -> str | None:
    """A number or array as one line of the panel, with true minus signs."""
    if x is None:
        return None
    rows = format_array(x, precision)
    return "; ".join(", ".join(cell.replace("-", "\u2212") for cell in row) for row in rows)


def loop_data(G: nx.MultiDiGraph, precision: int = 4) -> dict[str, Any] | None:
    """The panel's data: the loop's ``count``, the repetition drawn (``shown``, 1 the
    first) and, for each block value, its name (at each repetition, where each has its
    own: x[0], x[1]) and its numbers at each repetition;
    None if ``G`` draws no rolled loop."""
    count = G.graph.get("loop_count")
    if count is None:
        return None
    names = value_names(G)
    each = _names_at_each(G, count)
    rows = [{"id": str(node), "name": subscripted(names[node].text),
             "names": [subscripted(name) for name in each[node]] if node in each else None,
             "data": [_cells(x, precision) for x in attrs["loop_data"]],
             "grad": [_cells(x, precision) for x in attrs["loop_grad"]]}
            for node, attrs in G.nodes(data=True) if "loop_data" in attrs]
    return {"count": count, "shown": G.graph["loop_step"] + 1, "rows": rows}


def _names_at_each(G: nx.MultiDiGraph, count: int) -> dict[Any, list[str]]:
    """The block values whose name differs from one repetition to the next, with their
    name at each: those that have one each (x[t], an input's own number), and those
    named after them (u·x[t]: the drawn repetition's u·(−0.762) at every repetition
    would be false as written at the others)."""
    own = {node: attrs["loop_names"] for node, attrs in G.nodes(data=True)
           if attrs.get("loop_names")}
    if not own:
        return {}
    H = G.copy(as_view=False)
    at = []
    for t in range(count):
        for node, names in own.items():
            H.nodes[node]["label"] = names[t]
        at.append({node: name.text for node, name in value_names(H).items()})
    return {node: [names[node] for names in at] for node in G
            if "loop_data" in G.nodes[node] and len({names[node] for names in at}) > 1}


def loop_panel(data: dict[str, Any]) -> str:
    """The panel's HTML (its numbers are filled in by html_loop.js)."""
    count, shown = data["count"], data["shown"]
    return f"""<section id="loop" aria-label="the loop's repetitions">
<style>#loop{{padding:0.3em 1em;font-size:0.95em;flex:0 1 auto;max-height:28vh;overflow-y:auto}}
#loop table{{border-collapse:collapse}}
#loop td,#loop th{{padding:0.1em 0.8em;text-align:left;font-variant-numeric:tabular-nums}}
#loop .grad{{color:var(--grad)}}#loop input{{width:min(40em,60vw);vertical-align:middle}}</style>
<label for="loop-slider">the loop's numbers at repetition t =</label>
<input type="range" id="loop-slider" min="1" max="{count}" value="{shown}" step="1">
<output id="loop-counter" for="loop-slider">{shown} / {count}</output>
<div id="loop-said">{escape(f"the drawing shows repetition {shown} of {count}")}</div>
<table><thead><tr><th>value</th><th>data</th><th class="grad">gradient</th></tr></thead>
<tbody id="loop-rows"></tbody></table>
</section>
"""
