"""Two students' engines that name things their own way (written for these tests).

``Fn`` keeps each op's chain rule in ``self.backward_fn``; ``Slotted`` declares
``__slots__``, keeps its inputs in ``parents`` and its rule in ``_grad_fn``.
Both sort the graph iteratively and keep children in a tuple.
"""

import math


class Fn:
    def __init__(self, data, children=(), op=""):
        self.data = data
        self.grad = 0.0
        self.children = tuple(children)
        self.op = op
        self.backward_fn = None

    def __add__(self, other):
        other = other if isinstance(other, Fn) else Fn(other)
        out = Fn(self.data + other.data, (self, other), "+")

        def backward_fn():
            self.grad += out.grad
            other.grad += out.grad
        out.backward_fn = backward_fn
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Fn) else Fn(other)
        out = Fn(self.data * other.data, (self, other), "*")

        def backward_fn():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out.backward_fn = backward_fn
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Fn(t, (self,), "tanh")

        def backward_fn():
            self.grad += (1 - t * t) * out.grad
        out.backward_fn = backward_fn
        return out

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((child, False) for child in node.children)
        self.grad = 1.0
        for node in reversed(order):
            if node.backward_fn is not None:
                node.backward_fn()


class Slotted:
    __slots__ = ("_grad_fn", "data", "grad", "op", "parents")

    def __init__(self, data, parents=(), op=""):
        self.data = data
        self.grad = 0.0
        self.parents = parents
        self.op = op
        self._grad_fn = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Slotted) else Slotted(other)
        out = Slotted(self.data + other.data, (self, other), "+")

        def rule():
            self.grad += out.grad
            other.grad += out.grad
        out._grad_fn = rule
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Slotted) else Slotted(other)
        out = Slotted(self.data * other.data, (self, other), "*")

        def rule():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._grad_fn = rule
        return out

    def __sub__(self, other):
        other = other if isinstance(other, Slotted) else Slotted(other)
        out = Slotted(self.data - other.data, (self, other), "-")

        def rule():
            self.grad += out.grad
            other.grad -= out.grad
        out._grad_fn = rule
        return out

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((parent, False) for parent in node.parents)
        self.grad = 1.0
        for node in reversed(order):
            node._grad_fn()


class Inline:
    """No chain rule on the results: backward() applies every op's rule itself."""

    def __init__(self, data, _prev=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._prev = tuple(_prev)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Inline) else Inline(other)
        return Inline(self.data + other.data, (self, other), "+")

    def __mul__(self, other):
        other = other if isinstance(other, Inline) else Inline(other)
        return Inline(self.data * other.data, (self, other), "*")

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev)
        self.grad = 1.0
        for node in reversed(order):
            if node._op == "+":
                for child in node._prev:
                    child.grad += node.grad
            elif node._op == "*":
                a, b = node._prev
                a.grad += b.data * node.grad
                b.grad += a.data * node.grad
