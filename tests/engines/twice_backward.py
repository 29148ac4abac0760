"""backward() called twice without zeroing: the gradients add up (in the lecture's class)."""

from lecture import Value

a = Value(2.0, label="a")
b = Value(-1.0, label="b")
c = a * b + a.tanh()
c.backward()
c.backward()
