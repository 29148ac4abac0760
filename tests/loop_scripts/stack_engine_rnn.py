"""A scalar RNN in a student's own Value class whose backward() sorts the graph with a
stack (the last child pushed is visited first): its order mixes the repetitions, each
one's u·x share coming after the earlier repetitions' shares."""

import math


class Value:
    def __init__(self, data, children=(), op=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = list(children)
        self._op = op

    def __add__(self, other):
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t * t) * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo, seen, stack = [], set(), [(self, False)]
        while stack:
            node, children_done = stack.pop()
            if children_done:
                topo.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()


w = Value(0.5)
u = Value(-1.2)
h = Value(0.0)
for x in [1.0, -0.5, 0.8, 0.3]:
    h = (w * h + u * Value(x)).tanh()
loss = h * h
loss.backward()
