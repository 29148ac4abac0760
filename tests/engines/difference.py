"""d = a - b in an engine with its own "-": which child came first is in the data."""

from students import Subtracts as Value

b = Value(2.0, label="b")  # made first, so the set is not in operand order by luck
a = Value(5.0, label="a")
d = a - b
L = d * d
L.backward()
