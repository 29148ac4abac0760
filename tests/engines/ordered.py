"""y = c·a − b in the tuple engine: operands in the order the script wrote them."""

from tuple_engine import Value

a = Value(3.0)
b = Value(-4.0)
c = Value(2.0)
y = (c * a + -b).tanh()
y.backward()
