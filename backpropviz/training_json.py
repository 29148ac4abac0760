"""A training run as JSON (``-o train.json``), and back: every kept pass, its loss, its
parameters' updates and its IR as the ``.json`` export writes it.

The document is ``{"iterations": [{"index", "loss", "parameters": {name: {"before",
"grad", "after", "rate"}}, "graph"}, ...], "every", "total", "notes"}``; a number
that is not finite is written "NaN", "Infinity" or "-Infinity" (strict JSON), as
in the IR's own export.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .ir import IRError, from_node_link, to_node_link
from .json_text import json_text
from .schema import decode_json, encode_json
from .training import Iteration, Run, Update

__all__ = ["from_json", "from_training_data", "to_json", "to_training_data"]


def to_training_data(run: Run) -> dict[str, Any]:
    """The run as plain data, ready for strict JSON."""
    return {
        "iterations": [{
            "index": iteration.index,
            "loss": _named(iteration.loss),
            "parameters": {name: {"before": _named(update.before), "grad": _named(update.grad),
                                  "after": _named(update.after), "rate": update.rate}
                           for name, update in iteration.parameters.items()},
            "graph": to_node_link(iteration.graph),
        } for iteration in run.iterations],
        "every": run.every,
        "total": run.total,
        "notes": list(run.notes),
    }


def to_json(run: Run) -> str:
    """The run as strict JSON text (what ``-o train.json`` writes)."""
    return json_text(to_training_data(run), depth=5) + "\n"  # (a node or an edge a line)


def from_training_data(data: Mapping[str, Any]) -> Run:
    """The run back from ``to_training_data``'s data."""
    try:
        iterations = [Iteration(
            index=item["index"], loss=_number(item["loss"]),
            graph=from_node_link(item["graph"]),
            parameters={name: Update(_number(update["before"]), _number(update["grad"]),
                                     _number(update["after"]), update.get("rate"))
                        for name, update in item["parameters"].items()},
        ) for item in data["iterations"]]
        return Run(iterations, every=data.get("every", 1), total=data.get("total", 0),
                   notes=list(data.get("notes", [])))
    except (KeyError, TypeError, AttributeError) as error:
        raise IRError(f"not a training run's JSON: {type(error).__name__} {error}") from None


def from_json(text: str | bytes) -> Run:
    """The run back from ``to_json``'s text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise IRError(f"not JSON: {error}") from None
    if not isinstance(data, Mapping):
        raise IRError(f"a training run's JSON is an object, got {type(data).__name__}")
    return from_training_data(data)


def _named(x: Any) -> Any:
    """Numbers (a float, nested lists) as the IR's export writes a value's data."""
    return encode_json("node", {"data": x})["data"]


def _number(x: Any) -> Any:
    """``_named``'s numbers back, as the IR's export reads a value's data."""
    return decode_json("node", {"data": x})["data"]
