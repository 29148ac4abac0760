"""micrograd-compatible networks on backpropviz's Value: Neuron, Layer, MLP.

The same constructors, calls and ``parameters()`` as ``micrograd.nn``, and
the same initialisation (weights drawn from ``random.uniform(-1, 1)`` in the
same order, biases 0; a neuron adds its bias first, then each weighted input
in turn), so a script written for micrograd gives the same numbers after
changing its imports, and ``random.seed(1337)`` gives micrograd's demo network.
Parameters are marked ``requires_grad`` and drawn as parameters.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from .engine import Value

__all__ = ["MLP", "Layer", "Module", "Neuron"]


class Module:
    """What every network part has: its parameters, and a way to zero their gradients."""

    def parameters(self) -> list[Value]:
        return []

    def zero_grad(self) -> None:
        """Set every parameter's gradient to 0 (before the next backward pass)."""
        for parameter in self.parameters():
            parameter._clear_grad()


class Neuron(Module):
    """``nin`` weights and a bias: ReLU of the weighted sum, or (``nonlin=False``) the sum."""

    def __init__(self, nin: int, nonlin: bool = True) -> None:
        self.w = [Value(random.uniform(-1, 1), requires_grad=True) for _ in range(nin)]
        self.b = Value(0.0, requires_grad=True)
        self.nonlin = nonlin

    def __call__(self, x: Iterable[Any]) -> Value:
        total = self.b
        for weight, value in zip(self.w, x, strict=False):
            total = total + weight * value
        return total.relu() if self.nonlin else total

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]

    def __repr__(self) -> str:
        return f"{'ReLU' if self.nonlin else 'Linear'}Neuron({len(self.w)})"


class Layer(Module):
    """``nout`` neurons on the same ``nin`` inputs; one output is returned as itself."""

    def __init__(self, nin: int, nout: int, **neuron: Any) -> None:
        self.neurons = [Neuron(nin, **neuron) for _ in range(nout)]

    def __call__(self, x: Iterable[Any]) -> Value | list[Value]:
        x = list(x)
        outputs = [neuron(x) for neuron in self.neurons]
        return outputs[0] if len(outputs) == 1 else outputs

    def parameters(self) -> list[Value]:
        return [p for neuron in self.neurons for p in neuron.parameters()]

    def __repr__(self) -> str:
        return f"Layer of [{', '.join(map(str, self.neurons))}]"


class MLP(Module):
    """Layers of sizes ``nouts`` after ``nin`` inputs: ReLU neurons, a linear last layer."""

    def __init__(self, nin: int, nouts: Sequence[int]) -> None:
        sizes = [nin, *nouts]
        self.layers = [Layer(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1)
                       for i in range(len(nouts))]

    def __call__(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(map(str, self.layers))}]"
