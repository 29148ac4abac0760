"""Students' engines for the exercise "+, *, tanh and a topological backward()", right and wrong.

Written for these tests: ``Correct`` is the class as it should be; each other
class has one of the classic mistakes that ``backpropviz check`` diagnoses.
"""

import math


class Correct:
    def __init__(self, data, _children=(), _op="", label=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op
        self.label = label

    def _result(self, data, children, op):
        return type(self)(data, children, op)

    def _wrap(self, other):
        return other if isinstance(other, Correct) else type(self)(other)

    def __add__(self, other):
        other = self._wrap(other)
        out = self._result(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = self._wrap(other)
        out = self._result(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = self._result(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def ordered(self):
        topo, seen = [], set()

        def visit(v):
            if v not in seen:
                seen.add(v)
                for child in v._prev:
                    visit(child)
                topo.append(v)
        visit(self)
        return topo

    def backward(self):
        self.grad = 1.0
        for v in reversed(self.ordered()):
            v._backward()


class Overwrites(Correct):
    """Writes = where it must add: a value used twice keeps only the last share."""

    def __mul__(self, other):
        other = self._wrap(other)
        out = self._result(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad = other.data * out.grad
            other.grad = self.data * out.grad
        out._backward = _backward
        return out


class WrongTanh(Correct):
    """Differentiates tanh as 1 - t instead of 1 - t²."""

    def tanh(self):
        t = math.tanh(self.data)
        out = self._result(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t) * out.grad
        out._backward = _backward
        return out


class WrongOrder(Correct):
    """Sweeps the topological order forwards: leaves first, the output last."""

    def backward(self):
        self.grad = 1.0
        for v in self.ordered():
            v._backward()


class NoSeed(Correct):
    """Forgets to seed the output's gradient with 1."""

    def backward(self):
        for v in reversed(self.ordered()):
            v._backward()


class Subtracts(Correct):
    """A right engine with a subtraction of its own: a set of children loses its order."""

    def __sub__(self, other):
        other = self._wrap(other)
        out = self._result(self.data - other.data, (self, other), "-")

        def _backward():
            self.grad += out.grad
            other.grad -= out.grad
        out._backward = _backward
        return out


class Recursive(Correct):
    """Sends each gradient down at once, each child in turn, with no topological order:
    a value reached by two paths runs its rule once a path, each time with what had
    arrived by then."""

    def backward(self):
        self.grad = 1.0
        self._send()

    def _send(self):
        self._backward()
        for child in self._prev:
            child._send()


class AddsInMul(Correct):
    """__mul__ written from a copy of __add__: its forward pass adds (its backward rule is
    the product's)."""

    def __mul__(self, other):
        other = self._wrap(other)
        out = self._result(self.data + other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out
