"""micrograd's demo network on one point: MLP 2-16-16-1, hinge loss and its 1e-4 L2 term.

Python's sum() over the 337 parameters makes a chain of 337 additions, which
left unfolded kept graphviz busy for many minutes.
"""

import random

from backpropviz.nn import MLP

random.seed(1337)
model = MLP(2, [16, 16, 1])
score = model([0.5, -1.0])
data_loss = (1 + -1.0 * score).relu()
reg_loss = 1e-4 * sum(p * p for p in model.parameters())
total_loss = data_loss + reg_loss
total_loss.backward()
