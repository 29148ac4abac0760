"""x feeds two products, in the students' engine that writes = for += ($ENGINE, default
Overwrites): which share survives depends on the order of L's children set, so on
ids ($JUNK objects are made first to move them)."""

import os

import students

Value = getattr(students, os.environ.get("ENGINE", "Overwrites"))
junk = [object() for _ in range(int(os.environ.get("JUNK", "0")))]
x = Value(0.5, label="x")
w1 = Value(-1.5, label="w1")
w2 = Value(2.0, label="w2")
L = x * w1 + x * w2
L.backward()
del junk
