"""The DOT writer: the text graphviz lays out for one picture of the IR, pins and bands given."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from html import escape
from typing import Any

import networkx as nx
import numpy as np

from . import ops
from .dot_syntax import attrs as _attrs
from .dot_syntax import pt as _pt
from .dot_syntax import quote as _quote
from .drawing_options import DotOptions, dot_options, folded
from .folding import bands
from .formatting import summarized
from .ir import operand_edges
from .legend import blocks_gradient, legend_html
from .names import headings, value_names
from .number_tables import (
    column_widths,
    contribution_html,
    grid_html,
    grid_texts,
    held_html,
    lone_width,
    number_html,
)
from .step_bands import with_band
from .steps import (
    StepState,
    changed_between,
    dead_masks,
    fork_edges,
    gradient_history,
    plain_constants,
)
from .style import (
    ARROW_SIZE,
    BOOK,
    CURRENT_EDGE_PEN,
    CURRENT_OP_PEN,
    DEAD_PEN,
    EDGE_PEN,
    FITTED_TYPE,
    FONT,
    LABEL_PT,
    LEGEND_PT,
    MARK_PT,
    NAME_FONT,
    NAME_PT,
    NODE_PEN,
    RESULT_EDGE_PEN,
    VALUE_PT,
    Theme,
    fitted_pt,
    symbol_pt,
)
from .typeset import expression_html, font, name_html
from .views import group_path

__all__ = ["BADGE_IN", "BADGE_OUT", "CONTINUE_FROM", "CONTINUE_TO", "EDGE_LABEL_NODES",
           "LARGE_GRAPH", "LOOP_BACK", "DotOptions", "Writer", "dot_options", "edge_id", "folded",
           "fork_edges", "plain_constants", "with_band"]


# The ids of the two pieces of an edge that runs through a badge (its
# contribution at a fork); the badge itself has the edge's id.
BADGE_IN, BADGE_OUT = "/in", "/out"
# The two marks of an edge from one row of a folded picture to another, at the
# end of its piece in the first row and the start of its piece in the second.
CONTINUE_TO, CONTINUE_FROM = "/to", "/from"
CONTINUED = "/on"  # the id of the edge's piece from the second mark on
LOOP_BACK = "/loop"  # a rolled loop's back edge: its output's id and this (rolling.py)


# Edge labels take part in dot's ranking and make layout several times
# slower; past this many nodes, contributions become external labels,
# placed after the layout (a graph that big is for zooming, not a slide).
EDGE_LABEL_NODES = 150
# dot's settings for a graph past that size: fewer network-simplex and
# crossing-minimisation iterations, straight edges.
LARGE_GRAPH = {"nslimit": "0.2", "mclimit": "0.02", "splines": "line"}


# ---------------------------------------------------------------- DOT


def badge_pt(fitted: Any) -> float:
    """The size of a contribution's numbers on its edge as drawn: smaller than a box's,
    except in a figure fitted to a frame (``fitted`` true), whose smallest number is
    what the back row reads."""
    return fitted_pt(VALUE_PT) if fitted else LABEL_PT


def lettered(source: str) -> str:
    """A DOT ``source`` with its text in a fitted figure's sizes (fitted_pt), and the
    widths and heights of the table cells grown with it (whole points, rounded up)."""
    source = re.sub(r'(POINT-SIZE|fontsize)="([0-9.]+)"',
                    lambda match: f'{match.group(1)}="{fitted_pt(float(match.group(2)))}"',
                    source)
    return re.sub(r'(WIDTH|HEIGHT)="([0-9]+)"', lambda match: f'{match.group(1)}="'
                  f'{math.ceil(int(match.group(2)) * FITTED_TYPE)}"', source)


def edge_id(u: Any, v: Any, key: Any) -> str:
    """The id of an edge in the DOT, the SVG and the layout: ``"u->v#key"``."""
    return f"{u}->{v}#{key}"


class Writer:
    """Builds the DOT text of one picture."""

    def __init__(self, G: nx.MultiDiGraph, options: DotOptions, state: StepState,
                 pins: Mapping[str, str] | None = None, band: str | None = None) -> None:
        self.G = G
        self.band = band  # the step's caption band (step_bands), above the legend
        # Where a folded picture's nodes and edges go (see _pins): given, the
        # DOT places them there, for neato -n2 to route the rest.
        self.pins = pins
        self.o = options
        self.t = options.theme
        self.state = state
        self.show_grads = not (options.forward_only or options.symbolic)
        # Constants' gradients and saved marks are left out unless asked for:
        # nobody differentiates with respect to the 2 in L / 2.
        self.plain = plain_constants(G, options.show_constants)
        # Unnamed values are headed by their expression (o − y), on a slide-sized graph.
        small = G.number_of_nodes() <= EDGE_LABEL_NODES
        self.expressions = {node: heading.text for node, heading in
                            headings(G, options.precision, expressions=small).items()
                            if not heading.named}
        dead_values, dead_edges = dead_masks(G) if self.show_grads else ({}, {})
        self.dead_values = dead_values
        self.dead_edges = dead_edges
        # Every gradient a value shows at some step: its seed, then each
        # running sum (the last is its final gradient). Cells are sized for all.
        self.partials = gradient_history(G) if self.show_grads else {}
        if self.show_grads:
            # A gradient no recorded step made (another engine's whose steps
            # could not be watched) is still drawn, as its only number.
            for value, attrs in G._node.items():
                if attrs.get("grad") is not None and value not in self.partials:
                    self.partials[value] = [attrs["grad"]]
            for value in self.plain:
                self.partials.pop(value, None)
        # A fork: a value that sends gradients back along two or more edges.
        # Each edge then shows its contribution, and the node shows their sum.
        self.external_labels = G.number_of_nodes() > EDGE_LABEL_NODES
        self.fork_edges = fork_edges(G, self.plain) if self.show_grads else set()
        self._mark_names: dict[Any, Any] | None = None  # a folded picture's, when needed
        # What every step draws alike, made once for all of them (see at_step)
        self._same: dict[Any, Any] = {}
        self._stepping = False  # writing the steps of a pass (at_step), not one picture
        self._names = {node: _quote(node) for node in G}  # each node's name as DOT writes it
        self.saved_mark = font("●", self.t.saved, MARK_PT)  # a stored value's, in its heading

    def at_step(self, step: int, state: StepState, band: str | None = None) -> str:
        """The DOT of step ``step`` (its state, its caption band): one Writer writes
        every step, and what they draw alike (numbers, their columns) is set once."""
        self.o = replace(self.o, step=step)
        self.state = state
        self.band = band
        self._stepping = True
        return self.dot()

    def changes(self, step: int, before: StepState, state: StepState,
                band: str | None = None) -> tuple[str, list[str]]:
        """Step ``step``'s graph line, and the lines of its DOT (at_step's) that draw a node
        or edge whose look may differ from its look in state ``before``: the DOT of the
        step drawn in ``before``, these lines in place of theirs, is at_step's. A step
        changes a few looks; the pictures of a pass are drawn from these (step_drawing)."""
        self.o = replace(self.o, step=step)
        self.state = state
        self.band = band
        self._stepping = True
        nodes, edges = changed_between(self.G, before, state)
        band_rows = bands(self.G, self.o.wrap) if folded(self.o) else {}
        lines = ["  " + line for node in nodes for _, line in self._node_lines(node, band_rows)]
        for edge in edges:
            node_lines, edge_lines = self._edge_lines(*edge, band_rows)
            lines.extend("  " + line for _, line in node_lines)
            lines.extend(edge_lines)
        return self._lettered([self._graph_line()])[0], self._lettered(lines)

    def _graph_line(self) -> str:
        """The DOT's graph statement: the layout's settings, the step's class and label."""
        t, o = self.t, self.o
        graph = {
            "rankdir": "BT" if o.rankdir == BOOK else o.rankdir, "bgcolor": t.background,
            "fontname": FONT,
            "pad": "0.25", "nodesep": "0.3", "ranksep": "0.45", "newrank": "true",
            "id": "graph", "class": f"backprop theme-{t.name}",
        }
        if self.pins is not None:
            graph.update(layout="neato", splines="true")
        if o.frame is not None or folded(o):
            # Closer together, and less margin, for a figure that is to fill a frame.
            graph.update(pad="0.1", nodesep="0.18", ranksep="0.28")
        if o.rankdir == BOOK:
            graph["ranksep"] = "0.25"  # its ranks climb a diagonal: they need less room
        if o.frame is not None:
            # Scaled (up or down) to fill the frame; one point is one pixel.
            graph.update(size=f"{o.frame[0] / 72:.4f},{o.frame[1] / 72:.4f}!", dpi="72",
                         margin="0")  # (a PDF page has none around it then)
        if self.external_labels:
            graph["forcelabels"] = "true"
            # Measured on unrolled loops and micrograd's demo network (bench/render.py):
            # past this size dot's network simplex and spline routing take minutes;
            # bounded, with straight edges, the same layout takes seconds.
            graph.update(LARGE_GRAPH)
        if o.step is not None:
            graph["class"] += f" step-{o.step}"
        if "legend" not in self._same:  # (the same at every step)
            self._same["legend"] = legend_html(
                self.G, o, partials=bool(self.partials), forks=bool(self.fork_edges),
                dead=bool(self.dead_values or self.dead_edges),
                plain=self.plain) if o.legend else None
        legend = self._same["legend"]
        if self.band is not None:
            legend = with_band(self.band, legend)
        if legend:
            graph.update(label=legend, labelloc="b", labeljust="l")
        return "  graph " + _attrs(graph) + ";"

    def dot(self) -> str:
        t, o = self.t, self.o
        lines = ["digraph backprop {", self._graph_line()]
        lines.append("  node " + _attrs({"fontname": FONT, "fontsize": _pt(VALUE_PT),
                                         "fontcolor": t.text, "penwidth": _pt(NODE_PEN)})
                     + ";")
        lines.append("  edge " + _attrs({"fontname": FONT, "fontsize": _pt(LABEL_PT),
                                         "color": t.edge, "arrowsize": _pt(ARROW_SIZE),
                                         "penwidth": _pt(EDGE_PEN)}) + ";")
        band = bands(self.G, o.wrap) if folded(o) else {}
        nodes: dict[int, list[str]] = {}
        for node, attrs in self.G._node.items():
            nodes.setdefault(band.get(node, 0), []).append(self.node_statement(node, attrs))
        edge_lines = []
        pred = self.G._pred  # networkx's own dicts, read only
        for u, v, k in self.drawn_edges():
            placed, statements = self.edge_statements(u, v, k, pred[v][u][k], band)
            for row, statement in placed:
                nodes[row].append(statement)
            edge_lines.extend(statements)
        placed, loops = self.loop_edges(band)
        for row, statement in placed:
            nodes[row].append(statement)
        if band and self.pins is None:
            # Each row (or column) a cluster of its own; an edge from one to the
            # next does not rank its head after its tail, so each row starts anew.
            # The rows share no edge: each is laid out alone (packed), its ranks
            # as wide as its own boxes, not the widest of any row's.
            lines.append('  graph [pack="18" packmode="graph"];')
            for number, statements in sorted(nodes.items()):
                lines.append(f"  subgraph cluster_row{number} {{")
                lines.append("    graph " + _attrs({"id": f"row{number}", "style": "invis",
                                                     "margin": "6"}) + ";")
                lines.extend("    " + statement for statement in statements)
                lines.append("  }")
        elif o.expand:
            lines.extend(self.boxed_groups(nodes.get(0, [])))
        else:
            lines += ["  " + statement for number in sorted(nodes) for statement in nodes[number]]
        lines.extend(edge_lines)
        lines.extend(loops)
        if self.pins is None:  # (pinned, the places are those of a layout so told)
            lines.extend(f'  {_quote(u)} -> {_quote(v)} [style="invis" weight="0"];'
                         for u, v in o.ranked_after if band.get(u, 0) == band.get(v, 0))
        lines.append("}")
        return "\n".join(self._lettered(lines)) + "\n"

    def _lettered(self, lines: list[str]) -> list[str]:
        """Lines in a fitted figure's sizes (lettered), each lettered once: the steps of a
        pass repeat most lines."""
        if not self.o.fitted:
            return lines
        known = self._same.setdefault("lettered", {})
        for line in lines:
            if line not in known:
                known[line] = lettered(line)
        return [known[line] for line in lines]

    def _node_lines(self, node: Any, band: Mapping[Any, int]) -> list[tuple[int, str]]:
        """A node's statement, with the row (of a folded picture) it is in."""
        return [(band.get(node, 0), self.node_statement(node, self.G._node[node]))]

    def _edge_lines(self, u: Any, v: Any, k: Any,
                    band: Mapping[Any, int]) -> tuple[list[tuple[int, str]], list[str]]:
        """The statements that draw an edge: the nodes it runs through (a badge, the
        marks at a row's end), each with its row, and the edges (lines of the DOT)."""
        return self.edge_statements(u, v, k, self.G._pred[v][u][k], band)

    def drawn_edges(self) -> list[tuple]:
        """The edges as the DOT lists them: each op's operand edges in argument order, then
        its result edge (ordering="in" keeps that order on the page)."""
        if "edges" not in self._same:
            succ = self.G._succ  # networkx's own dicts, read only
            edges = self._same["edges"] = []
            for op, attrs in self.G._node.items():
                if attrs["kind"] == "op":
                    edges += operand_edges(self.G, op)
                    edges += [(op, v, k) for v, keyed in succ[op].items() for k in keyed]
        return self._same["edges"]

    def node_statement(self, node: Any, attrs: dict) -> str:
        """A node's DOT statement as this picture draws it. The steps of a pass draw most
        nodes alike: each is written once for each look (what of the step's state it
        depends on) and looked up after that."""
        if not self._stepping:
            return self._node_written(node, attrs)
        s = self.state
        if attrs["kind"] == "op":
            look: Any = (node == s.current, self._held_known(node, attrs))
        else:  # (its dead cells may depend on which of its edges have sent theirs)
            sent = () if not self.dead_edges or node in self.dead_values else tuple(
                (node, v, k) in s.processed for v, keyed in self.G._succ[node].items()
                for k in keyed)
            look = (node in s.grads, id(s.grads.get(node)), node in s.updated, sent)
        key = ("node", node, look)
        if key not in self._same:
            self._same[key] = self._node_written(node, attrs)
        return self._same[key]

    def _node_written(self, node: Any, attrs: dict) -> str:
        if attrs["kind"] == "value":
            return self.value_statement(node, attrs)
        # An op's attributes but its id are those of every op of its look: written once
        dead = None if self.o.symbolic else attrs.get("dead")
        look = ("op", attrs["op"], attrs["symbol"], node in self.o.free_order,
                blocks_gradient(dead), bool(attrs.get("error_start")), node == self.state.current,
                (node, self._held_known(node, attrs)) if attrs.get("parameters") else None)
        if look not in self._same:
            self._same[look] = _attrs(self.op_node(look))[1:-1]
        name = self._names[node]
        pinned = f" pos={_quote(self.pins[node])}" if self.pins is not None else ""
        return f"{name} [id={name} {self._same[look]}{pinned}];"

    def edge_statements(self, u: Any, v: Any, k: Any, data: dict,
                        band: Mapping[Any, int]) -> tuple[list[tuple[int, str]], list[str]]:
        """The DOT statements of the edge u -> v as this step draws it: the nodes it adds
        (its badge, a folded picture's marks), each with its row, and its edge pieces.
        Written once for each look, as node_statement's are."""
        if not self._stepping:
            return self._edge_written(u, v, k, data, band)
        s, element = self.state, (u, v, k)
        key = ("edge", element, element in s.processed, element in s.current_edges,
               u == s.current)
        if key not in self._same:
            self._same[key] = self._edge_written(u, v, k, data, band)
        return self._same[key]

    def _edge_written(self, u: Any, v: Any, k: Any, data: dict,
                      band: Mapping[Any, int]) -> tuple[list[tuple[int, str]], list[str]]:
        look = self.edge_look(u, v, k, data)
        if look not in self._same:  # (most edges share a few looks: each written once)
            shared = self.edge_attrs(look)
            badge_class = shared.pop("badge")
            self._same[look] = shared, badge_class, _attrs(shared)[1:-1]
        shared, badge_class, written = self._same[look]
        eid = edge_id(u, v, k)
        html = self.contribution_html(u, v, k, data) if look[3] else None
        crossing = bool(band) and band[u] != band[v]
        if self.pins is None and not crossing and (html is None or self.external_labels):
            # Most edges: one statement, its id, its contribution's label if any, its look
            label = "" if html is None else f" xlabel=<{html}>"
            return [], [f"  {self._names[u]} -> {self._names[v]} [id={_quote(eid)}{label} "
                         f"{written}];"]
        attrs = {"id": eid}
        badge = None
        if html is not None and self.external_labels:
            # Past slide size, a label placed after the layout keeps dot fast.
            attrs["xlabel"] = f"<{html}>"
        elif html is not None:
            # (before its step the badge keeps its place, unseen: no empty frame)
            line = self.t.grad if look[2] else "transparent"
            # (a matrix's brackets set in from the rounded corners, which they crossed)
            pad = 4 if np.ndim(data.get("grad")) else 1
            # (and before its step no background: the edge runs on through it, unbroken)
            fill = _bgcolor(self.t) if look[2] else ""
            table = (f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="{pad}" '
                     f'STYLE="ROUNDED" COLOR="{line}"{fill}>'
                     f"<TR><TD>{html}</TD></TR></TABLE>")
            badge = {"id": eid, "shape": "plain", "label": f"<{table}>", "class": badge_class}
        attrs.update(shared)
        placed, statements = [], []
        head, head_name = v, self._names[v]
        if crossing:
            # From one row to another: a mark at each end, named after the
            # value carried, so that no edge runs across the rows between.
            head = eid + CONTINUE_TO
            head_name = _quote(head)
            for name, row in ((head, band[u]), (eid + CONTINUE_FROM, band[v])):
                placed.append((row, f"{_quote(name)} {_attrs(self.mark(u, v, name))};"))
            if self.pins is None:  # the first beside u (its badge), not further on
                beside = eid if badge is not None else u
                placed.append((band[u], f"{{rank=same; {_quote(beside)}; {head_name};}}"))
            statements.append(f"  {_quote(eid + CONTINUE_FROM)} -> {self._names[v]} "
                              f"{_attrs(self.pinned(_onward(attrs, eid + CONTINUED)))};")
            attrs["arrowhead"] = "none"
        if badge is None:
            statements.append(f"  {self._names[u]} -> {head_name} {_attrs(self.pinned(attrs))};")
        else:
            # A contribution is a badge on its own edge: the edge runs into it
            # and on out of it, so it cannot be read as another edge's.
            if self.pins is not None:
                badge["pos"] = self.pins[eid]
            placed.append((band.get(u, 0), f"{_quote(eid)} {_attrs(badge)};"))
            into = {**attrs, "id": eid + BADGE_IN, "arrowhead": "none"}
            onward = _onward(attrs, eid + BADGE_OUT)
            if not look[2]:  # (unseen: its two pieces meet in its middle, one line)
                into["headclip"] = onward["tailclip"] = "false"
            statements.append(f"  {self._names[u]} -> {_quote(eid)} "
                              f"{_attrs(self.pinned(into))};")
            statements.append(f"  {_quote(eid)} -> {head_name} "
                              f"{_attrs(self.pinned(onward))};")
        return placed, statements

    def boxed_groups(self, statements: list[str]) -> list[str]:
        """The node statements, each group's (and its values') in a box of its own,
        boxes nested as the groups are."""
        path_of: dict[Any, tuple] = {}
        for node, attrs in self.G.nodes(data=True):
            if attrs.get("kind") == "op":
                path_of[node] = group_path(attrs)
        for node, attrs in self.G.nodes(data=True):
            if attrs.get("kind") == "value":
                producers = list(self.G._pred[node])
                if producers:
                    path_of[node] = path_of[producers[0]]
                else:
                    path_of[node] = group_path(attrs) or self.module_box(node, attrs, path_of)
        tree: dict = {"nodes": [], "inner": {}}
        for statement in statements:
            name = statement.split(" [", 1)[0].strip('"')
            place = tree
            for part in path_of.get(name, ()):
                place = place["inner"].setdefault(part, {"nodes": [], "inner": {}})
            place["nodes"].append(statement)
        lines: list[str] = []
        count = iter(range(1 << 30))

        def emit(place: dict, indent: str) -> None:
            lines.extend(indent + statement for statement in place["nodes"])
            for (name, _), inner in place["inner"].items():
                number = next(count)
                lines.append(f"{indent}subgraph cluster_group{number} {{")
                lines.append(f"{indent}  graph " + _attrs({
                    "id": f"group{number}", "class": "group", "label": str(name),
                    "labeljust": "l", "style": "rounded,dashed", "color": self.t.muted,
                    "fontcolor": self.t.muted, "fontsize": _pt(LEGEND_PT), "margin": "10",
                }) + ";")
                emit(inner, indent + "  ")
                lines.append(f"{indent}}}")

        emit(tree, "  ")
        return lines

    def module_box(self, node: Any, attrs: dict, path_of: dict) -> tuple:
        """The box of a leaf made outside every group: its module's, for a torch
        module's own parameter (``model.0.weight`` in ``model.0``); else none."""
        paths = {path_of[op] for op in self.G._succ[node]}
        if len(paths) == 1 and attrs.get("role") == "param" and attrs.get("label"):
            (path,) = paths
            if path and attrs["label"].rsplit(".", 1)[0] == path[-1][0]:
                return path
        return ()

    def mark(self, u: Any, v: Any, name: str) -> dict[str, str]:
        """A continuation mark of the edge u -> v in a folded picture: the name of
        the value it carries, in an arrow-shaped tag."""
        value = u if self.G.nodes[u]["kind"] == "value" else v
        label = self.G.nodes[value]["label"]
        if label:
            text = name_html(label, self.t)
        else:
            if self._mark_names is None:
                self._mark_names = value_names(self.G, precision=self.o.precision)
            text = expression_html(self._mark_names[value].text, self.t)
        attrs = {"id": name, "class": "continuation", "shape": "cds", "color": self.t.muted,
                 "margin": "0.1,0.03", "label": f"<{text}>"}
        if self.pins is not None:
            attrs["pos"] = self.pins[name]
        return attrs

    def pinned(self, attrs: dict[str, str]) -> dict[str, str]:
        """An edge's attributes, with its route if the folded layout keeps it."""
        if self.pins is not None and attrs["id"] in self.pins:
            attrs["pos"] = self.pins[attrs["id"]]
        return attrs

    # -------------------------------------------------------- nodes

    def value_statement(self, node: Any, attrs: dict) -> str:
        """A value's box: its classes and its table of numbers; the rest of its attributes
        (shape, colours) alike in every box of its fill, written once."""
        classes, fill, label = self.value_box(node, attrs)
        if ("box", fill) not in self._same:
            self._same["box", fill] = _attrs({
                "shape": "box", "style": "rounded,filled", "fillcolor": fill,
                "color": self.t.node_line, "margin": "0.08,0.04"})[1:-1]
        name = self._names[node]
        pinned = f" pos={_quote(self.pins[node])}" if self.pins is not None else ""
        return (f"{name} [id={name} class={_quote(' '.join(classes))} "
                f"{self._same['box', fill]} label={label}{pinned}];")

    def value_box(self, node: Any, attrs: dict) -> tuple[list[str], str, str]:
        """A value's classes, fill and label (its name, its number, its gradient)."""
        t, o = self.t, self.o
        fill = t.param_fill if attrs["role"] == "param" else t.node_fill
        classes = ["value", attrs["role"]]
        header = []
        if attrs["label"]:
            header.append(name_html(attrs["label"], t))
        elif node in self.expressions:
            header.append(expression_html(self.expressions[node], t))
        if attrs.get("stored") and node not in self.plain and not o.symbolic:
            classes.append("stored")
            header.append(self.saved_mark)
        shape = attrs["shape"]
        is_array = bool(shape) and not summarized(shape)
        if shape:
            texts, indices = grid_texts(attrs["data"], o.precision)
            body = f"<TD>{grid_html(texts, t.text, t, brackets=is_array)}</TD>"
        else:  # a scalar: its one number, without a grid
            body = f"<TD>{number_html(attrs['data'], o.precision, t.text, t)}</TD>"
        rule = t.node_line
        partials = self.partials.get(node)
        if partials:
            known = node in self.state.grads
            grad = self.state.grads[node] if known else partials[-1]
            widths = self.gradient_widths(node, partials, not shape)
            dead = self.dead_mask_now(node, grad) if known else None
            classes.append("has-grad" if known else "pending-grad")
            if dead is not None:
                classes.append("dead")
            updated = node in self.state.updated
            # A gradient that `backpropviz check` found wrong: in red, the
            # reference's number under it.
            wrong = attrs.get("expected") is not None
            if wrong:
                classes.append("wrong")
            color = t.dead_text if wrong else t.grad
            lit = t.highlight_fill if updated else None
            grad_html = grid_html(grid_texts(grad, o.precision)[0], color, t, indices=indices,
                                  dead=dead, widths=widths, brackets=is_array, hidden=not known,
                                  fill=lit) if shape else \
                number_html(grad, o.precision, color, t, index=(), dead=dead, width=widths[0],
                            hidden=not known, fill=lit)
            # Value and gradient side by side: a rule between two numbers, a
            # gap between two bracketed arrays.
            if is_array:
                body += f'<TD WIDTH="6"></TD><TD>{grad_html}</TD>'
            else:
                body += f"<VR/><TD>{grad_html}</TD>"
                rule = t.node_line if known else "transparent"
        rows = []
        if header:
            span = 3 if partials and is_array else 2 if partials else 1
            rows.append(f'<TR><TD COLSPAN="{span}">{" ".join(header)}</TD></TR>')
        if not o.symbolic or not header:
            rows.append(f"<TR>{body}</TR>")
        if attrs.get("expected") is not None:
            # Beside the wrong gradient once it is shown; until then its room is kept
            # (in the box's own fill: graphviz has no transparent text), so that
            # every step has the same layout.
            span = 3 if partials and is_array else 2 if partials else 1
            expected = grid_texts(attrs["expected"], o.precision)[0]
            colour = t.dead_text if node in self.state.grads else fill
            rows.append(f'<TR><TD COLSPAN="{span}" ALIGN="RIGHT">'
                        + font("expected " + ", ".join(cell for row in expected for cell in row),
                                colour, LEGEND_PT) + "</TD></TR>")
        label = (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1" '
                 f'COLOR="{rule}">' + "".join(rows) + "</TABLE>>")
        return classes, fill, label

    def gradient_widths(self, node: Any, partials: list, scalar: bool) -> list[int]:
        """The widths of a value's gradient cells: room for every number it shows at some
        step (set once for all the steps); a ``scalar``'s one cell."""
        key = ("widths", node)
        widths = self._same.get(key)
        if widths is None:
            widths = self._same[key] = [lone_width(partials, self.o.precision, VALUE_PT)] \
                if scalar else column_widths(
                    [grid_texts(partial, self.o.precision)[0] for partial in partials], VALUE_PT)
        return widths

    def dead_mask_now(self, node: Any, grad: Any) -> np.ndarray | None:
        """The dead-ReLU mask of a value's gradient as shown now, if any entry is dead."""
        if not self.dead_edges or (grad != 0 if type(grad) is float else np.all(grad)):
            return None
        final = self.dead_values.get(node)
        if final is None:
            # Part way through the backward pass a running sum may still be
            # all dead contributions even if later ones revive it.
            sent = [(node, v, k) for v, keyed in self.G._succ[node].items() for k in keyed]
            masks = [self.dead_edges.get(edge) for edge in sent if edge in self.state.processed]
            if not masks or any(mask is None for mask in masks):
                return None
            final = masks[0]
            for mask in masks[1:]:
                final = final & mask
        if type(grad) is float:  # a zero scalar: dead where its mask says so
            return final if final else None
        dead = final & (np.asarray(grad, dtype=np.float64) == 0)
        return dead if dead.any() else None

    def _held_known(self, node: Any, attrs: dict) -> bool:
        """Whether a module operator's step has sent its parameters' gradients (the
        gradients of those it holds are drawn from then on)."""
        return bool(attrs.get("parameters")) and self.show_grads and any(
            (u, node, k) in self.state.processed for u, keyed in self.G._pred[node].items()
            for k in keyed)

    def op_node(self, look: tuple) -> dict[str, str]:
        """An op's attributes but its id, from its look (_node_written's): its op and
        symbol, whether its operands may lie in any order, whether it is dead (a gate
        that blocked some gradient), where an error starts, the current op, and for a
        module operator that holds its parameters, which it is and whether their
        gradients are known."""
        t = self.t
        _, op, symbol, free_order, dead, error_start, current, held = look
        classes = ["op", op]
        result = {"shape": "circle", "style": "filled",
                  "fillcolor": t.op_fill, "color": t.op_line, "width": "0.42",
                  "margin": "0.04", "fontsize": _pt(symbol_pt(symbol)), "label": symbol}
        if not ops.get(op).commutative and not free_order:
            # Keep operands in argument order (first on top in LR) where it matters.
            result["ordering"] = "in"
        if len(symbol) > 4:  # a long name or an expression: an oval, not a huge circle
            result.update(shape="ellipse", width="0.42", height="0.42")
        if op == ops.GROUP.name:
            kind = self.G.graph.get("module_classes", {}).get(symbol)
            if kind:  # a torch module: its path, and its class beneath
                result.update(label=f"<{escape(symbol)}<BR/>"
                              f"{font(escape(kind), t.muted, LABEL_PT)}>", shape="ellipse")
            if kind and held and not self.o.symbolic:  # and the parameters it holds
                table = held_html(self.G.nodes[held[0]], self.o.precision, t,
                                  hidden=not held[1])
                result["label"] = (f'<<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0"><TR>'
                                   f'<TD>{result["label"][1:-1]}</TD></TR><TR><TD>{table}</TD>'
                                   "</TR></TABLE>>")
            elif symbol not in self.G.graph.get("module_groups", ()):
                # A group of the script's, or a compact run, is named as the values
                # are (w₁,₁₁·x₁ + w₁,₁₂·x₂: the names italic with their subscripts).
                pt = NAME_PT if len(symbol) <= 2 else symbol_pt(symbol)
                result.update(label=f"<{expression_html(symbol, t, t.text, pt)}>",
                              fontname=NAME_FONT, fontsize=_pt(pt))
        if dead:  # a gate (a ReLU) that blocked some gradient
            classes.append("dead")
            result.update(color=t.dead_line, style="filled,dashed", penwidth=_pt(DEAD_PEN))
        if error_start:  # where `backpropviz check` found the error starts
            classes.append("error-start")
            result.update(color=t.dead_line, fillcolor=t.dead_fill, penwidth=_pt(CURRENT_OP_PEN))
        if current:
            classes.append("current")
            result.update(color=t.highlight_line, fillcolor=t.highlight_fill,
                          penwidth=_pt(CURRENT_OP_PEN))
        result["class"] = " ".join(classes)
        return result

    # -------------------------------------------------------- edges

    def edge_look(self, u: Any, v: Any, k: Any, attrs: dict) -> tuple:
        """What an edge's attributes but its id and its contribution's number depend on:
        operand (only those are sent, or a fork's) or result, sent, at a fork, highlighted
        (with the gradient flowing back along it), or the current op's result edge."""
        key, s, operand = (u, v, k), self.state, "arg" in attrs
        current = bool(s.current_edges) and key in s.current_edges  # (most steps have none)
        sent, fork = operand and key in s.processed, operand and key in self.fork_edges
        return ("edge", operand, sent, fork, current, current and attrs.get("grad") is not None
                and self.show_grads and u not in self.plain, not current and u == s.current)

    def edge_attrs(self, look: tuple) -> dict[str, str]:
        """The attributes of every edge of a look (edge_look's) but the id and the badge
        or label of its contribution; with the class its badge has, under "badge"."""
        t = self.t
        _, operand, sent, fork, current, flows_back, entering = look
        classes = ["operand" if operand else "result"]
        if sent:
            classes.append("processed")
        if fork:
            # Contributions at a fork, each on its own edge (the node shows
            # their sum); kept in place, empty, until the edge is processed.
            classes.append("contribution" if sent else "pending-contribution")
        badge = ["badge", *classes[1:]]
        result = {}
        if current:
            classes.append("current")
            result.update(color=t.highlight_line, penwidth=_pt(CURRENT_EDGE_PEN))
            if flows_back:
                # The gradient flows back: beside the highlight a blue line, its
                # arrowhead at the operand (graphviz: the head takes the first colour);
                # not into a constant, which is drawn without a gradient.
                result.update(color=f"{t.highlight_line}:{t.grad}", dir="both",
                              arrowtail="normal")
        elif entering:
            # The op's result edge: the gradient that enters the current op.
            classes.append("current")
            result.update(color=t.highlight_line, penwidth=_pt(RESULT_EDGE_PEN), style="dashed")
        result["class"] = " ".join(classes)
        result["badge"] = " ".join([*badge, "current"] if current else badge)
        return result

    def contribution_html(self, u: Any, v: Any, k: Any, attrs: dict) -> str:
        """The numbers of a fork's edge: what it sent back (hidden until it has)."""
        key, o = (u, v, k), self.o
        known = key in self.state.processed
        return contribution_html(attrs["grad"], o.precision, self.t,
                                 VALUE_PT if o.fitted else LABEL_PT,  # (lettered later)
                                 self.dead_edges.get(key) if known else None, hidden=not known)

    def loop_edges(self, band: Mapping[Any, int]) -> tuple[list[tuple[int, str]], list[str]]:
        """A rolled loop's back edges (rolling.py): from the block's output to the box it
        enters the next repetition as, dashed, over the block, marked with the count. In
        a picture folded into rows, one whose ends are in two rows is drawn as a folded
        edge is: a piece in each, to and from a mark named after the output (placed in
        its row, as ``edge_statements``' marks are): dot had crashed laying out some
        foldings with the edge across them, and drew others with it straight across."""
        back, t, o = self.G.graph.get("loop_back", []), self.t, self.o
        # Over the top of a left-to-right flow; top to bottom, where dot finds room.
        sides = {"headport": "n", "tailport": "n"} if o.rankdir in ("LR", "RL") else {}
        label = font(f"<B>⟲ ×{self.G.graph.get('loop_count')}</B>", t.text, NAME_PT)
        look = {"class": "loop", "style": "dashed", "penwidth": _pt(CURRENT_EDGE_PEN),
                "color": t.text}
        placed, statements = [], []
        for u, v in zip(back[::2], back[1::2], strict=True):
            if u not in self.G or v not in self.G:
                continue
            if band.get(u, 0) == band.get(v, 0):  # (ranked as the flow runs)
                statements.append(f"  {_quote(v)} -> {_quote(u)} " + _attrs({
                    "id": u + LOOP_BACK, **look, "dir": "back", "label": f"<{label}>",
                    "weight": "0", **sides}) + ";")
                continue
            marks = edge_id(u, v, "loop")
            to, onto = marks + CONTINUE_TO, marks + CONTINUE_FROM
            # (the count in the mark it runs to: on a piece this short, a label of its
            # own stood on the output's box)
            counted = self.mark(u, v, to)
            counted["label"] = f"{counted['label'][:-1]} {label}>"
            placed += [(band[u], f"{_quote(to)} {_attrs(counted)};"),
                       (band[v], f"{_quote(onto)} {_attrs(self.mark(u, v, onto))};")]
            statements += [
                f"  {_quote(u)} -> {_quote(to)} " + _attrs(self.pinned({
                    "id": u + LOOP_BACK, **look, "arrowhead": "none"})) + ";",
                f"  {_quote(onto)} -> {_quote(v)} " + _attrs(self.pinned({
                    "id": u + LOOP_BACK + CONTINUED, **look})) + ";"]
        return placed, statements

    # -------------------------------------------------------- legend


def _onward(attrs: dict[str, str], piece: str) -> dict[str, str]:
    """The attributes of a later piece ``piece`` of an edge: the backward arrow ends at
    the operand, so only the piece from it draws that."""
    return {**{name: value for name, value in attrs.items()
               if name not in ("dir", "arrowtail")}, "id": piece}


def _bgcolor(theme: Theme) -> str:
    return f' BGCOLOR="{theme.text_fill}"' if theme.text_fill else ""
