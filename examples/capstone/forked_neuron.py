"""A neuron whose output is used twice, in the student's engine: L = h·x + h with h = tanh(xw + b).

    backpropviz render forked_neuron.py        # the graph as the student's engine computed it
    backpropviz check forked_neuron.py         # graded against the reference engine
"""

from student_value import Value

x = Value(0.5, label="x")
w = Value(-1.5, label="w")
b = Value(0.8, label="b")
z = x * w + b
z.label = "z"
h = z.tanh()
h.label = "h"
L = h * x + h
L.label = "L"
L.backward()
