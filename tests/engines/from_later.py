"""backward() from out, while a check names the intermediate h."""

from lecture import Value

x = Value(1.5, label="x")
y = Value(-2.0, label="y")
h = x * y
out = h.tanh() + x
out.backward()
