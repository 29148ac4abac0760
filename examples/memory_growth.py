"""Why training is memory-hungry: what forward keeps for backward grows with depth and batch.

The book's last lesson: "Retaining intermediates is why training is
memory-hungry: it grows with depth and batch size." This script measures it.
For MLPs of depth 1 to 8 (batch 16) and of batch 1 to 64 (depth 4) it records
a training step with backpropviz's engine and takes the peak of its memory
timeline: every value some backward rule will read, each counted once. For
contrast, inference: the same network in PyTorch under torch.no_grad(), where
autograd's own saved-tensor hooks count what it keeps (nothing).

    python examples/memory_growth.py                   # the table
    python examples/memory_growth.py -o growth.png     # and the slide (.svg .png .pdf)
    backpropviz memory examples/memory_growth.py       # the timeline of the small MLP below
"""

import argparse
import itertools

import numpy as np

from backpropviz import Tensor
from backpropviz.ir import to_networkx
from backpropviz.memory import timeline

INPUTS, WIDTH = 16, 32  # input features, hidden units per layer
DEPTHS, BATCH = range(1, 9), 16
BATCHES, DEPTH = (1, 2, 4, 8, 16, 32, 64), 4


def layer_shapes(depth, inputs=INPUTS, width=WIDTH):
    """The weight matrices' shapes: depth hidden layers of width units, then one output."""
    sizes = [inputs] + [width] * depth + [1]
    return list(itertools.pairwise(sizes))


def mlp_loss(depth, batch, inputs=INPUTS, width=WIDTH, seed=0):
    """The mean squared output of an MLP (ReLU, no bias) on a batch of random inputs."""
    rng = np.random.default_rng(seed)
    h = Tensor(rng.standard_normal((batch, inputs)).round(1), label="X")
    for layer, (fan_in, fan_out) in enumerate(layer_shapes(depth, inputs, width), start=1):
        W = Tensor((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).round(1),
                   label=f"W{layer}", requires_grad=True)
        h = h @ W
        if layer <= depth:
            h = h.relu()
    return (h ** 2).mean()


def training_peak(depth, batch):
    """The peak of the memory timeline of one training step, and how much of it is weights."""
    loss = mlp_loss(depth, batch)
    loss.backward()
    line = timeline(to_networkx(loss))
    return line.peak_bytes, line.bytes_by_role(line.peak).get("param", 0)


def inference_kept(depth, batch):
    """What autograd keeps for backward in the same MLP under torch.no_grad() (None
    without PyTorch): every tensor it saves passes its pack hook."""
    try:
        import torch
    except ImportError:
        return None
    kept = []
    with torch.no_grad(), torch.autograd.graph.saved_tensors_hooks(
            lambda t: kept.append(t.numel() * t.element_size()) or t, lambda t: t):
        h = torch.randn(batch, INPUTS, dtype=torch.float64)
        for layer, (fan_in, fan_out) in enumerate(layer_shapes(depth), start=1):
            h = h @ torch.randn(fan_in, fan_out, dtype=torch.float64, requires_grad=True)
            if layer <= depth:
                h = torch.relu(h)
        (h ** 2).mean()
    return sum(kept)


def measure():
    by_depth = [(d, *training_peak(d, BATCH), inference_kept(d, BATCH)) for d in DEPTHS]
    by_batch = [(b, *training_peak(DEPTH, b), inference_kept(DEPTH, b)) for b in BATCHES]
    return by_depth, by_batch


def table(rows, size):
    lines = [f"{size:>6} {'training peak':>14} {'of it weights':>14} {'inference':>10}"]
    for x, peak, weights, inference in rows:
        kept = "-" if inference is None else f"{inference} B"
        lines.append(f"{x:>6} {peak:>12} B {weights:>12} B {kept:>10}")
    return "\n".join(lines)


def figure(by_depth, by_batch, path, theme):
    from backpropviz.memory_chart import Panel, Series, growth_svg, render_chart

    def panel(title, x_label, rows):
        series = [Series("training", [peak for _, peak, _, _ in rows]),
                  Series("of it weights", [weights for _, _, weights, _ in rows], "parameters")]
        if all(inference is not None for *_, inference in rows):
            series.append(Series("inference (no_grad)",
                                 [kept for *_, kept in rows],
                                 "inference"))
        return Panel(title, x_label, [x for x, *_ in rows], series)

    svg = growth_svg(
        [panel(f"peak against depth (batch {BATCH})", "hidden layers", by_depth),
         panel(f"peak against batch (depth {DEPTH})", "examples per batch", by_batch)],
        title="Training keeps the intermediates for backward; inference keeps nothing",
        subtitle=f"the peak of backpropviz's memory timeline of one training step: MLPs of "
                 f"{WIDTH} ReLU units a layer, no bias, float64",
        theme=theme)
    return render_chart(svg, path)


# The small MLP that `backpropviz memory examples/memory_growth.py` charts (and `render`
# draws): one training step, two hidden layers of 2 units, a batch of 2 examples of 2 inputs.
L = mlp_loss(depth=2, batch=2, inputs=2, width=2)
L.backward()

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", help="also draw the slide (.svg, .png or .pdf)")
    parser.add_argument("--theme", choices=("light", "dark", "transparent"), default="light")
    args = parser.parse_args()
    by_depth, by_batch = measure()
    print(table(by_depth, "depth"))
    print(table(by_batch, "batch"))
    if args.output:
        print(f"wrote {figure(by_depth, by_batch, args.output, args.theme)}")
