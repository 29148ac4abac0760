"""The op registry: what each op is, for every part of backpropviz that draws, explains, imports it.

One ``Op`` record per canonical op (the IR's ``op`` attribute) says what is
drawn in its circle, how its result is written in a caption, the chain rule
for each operand in symbols, which values its backward rule reads (what the
forward pass must keep) and how it gates gradients (a dead ReLU). Renderers,
captions, the memory count and the producers ask ``get(name)``; none of them
names an op, except that each producer maps its framework's names to these
(torch_record's ``TORCH_NODES``, foreign's ``TAGS``). An op the registry does
not know (a torch function such as ``softmax``) gets a generic record: drawn
and explained by its name.

Templates are ``string.Template`` text, filled by captions.py with names
(and, for numbers, with the engine's numbers): ``$a`` and ``$b`` are the
first and second operand, ``$r`` the result, ``$g`` the gradient arriving
from downstream (``∂L/∂r``), ``$dot`` the product sign (``·`` for scalars,
``⊙`` for arrays), ``$n`` the exponent, ``$n_sup`` it as a superscript,
``$a_pow`` the operand to the power n − 1, ``$a_atom`` and ``$b_atom`` the
operands in parentheses unless they are a name or a number (for a postfix
sign: ``(Bᵀ)ᵀ``), ``$k`` how many entries a
reduction averaged; for an op known only by name, ``$args`` are all its
operands and ``$x`` the one differentiated; ``$terms`` are all operands
joined by " + " (a folded chain of additions). A form's ``numbers`` templates
are filled with the numbers the engine recorded instead (``$a``, ``$b``,
``$r``, ``$g``, ``$n``, ``$k``, dropout's mask ``$m`` and rate ``$p``; ``$index``
is an index op's index as the script wrote it, ``…`` where not known), and
with names only where no number stands for a factor (``$R``, ``$X``: the
result and the operand of a derivative nothing recorded).

How to add an op, e.g. ``sqrt``:

1. engine.py: a method on Value (and/or Tensor) that computes the result
   and creates the node with op ``"sqrt"``, and right below it its backward
   rule, registered with ``@_value_rule("sqrt")`` / ``@_tensor_rule("sqrt")``,
   the calculus in a comment (d√a/da = 1/(2√a)).
2. Here: an ``Op("sqrt", ...)`` record in ``_OPS`` with its symbol, its
   ``Form`` (expression, derivative, saved values) and the rule in words;
   the form's ``numbers`` is the derivative as its numbers fill it
   (``"$g / (2 $dot $r)"``): a test fails without it.
3. For the producers: PyTorch's autograd node (``"Sqrt"``) in torch_record's
   ``TORCH_NODES``, and micrograd-style tags (``"sqrt"``) in foreign's ``TAGS``.

Nothing else in the program needs to change: captions, pictures, the page,
the video and the memory count read it from here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .formatting import superscript

__all__ = [
    "ANY",
    "ATOM",
    "ENTRYWISE",
    "GROUP",
    "LINEAR",
    "POSTFIX",
    "PRODUCT",
    "ROWS_COLUMNS",
    "SIGNED",
    "SUM",
    "WHOLE",
    "Form",
    "Op",
    "Writing",
    "dead_units",
    "get",
    "index_text",
    "names",
    "symbol",
]

# The key of Op.forms for an op of any other number of operands (a chain, folded).
ANY = 0

# How a zero in the result's gradient reaches the operands' (Op.flow): entry
# by entry, by rows and columns (a matrix product), or only when all of it is 0.
# LINEAR is a linear layer's, y = x Wᵀ + b: the row of x's from the row of the result's,
# row o of W's and entry o of b's from column o of the result's.
ENTRYWISE, ROWS_COLUMNS, LINEAR, WHOLE = ("entrywise", "rows and columns", "linear layer",
                                          "whole")

# How tightly a written expression binds, which decides where it needs
# parentheses: −0.25, −a < a + b < a·b < a², aᵀ < a name or a number. (A leading minus
# binds least: o + (−0.25), not o + −0.25; it may open a sum, −0.25 + o.)
SIGNED, SUM, PRODUCT, POSTFIX, ATOM = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Writing:
    """How an op's result is written, as Unicode ``text`` and as ``tex``.

    ``wrap[i]`` is the precedence operand ``i`` needs, else it is put in
    parentheses (0: never); ``precedence`` is how tightly the whole binds.
    ``numbers`` is the text with numbers for the operands where it differs from
    ``text`` (names juxtaposed, ``W x``, are numbers with a sign between them).
    """

    text: str
    tex: str
    precedence: int = ATOM
    wrap: tuple[int, ...] = ()
    numbers: str = ""

    @property
    def call(self) -> bool:
        """Whether it is written as a call, whose name says what it is: ``tanh($a)``,
        ``$name($args)`` (a module's: ``model.fc(…)`` says more than ``(…)²``)."""
        return self.text.endswith(("($a)", "($args)")) and not self.text.startswith("(")


@dataclass(frozen=True)
class Form:
    """An op with a given number of operands: how it is written and differentiated.

    ``derivatives[i]`` is ``(text, tex)`` of ∂L/∂(operand i) in terms of
    ``$g``; ``numbers[i]`` is the same product as the engine's numbers fill it
    (``$b $dot $g`` -> ``(−3) · 1``); ``saved`` are what its backward rule
    reads: operand positions, or ``"out"`` for the op's own result.
    """

    expression: Writing
    derivatives: tuple[tuple[str, str], ...]
    saved: tuple[int | str, ...] = ()
    numbers: tuple[str, ...] = ()
    # Whether ``numbers``, filled with numbers written exactly, gives its result exactly
    # (not where it takes a function of them: cos(1.5)).
    exact: bool = True


@dataclass(frozen=True)
class Op:
    """Everything the program knows about one op, apart from its math (engine.py)."""

    name: str
    symbol: str  # what is drawn in the op's circle
    forms: Mapping[int, Form]  # by number of operands
    rule: str  # the local rule in words, for captions
    commutative: bool = False  # operand order does not matter on the page
    broadcasts: bool = False  # elementwise: a broadcast operand's gradient is summed back
    # The entries where the op blocks the gradient whatever arrives, from its
    # operand's data (a ReLU at z <= 0); None for an op that never does.
    gate: Callable[[Any], Any] | None = None
    gate_note: str = ""  # added to the rule where some entries are blocked
    gate_name: str = ""  # what blocks them, for the legend: "a dead ReLU"
    # The op draws a mask of its own (dropout's kept units, attribute "mask")
    # and blocks the gradient where it is 0.
    masked: bool = False
    # How entries of the result's gradient reach an operand's: ENTRYWISE
    # (entry i from entry i, where the shapes match) or ROWS_COLUMNS (rows of
    # the left factor from rows of the result, columns of the right from columns).
    flow: str = ENTRYWISE
    verb: str = ""  # "cannot <verb> shapes (2,) and (3,)"
    # A plain number in a torch call is drawn as a constant operand (o - 0),
    # or, at ``exponent_at``, becomes the op's exponent (t ** 2).
    number_operands: bool = False
    exponent_at: int | None = None
    # A chain of this op whose inner results nobody else uses is the op of all
    # their operands at once (a + b + c): drawn as one, each edge as it was.
    # Its form for any other number of operands is ``forms[ANY]``.
    chains: bool = False
    # Forms for operands of these numbers of dimensions, where the rule is written
    # otherwise for them (x @ W with x a vector: ∂L/∂W = x gᵀ, not xᵀ g).
    shaped: Mapping[tuple[int, ...], Form] = field(default_factory=dict)
    # The op picks entries by an index the script wrote (x[2], x[:, 0]); the producers
    # keep it, written by index_text, as the op's attribute "index".
    indexed: bool = False
    # A reduction (Σ, mean), which may run along some axes only and keep them (Σ₀, mean₂,₃).
    reduces: bool = False

    def form(self, arity: int, ndims: tuple[int, ...] | None = None) -> Form:
        """The form for ``arity`` operands (the generic one if the op has none), or for
        operands of ``ndims`` dimensions where the op writes its rule for them apart."""
        if ndims is not None and ndims in self.shaped:
            return self.shaped[ndims]
        found = self.forms.get(arity)
        if found is None and self.indexed and 1 in self.forms:
            # x[rows, cols]: the index tensors are operands too, and no gradient reaches
            # an index; it is written by the "index" attribute, the rule is the one's.
            one = self.forms[1]
            found = Form(one.expression, one.derivatives * arity, one.saved, one.numbers * arity)
        elif found is None and ANY in self.forms:
            many = self.forms[ANY]
            found = Form(many.expression, many.derivatives * arity, many.saved,
                         many.numbers * arity)
        return found or _generic_form(self.name, arity)

    def saved(self, arity: int) -> tuple[int | str, ...]:
        return self.form(arity).saved

    def symbol_for(self, exponent: float | None = None, axis: Any = None) -> str:
        """The circle's symbol; a power shows its exponent on a blank (``(·)²``,
        ``(·)⁻¹``), so that it cannot be read as a variable x; a reduction along an
        axis shows it as an index (``Σ₀``, ``mean₋₁``, ``Σ₀,₂``)."""
        if axis is not None:
            axes = axis if isinstance(axis, tuple) else (axis,)
            return self.symbol + ",".join(str(one).translate(_SUBSCRIPT) for one in axes)
        if self.exponent_at is None:
            return self.symbol
        if exponent is None:
            return self.symbol
        return "(·)" + superscript(_exponent_text(exponent))


_SUBSCRIPT = str.maketrans("0123456789-", "₀₁₂₃₄₅₆₇₈₉₋")


def _exponent_text(exponent: float) -> str:
    return str(int(exponent)) if float(exponent).is_integer() else f"{exponent:g}"


def _function(text: str, tex: str) -> Writing:
    """A function's application to one operand: ``tanh(a)``."""
    return Writing(f"{text}($a)", tex + r"\left($a\right)")


def _unary(expression: Writing, text: str, tex: str, numbers: str,
           saved: tuple = (), exact: bool = True) -> dict[int, Form]:
    return {1: Form(expression, ((text, tex),), saved, (numbers,), exact)}


def _relu_gate(data: Any) -> Any:
    return data <= 0  # φ'(z) = 0 for z <= 0: nothing passes there


_OPS = [
    Op("add", "+", {2: Form(Writing("$a + $b", "$a + $b", SUM, (0, SUM)),
                            (("$g", "$g"), ("$g", "$g")), numbers=("$g", "$g")),
                    ANY: Form(Writing("$terms", "$terms", SUM), (("$g", "$g"),),
                              numbers=("$g",))},
       "addition passes the gradient on unchanged",
       commutative=True, broadcasts=True, verb="add", chains=True,
       number_operands=True),
    Op("sub", "−", {2: Form(Writing("$a − $b", "$a - $b", SUM, (0, PRODUCT)),
                            (("$g", "$g"), ("−$g", "-$g")), numbers=("$g", "−$g"))},
       "a − b passes the gradient to a, and minus it to b",
       broadcasts=True, verb="subtract", number_operands=True),
    Op("mul", "×", {2: Form(Writing("$a$dot$b", "$a $dot $b", PRODUCT, (PRODUCT, POSTFIX),
                                    "$a $dot $b"),
                            (("$b $dot $g", "$b $dot $g"), ("$a $dot $g", "$a $dot $g")),
                            saved=(0, 1), numbers=("$b $dot $g", "$a $dot $g"))},
       "a product gives each factor the gradient times the other",
       commutative=True, broadcasts=True, verb="multiply", number_operands=True),
    Op("div", "÷", {2: Form(Writing("$a / $b", "$a / $b", PRODUCT, (PRODUCT, POSTFIX)),
                            (("$g / $b", "$g / $b"),
                             ("−$g $dot $a / $b²", "-$g $dot $a / $b^{2}")),
                            saved=(0, 1), numbers=("$g / $b", "−$g $dot $a / $b²"))},
       "a / b sends the gradient / b to a, and −gradient · a / b² to b",
       broadcasts=True, verb="divide", number_operands=True),
    Op("pow", "(·)ʸ", {
        # a ** n with a number n: the exponent is an attribute, not an operand.
        1: Form(Writing("$a$n_sup", "$a^{$n}", POSTFIX, (ATOM,)),
                (("$n $a_pow $dot $g", r"$n \, $a_pow $dot $g"),), saved=(0,),
                numbers=("$n · $a_pow $dot $g",)),
        2: Form(Writing("$a^$b", "$a^{$b}", POSTFIX, (ATOM, ATOM)),
                (("$b $a^($b − 1) $dot $g", r"$b \, $a^{$b - 1} $dot $g"),
                 ("ln $a $r $dot $g", r"\ln $a \, $r $dot $g")), saved=(0, 1, "out"),
                numbers=("$b $dot $a^($b − 1) $dot $g", "ln $a $dot $r $dot $g"))},
       "xⁿ sends back n·xⁿ⁻¹ times the gradient",
       broadcasts=True, verb="raise",
       number_operands=True, exponent_at=1),
    Op("neg", "−", _unary(Writing("−$a", "-$a", SIGNED, (PRODUCT,)), "−$g", "-$g",
                         "−$g"),
       "negation flips the sign of the gradient"),
    Op("matmul", "@", {2: Form(Writing("$a $b", "$a $b", PRODUCT, (PRODUCT, POSTFIX),
                                       "$a · $b"),
                               (("$g · ${b_atom}ᵀ", r"$g \, $b_atom^\top"),
                                ("${a_atom}ᵀ · $g", r"$a_atom^\top $g")), saved=(0, 1),
                               numbers=("$g · ${b}ᵀ", "${a}ᵀ · $g"))},
       "a matrix product gives each factor the gradient times the other, one of the two "
       "transposed",
       flow=ROWS_COLUMNS, shaped={
           # a vector first (x @ W, a row of inputs): its gradient is W g, W's is x gᵀ
           (1, 2): Form(Writing("$a $b", "$a $b", PRODUCT, (PRODUCT, POSTFIX), "$a · $b"),
                        (("$b · $g", r"$b \, $g"), ("$a · ${g_atom}ᵀ", r"$a \, $g_atom^\top")),
                        saved=(0, 1), numbers=("$b · $g", "$a · ${g}ᵀ")),
           # two vectors (u @ v, their inner product): each gets the other times g
           (1, 1): Form(Writing("$a $b", "$a $b", PRODUCT, (PRODUCT, POSTFIX), "$a · $b"),
                        (("$g · $b", r"$g \, $b"), ("$g · $a", r"$g \, $a")),
                        saved=(0, 1), numbers=("$g · $b", "$g · $a"))}),
    Op("relu", "ReLU", _unary(_function("ReLU", r"\mathrm{ReLU}"),
                              # The book's order: the upstream gradient, gated by φ'(z) = 1[z > 0].
                              "$g $dot 1[$a>0]", r"$g $dot \mathbf{1}[$a > 0]",
                              "$g $dot $gate", saved=(0,)),
       "ReLU passes the gradient only where its input was positive",
       gate=_relu_gate, gate_note="a dead unit (input ≤ 0) passes nothing",
       gate_name="a dead ReLU"),
    Op("dropout", "dropout", _unary(_function("dropout", r"\mathrm{dropout}"),
                                    "$g $dot m / (1 − p)", r"$g $dot m / (1 - p)",
                                    "$g $dot $m / (1 − $p)"),
       "dropout passes the gradient to the units it kept (m = 1), times 1/(1 − p), and none "
       "to those it dropped", masked=True, gate_note="dropped units pass nothing",
       gate_name="dropout"),
    Op("tanh", "tanh", _unary(_function("tanh", r"\tanh"),
                              "(1 − $r²) $dot $g", r"\left(1 - $r^{2}\right) $dot $g",
                              "(1 − $r²) $dot $g", saved=("out",)),
       "tanh multiplies the gradient by 1 − tanh²"),
    Op("exp", "exp", _unary(_function("exp", r"\exp"), "$r $dot $g", "$r $dot $g",
                            "$r $dot $g", saved=("out",)),
       "exp multiplies the gradient by its own result"),
    Op("log", "log", _unary(_function("log", r"\log"), "$g / $a", "$g / $a", "$g / $a",
                            saved=(0,)),
       "log divides the gradient by its input"),
    Op("sigmoid", "σ", _unary(_function("σ", r"\sigma"), "$r(1 − $r) $dot $g",
                              r"$r\left(1 - $r\right) $dot $g", "$r $dot (1 − $r) $dot $g",
                              saved=("out",)),
       "sigmoid multiplies the gradient by σ(1 − σ)"),
    Op("sqrt", "√", _unary(Writing("√$a", r"\sqrt{$a}", POSTFIX, (ATOM,)),
                           "$g / (2 $r)", r"$g / \left(2 \, $r\right)", "$g / (2 $dot $r)",
                           saved=("out",)),
       "square root divides the gradient by twice its result"),
    Op("square", "(·)²", _unary(Writing("${a}²", "$a^{2}", POSTFIX, (ATOM,)),
                                "2 $a $dot $g", r"2 \, $a $dot $g", "2 · $a $dot $g",
                                saved=(0,)),
       "squaring sends back twice the input times the gradient"),
    Op("sqnorm", "‖·‖²", _unary(Writing("‖$a‖²", r"\|$a\|^{2}", POSTFIX, (0,)),
                                "2 $a $dot $g", r"2 \, $a $dot $g",
                                "2 · $a $dot $g", saved=(0,)),
       "a squared norm ‖x‖² sends back 2x times the gradient"),
    Op("sum", "Σ", _unary(Writing("Σ$a", r"\sum $a", PRODUCT, (POSTFIX,)),
                          "$g · 1", r"$g \cdot \mathbf{1}", "$g $dot $ones"),
       "sum copies the gradient to every entry", reduces=True),
    Op("mean", "mean", _unary(_function("mean", r"\mathrm{mean}"),
                              "$g · 1 / $k", r"$g \cdot \mathbf{1} / $k",
                              "$g $dot $ones / $k"),
       "mean copies the gradient to every entry, divided by their count", reduces=True),
    Op("transpose", "ᵀ", _unary(Writing("${a}ᵀ", r"$a^\top", POSTFIX, (ATOM,)),
                                "($g)ᵀ", r"\left($g\right)^\top", "(${g})ᵀ"),
       "transpose sends back the gradient transposed"),
    Op("getitem", "[ ]", _unary(Writing("$a[$index]", r"$a[$index]", POSTFIX, (POSTFIX,)),
                                "$g at [$index], 0 elsewhere", r"$g \text{ at } [$index]",
                                "$g at [$index], 0 elsewhere"),
       "indexing sends the gradient back to the picked entries", indexed=True),
]

_REGISTRY: dict[str, Op] = {op.name: op for op in _OPS}


# An op whose local derivative no number records (one known only by name, a
# group of ops): the upstream gradient's number, the derivative by its names
# ($R the result, $X the operand), then the contribution the engine recorded.
_UNRECORDED = "∂$R/∂$X · $g"


@functools.lru_cache(maxsize=256)
def _generic_form(name: str, arity: int) -> Form:
    """An op known only by name: ``name(a, b)``, and ∂r/∂x · g for each operand x."""
    tex_name = r"\mathrm{" + name.replace("_", r"\_") + "}"
    return Form(Writing(f"{name}($args)", tex_name + r"\left($args\right)"),
                ((r"∂$r/∂$x · $g", r"\frac{\partial $r}{\partial $x} $g"),) * arity,
                numbers=(_UNRECORDED,) * arity)


def _linear_layer() -> Op:
    """PyTorch's linear layer (nn.Linear, F.linear): y = x Wᵀ + b for a batch x of rows,
    y = W x + b for one input x, a column. Its operands: x, W and (if it has one) b. It
    is written as called, linear(x); with numbers, as that sum."""
    called = _generic_form("linear", 1).expression
    writing = {n: replace(called, numbers="$a · ${b}ᵀ" + " + $c" * (n == 3)) for n in (2, 3)}
    writing_one = {n: replace(called, numbers="$b · $a" + " + $c" * (n == 3)) for n in (2, 3)}
    batch = (("$g · $b", r"$g \, $b"), ("${g_atom}ᵀ · $a", r"$g_atom^\top $a"),
             ("Σ₀ $g", r"\sum_{0} $g"))
    one = (("${b_atom}ᵀ · $g", r"$b_atom^\top $g"), ("$g · ${a_atom}ᵀ", r"$g \, $a_atom^\top"),
           ("$g", "$g"))
    batch_numbers = ("$g · $b", "${g}ᵀ · $a", "Σ₀ $g")
    one_numbers = ("${b}ᵀ · $g", "$g · ${a}ᵀ", "$g")
    forms = {n: Form(writing[n], batch[:n], (0, 1), batch_numbers[:n]) for n in (2, 3)}
    shaped = {(1, 2, 1)[:n]: Form(writing_one[n], one[:n], (0, 1), one_numbers[:n])
              for n in (2, 3)}
    return Op("linear", "linear", forms,
              "a linear layer gives its input the gradient times W, W the gradient times "
              "the input, and b the gradient, summed over the batch's rows",
              flow=LINEAR, shaped=shaped)


# Ops other engines record and this one has not, whose local derivative is written
# with the numbers recorded (PyTorch's sin at x: cos(x) times the gradient).
_FOREIGN = {
    "sin": Op("sin", "sin", _unary(_function("sin", r"\sin"), "cos($a) $dot $g",
                                   r"\cos\left($a\right) $dot $g", "cos($a) $dot $g",
                                   saved=(0,), exact=False),
              "sin multiplies the gradient by the cosine of its input"),
    "cos": Op("cos", "cos", _unary(_function("cos", r"\cos"), "−sin($a) $dot $g",
                                   r"-\sin\left($a\right) $dot $g", "−sin($a) $dot $g",
                                   saved=(0,), exact=False),
              "cos multiplies the gradient by minus the sine of its input"),
    "linear": _linear_layer(),
}


@functools.lru_cache(maxsize=256)
def _unknown(name: str) -> Op:
    if name in _FOREIGN:
        return _FOREIGN[name]
    return Op(name, name, {}, f"{name} multiplies the gradient by its local derivative")


# A group (with group("l"): ...) drawn closed, as one operator standing for the
# ops inside: not an op of the engine's, so not among names(); $name is the
# group's name, drawn in its circle.
GROUP = Op("group", "", {ANY: Form(Writing("$name($args)", r"\mathrm{$name}\left($args\right)"),
                                   (("∂$r/∂$x · $g", r"\frac{\partial $r}{\partial $x} $g"),),
                                   numbers=(_UNRECORDED,))},
           "the operator passes back to each input the gradients the ops inside it sent "
           "there, summed",
           flow=WHOLE)


def get(name: str) -> Op:
    """The record of op ``name``; an unknown op gets a generic one, named by itself."""
    found = _REGISTRY.get(name)
    if found is None:
        return GROUP if name == GROUP.name else _unknown(name)
    return found


def names() -> tuple[str, ...]:
    """The canonical names of the ops the registry knows."""
    return tuple(_REGISTRY)


def symbol(name: str, exponent: float | None = None, axis: Any = None) -> str:
    """What is drawn in an operator's circle: ``+``, ``×``, ``ReLU``, ``x²``, ``Σ₀``…"""
    return get(name).symbol_for(exponent, axis)


# An index array of at most this many entries is written out (x[[0, 2]]).
_INDEX_ENTRIES = 6


def index_text(index: Any) -> str:
    """An index as the script wrote it, for an indexed op's attribute "index": ``2``,
    ``−1``, ``1:3``, ``:, 0``, ``...``, a name the producer knows (a string: ``target``),
    a small array by its entries (``[0, 2]``); "…" for what cannot be written short."""
    parts = index if isinstance(index, tuple) else (index,)
    return ", ".join(_index_part(part) for part in parts)


def _index_part(part: Any) -> str:
    if isinstance(part, str):
        return part
    if part is None:
        return "None"
    if part is Ellipsis:
        return "..."
    if isinstance(part, slice):
        ends = [part.start, part.stop] + ([part.step] if part.step is not None else [])
        return ":".join("" if end is None else _index_part(end) for end in ends)
    array = np.asarray(part)
    if array.dtype.kind in "iub" and array.size <= _INDEX_ENTRIES:
        return str(array.tolist()).replace("-", "−")
    return "…"


def dead_units(name: str, operand: Any) -> Any:
    """For a gating op, where it blocks the gradient (bool, or nested lists); else None."""
    gate = get(name).gate
    return None if gate is None else np.asarray(gate(operand)).tolist()
