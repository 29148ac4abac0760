"""A backprop-ninja-style script: one step of a character MLP (an embedding, a
hidden layer with batch norm written out by hand, tanh, and the cross-entropy
written out by hand), every intermediate a tensor of its own, as in Karpathy's
"Becoming a backprop ninja" exercise, at its sizes: 32 examples, a 10-wide
embedding, 64 hidden units."""

import torch

torch.manual_seed(42)
vocab_size, block_size, n_embd, n_hidden, batch_size = 27, 3, 10, 64, 32
C = torch.randn((vocab_size, n_embd), requires_grad=True)
W1 = torch.randn((n_embd * block_size, n_hidden)) * 0.2
W1.requires_grad_()
b1 = torch.randn(n_hidden) * 0.1
b1.requires_grad_()
W2 = torch.randn((n_hidden, vocab_size)) * 0.1
W2.requires_grad_()
b2 = torch.randn(vocab_size) * 0.1
b2.requires_grad_()
bngain = (torch.randn((1, n_hidden)) * 0.1 + 1.0).requires_grad_()
bnbias = (torch.randn((1, n_hidden)) * 0.1).requires_grad_()
Xb = torch.randint(0, vocab_size, (batch_size, block_size))
Yb = torch.randint(0, vocab_size, (batch_size,))
n = batch_size

emb = C[Xb]
embcat = emb.view(emb.shape[0], -1)
hprebn = embcat @ W1 + b1
bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
bndiff = hprebn - bnmeani
bndiff2 = bndiff**2
bnvar = 1 / (n - 1) * bndiff2.sum(0, keepdim=True)
bnvar_inv = (bnvar + 1e-5) ** -0.5
bnraw = bndiff * bnvar_inv
hpreact = bngain * bnraw + bnbias
h = torch.tanh(hpreact)
logits = h @ W2 + b2
logit_maxes = logits.max(1, keepdim=True).values
norm_logits = logits - logit_maxes
counts = norm_logits.exp()
counts_sum = counts.sum(1, keepdims=True)
counts_sum_inv = counts_sum**-1
probs = counts * counts_sum_inv
logprobs = probs.log()
loss = -logprobs[range(n), Yb].mean()
loss.backward()
print(f"loss = {loss.item():.4f}")
