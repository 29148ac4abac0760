"""The book's MLP trained: forward, backward and update, five steps of gradient descent.

The network of the worked example (examples/d2l_mlp.py): x = [1, 2], target
y = 0, ReLU, squared error, no bias. Each step runs the forward pass with the
weights as they are, backward gives dL/dW1 and dL/dW2, and the update moves
every weight against its gradient, W <- W - lr * dL/dW; the next forward pass
starts from the weights the update left. Draw the run with
backpropviz render examples/training_loop.py --iterations -o train.json
"""

from backpropviz import Tensor

x, y = Tensor([1.0, 2.0]), 0
W1 = Tensor([[1.0, -1.0], [0.0, 1.0]], requires_grad=True)
W2 = Tensor([[2.0, -1.0]], requires_grad=True)
lr = 0.1

for step in range(5):
    z = W1 @ x
    h = z.relu()
    o = W2 @ h
    L = ((o - y) ** 2).sum() / 2
    L.zero_grad()  # forget the gradients the last pass left in W1, W2 and x
    L.backward()
    print(f"step {step}: L = {L.item():.4f}")
    W1.data -= lr * W1.grad
    W2.data -= lr * W2.grad
