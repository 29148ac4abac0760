"""b = a + a and c = b * b in the lecture's class: a set keeps one child of each."""

from lecture import Value

a = Value(3.0, label="a")
b = a + a
c = b * b
c.backward()
