"""The lecture's neuron built after a varying amount of other objects ($JUNK of them),
so that ids, and the order of each children set, differ from run to run."""

import os

from lecture import Value

junk = [object() for _ in range(int(os.environ.get("JUNK", "0")))]
x1 = Value(2.0, label="x1")
x2 = Value(0.0, label="x2")
w1 = Value(-3.0, label="w1")
w2 = Value(1.0, label="w2")
b = Value(6.8813735870195432, label="b")
n = x1 * w1 + x2 * w2 + b
o = n.tanh()
o.backward()
del junk
