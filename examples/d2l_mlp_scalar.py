"""The book's MLP worked example again, one scalar Value per number."""

from backpropviz import Value

x1, x2, y = Value(1.0), Value(2.0), 0.0
w1_11, w1_12 = Value(1.0, requires_grad=True), Value(-1.0, requires_grad=True)
w1_21, w1_22 = Value(0.0, requires_grad=True), Value(1.0, requires_grad=True)
w2_1, w2_2 = Value(2.0, requires_grad=True), Value(-1.0, requires_grad=True)
z1 = w1_11 * x1 + w1_12 * x2
z2 = w1_21 * x1 + w1_22 * x2
h1 = z1.relu()
h2 = z2.relu()
o = w2_1 * h1 + w2_2 * h2
L = (o - y) ** 2 / 2
L.backward()

print(f"L = {L.data}, dL/dW2 = [{w2_1.grad}, {w2_2.grad}], dL/dh = [{h1.grad}, {h2.grad}]")
print(f"dL/dz = [{z1.grad}, {z2.grad}], dL/dW1 = "
      f"[[{w1_11.grad}, {w1_12.grad}], [{w1_21.grad}, {w1_22.grad}]]")
