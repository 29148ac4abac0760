"""The producers, in the order a script's objects are tried: adding a framework is one line here."""

from __future__ import annotations

from . import foreign, ir, torch_import
from .builder import Producer

__all__ = ["PRODUCERS", "Producer"]

# backpropviz's own values first; PyTorch's tensors where the run was recorded; then
# any object shaped like a micrograd Value (which neither of the others is).
PRODUCERS: tuple[Producer, ...] = (
    ir.ENGINE,
    torch_import.PRODUCER,
    foreign.PRODUCER,
)
