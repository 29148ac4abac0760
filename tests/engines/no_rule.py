"""L = a·b + a in an engine whose backward() applies every rule itself (named_closures.Inline)."""

from named_closures import Inline as Value

a = Value(1.5)
b = Value(-2.0)
L = a * b + a
L.backward()
