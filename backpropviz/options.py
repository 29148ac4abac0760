"""One options type for every output, and the table of outputs: which format is which kind."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import UsageError
from .style import MOST_DIGITS, RANKDIRS, SPEEDS, THEMES

__all__ = [
    "ALPHA_FORMATS",
    "CLIP",
    "CLIP_MAX_NODES",
    "DEFAULT_DOT_TIMEOUT",
    "DEFAULT_ITERATIONS",
    "DEFAULT_MAX_NODES",
    "EXPORT",
    "FIGURE",
    "FORMATS",
    "KINDS",
    "MEMORY_FORMATS",
    "PAGE",
    "PHASES",
    "QUALITIES",
    "TRAINING_FORMATS",
    "Options",
    "add_arguments",
    "alpha_refusal",
    "format_of",
    "from_arguments",
    "kind_of",
    "needs_dot",
    "option_fields",
    "parse_frame",
    "positive",
]

# What each output format is: a figure (graphviz), the IR itself (never laid
# out), the step-through page, or the clip (manim).
FIGURE, EXPORT, PAGE, CLIP = "figure", "export", "page", "clip"
KINDS: dict[str, tuple[str, ...]] = {
    FIGURE: ("svg", "png", "pdf", "dot"),
    EXPORT: ("json", "graphml", "txt"),
    PAGE: ("html",),
    CLIP: ("mp4", "gif", "webm", "mov"),
}
FORMATS = tuple(fmt for formats in KINDS.values() for fmt in formats)
# What `backpropviz memory` writes: the chart, a page with its table, the timeline.
MEMORY_FORMATS = ("svg", "png", "pdf", "html", "json")
# The clip formats that keep an alpha channel (a transparent theme needs one).
ALPHA_FORMATS = ("webm", "mov")
# manim's qualities by the letter of its -q flag, and the passes a clip shows.
QUALITIES = {"l": "low_quality", "m": "medium_quality", "h": "high_quality",
             "p": "production_quality", "k": "fourk_quality"}
PHASES = ("forward", "backward", "both")
# How long dot may lay out one picture, in seconds, unless told otherwise.
DEFAULT_DOT_TIMEOUT = 60.0
# The drawing's size limit, counted in IR nodes (values and ops). dot's layout
# time grows faster than linearly with the graph: around this size it still
# answers in seconds (bench/render.py: ~3,900 nodes take 1.6 s of dot, ~10,000
# take 29 s), beyond it a user waits with nothing to show.
DEFAULT_MAX_NODES = 4000
# A clip's: past about this many the boxes get too small to read at 1080p and
# the clip too long to watch; the Tensor form of the same network is smaller.
CLIP_MAX_NODES = 60
# A training run (--iterations): how many backward passes it keeps unless told, and
# the formats that draw a whole run (its JSON, its figure, its page, its clip).
DEFAULT_ITERATIONS = 10
TRAINING_FORMATS = ("json", "svg", "png", "pdf", "html", "mp4")


def kind_of(fmt: str) -> str:
    """The kind of output ``fmt`` is (FIGURE, EXPORT, PAGE or CLIP)."""
    for kind, formats in KINDS.items():
        if fmt in formats:
            return kind
    raise UsageError(f"unknown format: {fmt!r} (must be one of {list(FORMATS)})")


def needs_dot(fmt: str, steps: bool = False) -> bool:
    """Whether graphviz's dot runs for ``fmt`` (and --steps): for every picture, not
    for an export or DOT text."""
    return steps or (kind_of(fmt) != EXPORT and fmt != "dot")


def format_of(path: str | Path | None, format: str | None = None,
              formats: Sequence[str] = FORMATS, what: str = "") -> str:
    """The format of an output (``what`` it is, for the messages): ``format`` if
    given, else ``path``'s extension; a path whose extension names another format
    is refused."""
    unknown = f"unknown format{' for ' + what if what else ''}"
    extension = Path(path).suffix[1:].lower() if path not in (None, "-") else ""
    if format is not None:
        if format not in formats:
            raise UsageError(f"{unknown}: {format!r} (must be one of {list(formats)})")
        if extension in FORMATS and extension != format:
            raise UsageError(f"-o {path} is a .{extension} file but --format is {format}: "
                             "give one of them, or make them agree")
        return format
    if path in (None, "-"):
        return "svg"
    if not extension:
        raise UsageError(f"cannot tell the format of {str(path)!r} without an extension "
                         f"(one of {list(formats)}); name it e.g. {Path(path).name}.svg or "
                         "pass --format")
    if extension not in formats:
        pixels = extension in RASTERS and "png" in formats
        raise UsageError(f"{unknown}: {extension!r} (must be one of {list(formats)})" +
                         (f"; for a picture in pixels, name it {Path(path).stem}.png"
                          if pixels else ""))
    return extension


# Picture formats of pixels other than PNG, which a figure is written as instead.
RASTERS = ("jpg", "jpeg", "bmp", "tif", "tiff", "webp")


def parse_frame(frame: Any) -> tuple[int, int]:
    """``"1920x1080"`` or ``(1920, 1080)`` as a pair of positive ints (pixels)."""
    given = frame
    if isinstance(frame, str):
        parts = frame.lower().replace("×", "x").split("x")
        try:
            frame = tuple(int(part) for part in parts)
        except ValueError:
            frame = ()
    if isinstance(frame, list):
        frame = tuple(frame)
    if (not isinstance(frame, tuple) or len(frame) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                       for n in frame)):
        raise UsageError(f"a frame is WIDTHxHEIGHT in pixels, e.g. 1920x1080, got {given!r}")
    return frame


def _option(help: str, flag: str | tuple[str, ...] | None = None, **argparse: Any) -> Any:
    """A field's declaration for the adapters: its help, its flag and argparse's keywords."""
    return {"help": help, "flag": flag, "argparse": argparse}


@dataclass(frozen=True)
class Options:
    """How an output is made; the same for every output, each writer reading its part.

    The command line, the notebook magic and the Sphinx directive translate
    their arguments into this; ``backpropviz.write`` takes it. Every field has
    a default that draws the book's figure as the command line does.
    """

    rankdir: str | None = field(default=None, metadata=_option(
        "direction of the data flow (default LR, or with --fit the one that fills the frame "
        "best); book: as the book draws it, from the inputs at the lower left up to the "
        "output at the upper right", choices=RANKDIRS))
    theme: str = field(default="light", metadata=_option(
        "colours and background (default light; transparent and transparent-dark for light "
        "and dark slides)", choices=tuple(THEMES)))
    precision: int = field(default=4, metadata=_option(
        "significant digits of the numbers shown (default 4)", metavar="N"))
    fit: tuple[int, int] | None = field(default=None, metadata=_option(
        "lay the figure out to fill a frame of W by H pixels, e.g. 1920x1080 for a slide: "
        "direction and folding into rows chosen, the picture sized to it (SVG, PNG, PDF, "
        "--steps)", metavar="WxH"))
    expand: bool = field(default=False, metadata=_option(
        "draw each group (backpropviz.group) opened, its ops in a box, rather than as one "
        "operator"))
    modules: bool = field(default=False, metadata=_option(
        "draw a PyTorch model at module level: each innermost module (model.0, model.1...) "
        "as one operator, the ops between modules (a residual addition) as themselves"))
    depth: int | None = field(default=None, metadata=_option(
        "draw a PyTorch model's modules N levels down as one operator each (1: its "
        "children, model.layer1...; as torchview's depth), a module above that with no "
        "modules inside as itself", metavar="N"))
    compact: bool = field(default=False, metadata=_option(
        "only named values as boxes: each run of ops whose results have no name drawn as "
        "one operator, labelled with what it computes"))
    roll: bool = field(default=False, metadata=_option(
        "draw a loop the graph repeats (an unrolled RNN: the same ops on the same weights, "
        "each step feeding the next) as one block with a loop edge ×N, its shared weights' "
        "gradients summed over the steps; done by itself when the unrolled graph is too big "
        "to lay out"))
    repetition: int | None = field(default=None, metadata=_option(
        "draw the loop rolled (--roll) with the numbers of its repetition K (1: the first; "
        "default the last)", metavar="K"))
    keep_sums: bool = field(default=False, metadata=_option(
        "keep each sum as the script wrote it (x1w1 + x2w2, then + b) rather than one + "
        "of all its terms"))
    symbolic: bool = field(default=False, metadata=_option(
        "names only, no numbers, as the book draws its figures"))
    show_constants: bool = field(default=False, metadata=_option(
        "draw the gradients and saved marks of constants (the 2 in L / 2) too"))
    practice: bool = field(default=False, metadata=_option(
        "the page (.html) as an exercise: gradients hidden, each backward step asks for "
        "the ones it produces, checks them, hints with the rule and scores the answers"))
    forward_only: bool = field(default=False, metadata=_option(
        "draw the forward pass only: do not run backward and leave gradients out",
        flag="--no-backward"))
    timeout: float = field(default=DEFAULT_DOT_TIMEOUT, metadata=_option(
        "stop graphviz's layout after S seconds and say what to draw instead (default "
        f"{DEFAULT_DOT_TIMEOUT:g})", metavar="S"))
    script_timeout: float | None = field(default=None, metadata=_option(
        "stop the script after S seconds and say which line it was at (default: no limit, "
        "as a training script may rightly run for minutes)", metavar="S"))
    quality: str | None = field(default=None, metadata=_option(
        "manim's quality: l 480p15 (default), m 720p30, h 1080p60, p 1440p60, k 4K",
        choices=tuple(QUALITIES), flag=("-q", "--quality")))  # (manim's own -q)
    phase: str | None = field(default=None, metadata=_option(
        "which passes to animate (default both)", choices=PHASES))
    speed: float | None = field(default=None, metadata=_option(
        "playback speed factor (default 1)", metavar="X"))
    memory: bool = field(default=False, metadata=_option(
        "show a meter of the bytes the forward pass keeps for backward, as the clip goes "
        "(for the chart of them: backpropviz memory)"))
    jobs: int | None = field(default=None, metadata=_option(
        "how many processes work at once: the scripts drawn (several SCRIPTs), or those "
        "rendering a clip, whose frames are the same with any N (default: the cores)",
        metavar="N", flag=("-j", "--jobs")))
    iterations: int | None = field(default=None, metadata=_option(
        "record the script's training loop: keep its first N backward passes (default "
        f"{DEFAULT_ITERATIONS}), each with what the script then did to every parameter, and "
        f"draw the run ({', '.join('.' + f for f in TRAINING_FORMATS)})", metavar="N",
        nargs="?", const=DEFAULT_ITERATIONS))
    every: int | None = field(default=None, metadata=_option(
        "with --iterations, keep every Kth backward pass of a long loop (passes 0, K, 2K...)",
        metavar="K"))
    iteration: int | None = field(default=None, metadata=_option(
        "record the script's training loop and draw its backward pass K (0: the first) as "
        "any one pass is drawn", metavar="K"))
    # Not options of the adapters: what the command line sets for a clip.
    progress: bool = False
    max_nodes: float | None = None

    def __post_init__(self) -> None:
        _one_of("rankdir", self.rankdir, RANKDIRS, optional=True)
        _one_of("theme", self.theme, sorted(THEMES))
        _one_of("quality", self.quality, tuple(QUALITIES), optional=True)
        _one_of("phase", self.phase, PHASES, optional=True)
        if isinstance(self.precision, bool) or not isinstance(self.precision, int) \
                or not 1 <= self.precision <= MOST_DIGITS:
            raise UsageError(f"precision must be an int of significant digits, 1 to "
                             f"{MOST_DIGITS}, got {self.precision!r}")
        for name in ("timeout", "speed", "script_timeout"):
            number = getattr(self, name)
            if number is not None and not (isinstance(number, int | float) and number > 0):
                raise UsageError(f"{name} must be a positive number, got {number!r}")
        if self.speed is not None and not SPEEDS[0] <= self.speed <= SPEEDS[1]:
            raise UsageError(f"speed must be {SPEEDS[0]:g} to {SPEEDS[1]:g}, got {self.speed!r}")
        for name, least in (("iterations", 1), ("every", 1), ("iteration", 0), ("jobs", 1),
                            ("depth", 1), ("repetition", 1)):
            count = getattr(self, name)
            if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                      or count < least):
                raise UsageError(f"{name} must be an int of at least {least}, got {count!r}")
        if self.fit is not None:
            object.__setattr__(self, "fit", parse_frame(self.fit))

    def replace(self, **changes: Any) -> Options:
        """These options with some changed (each checked again)."""
        unknown = sorted(set(changes) - {f.name for f in fields(self)})
        if unknown:
            raise UsageError(f"unknown option: {unknown[0]!r} (must be one of "
                             f"{sorted(f.name for f in fields(self))})")
        return replace(self, **changes)

    # -------------------------------------------------------- what each writer reads

    def view(self) -> dict[str, Any]:
        """views.drawn_graph's keywords: groups open or closed, modules, compact."""
        return {"expand": self.expand, "compact_view": self.compact,
                "modules": self.depth if self.depth is not None else self.modules}

    def figure(self) -> dict[str, Any]:
        """draw's and step_diagrams' keywords (the view is drawn already)."""
        options: dict[str, Any] = {
            "rankdir": self.rankdir or "LR", "theme": self.theme, "precision": self.precision,
            "forward_only": self.forward_only, "show_constants": self.show_constants,
            "expand": self.expand, "symbolic": self.symbolic}
        if self.fit is not None:
            options["fit"] = self.fit
            if self.rankdir is None:
                options["rankdir"] = None  # the fit chooses
        return options

    def page(self) -> dict[str, Any]:
        """to_html's keywords."""
        return {"rankdir": self.rankdir or "LR", "theme": self.theme,
                "precision": self.precision, "practice": self.practice}

    def clip(self) -> dict[str, Any]:
        """render_video's keywords."""
        clip: dict[str, Any] = {
            "quality": self.quality or "l", "speed": self.speed or 1.0,
            "phase": "forward" if self.forward_only else (self.phase or "both"),
            "theme": self.theme, "rankdir": self.rankdir or "LR",
            "precision": self.precision, "progress": self.progress, "jobs": self.jobs,
            "memory": self.memory}
        if self.max_nodes is not None:
            clip["max_nodes"] = self.max_nodes
        return clip

    # -------------------------------------------------------- usage errors

    def check(self, fmt: str, *, steps: bool = False) -> None:
        """UsageError for options that do not go together with ``fmt`` (and --steps),
        caught before any script runs."""
        kind = kind_of(fmt)
        given = [f"--{name}" for name in ("quality", "phase", "speed")
                 if getattr(self, name) is not None] + (["--memory"] if self.memory else [])
        if given and kind != CLIP:
            raise UsageError(f"{', '.join(given)}: for videos only "
                             f"({', '.join(KINDS[CLIP])}), not for {fmt}")
        if self.fit is not None and kind != FIGURE and not steps:
            raise UsageError(f"--fit lays out figures ({', '.join(KINDS[FIGURE])}, --steps), "
                             f"not {fmt}" + (": the page fits itself to its window"
                                             if kind == PAGE else ""))
        if self.symbolic and (kind != FIGURE or steps):
            raise UsageError("--symbolic draws a figure without numbers "
                             f"({', '.join(KINDS[FIGURE])}); the steps, the page and the clip "
                             "show the numbers")
        if self.practice and (kind != PAGE or steps):
            raise UsageError(f"--practice makes the step-through page ask for the gradients: "
                             f"for .html only, not {'--steps' if steps else fmt}")
        if self.practice and self.forward_only:
            raise UsageError("--practice asks for the gradients of the backward pass, which "
                             "--no-backward leaves out")
        if self.forward_only and steps:
            raise UsageError("--steps shows the backward pass, which --no-backward leaves out")
        if self.forward_only and self.phase not in (None, "forward"):
            raise UsageError(f"--phase {self.phase} animates the backward pass, which "
                             "--no-backward leaves out")
        shaping = [f"--{name}" for name in ("modules", "compact", "expand")
                   if getattr(self, name)] + (["--depth"] if self.depth is not None else [])
        if shaping and kind == EXPORT and not steps:
            raise UsageError(f"{', '.join(shaping)}: how the picture draws the graph; {fmt} "
                             "writes the graph as recorded, every op (the IR); draw it as "
                             ".svg, .dot or .html")
        refusal = alpha_refusal(self.theme, fmt) if kind == CLIP else None
        if refusal:
            raise UsageError(refusal)
        self._check_training(fmt, steps)

    @property
    def training(self) -> bool:
        """Whether the output is a training run (--iterations, --every), not one pass."""
        return self.iterations is not None or self.every is not None

    def _check_training(self, fmt: str, steps: bool) -> None:
        """UsageError for a training run's options that do not go together."""
        if self.training and self.iteration is not None:
            raise UsageError("--iteration K draws one pass of the run, --iterations N the run: "
                             "give one of them")
        if self.training and fmt not in TRAINING_FORMATS:
            raise UsageError(f"--iterations draws a run as "
                             f"{', '.join('.' + f for f in TRAINING_FORMATS)}, not .{fmt}")
        if self.training and steps:
            raise UsageError("--steps draws the steps of one pass: pick the pass with "
                             "--iteration K rather than --iterations")
        if self.training and self.practice:
            raise UsageError("--practice asks for the gradients of one pass: pick the pass "
                             "with --iteration K rather than --iterations")
        if self.training and (self.roll or self.repetition is not None):
            raise UsageError("--roll draws the loop of one pass: pick the pass with "
                             "--iteration K rather than --iterations")
        if (self.training or self.iteration is not None) and self.forward_only:
            raise UsageError("--iterations and --iteration record backward passes, which "
                             "--no-backward leaves out")


def alpha_refusal(theme: str, fmt: str) -> str | None:
    """Why a clip in ``theme`` cannot be ``fmt`` ("mp4" or ".mp4"): a theme on no
    background needs a format with an alpha channel; None if it can."""
    fmt = fmt.lower().lstrip(".")
    if THEMES[theme].transparent and fmt not in ALPHA_FORMATS:
        return (f"--theme {theme} needs a video format with an alpha channel "
                f"({', '.join('.' + f for f in ALPHA_FORMATS)}), not .{fmt}")
    return None


def _one_of(name: str, value: Any, choices: Sequence[str], optional: bool = False) -> None:
    if value is None and optional:
        return
    if value not in choices:
        raise UsageError(f"unknown {name}: {value!r} (must be one of {list(choices)})")


def option_fields() -> list[Any]:
    """The fields the adapters offer (those declared with help), in order."""
    return [f for f in fields(Options) if f.metadata]


# -------------------------------------------------------- the adapters


def add_arguments(parser: Any, wanted: Callable[[str], bool]) -> None:
    """The fields ``wanted`` (by name) as arguments of an argparse ``parser``."""
    for declared in option_fields():
        if not wanted(declared.name):
            continue
        meta = declared.metadata
        flag = meta["flag"] or "--" + declared.name.replace("_", "-")
        flags = flag if isinstance(flag, tuple) else (flag,)
        keywords = {"dest": declared.name, "help": meta["help"], **meta["argparse"]}
        if declared.type in ("bool", bool):
            parser.add_argument(*flags, action="store_true", **keywords)
            continue
        parse = {"precision": positive(int, most=MOST_DIGITS), "timeout": positive(float),
                 "script_timeout": positive(float),
                 "speed": positive(float, least=SPEEDS[0], most=SPEEDS[1]),
                 "iterations": positive(int), "every": positive(int),
                 "iteration": positive(int, zero=True), "jobs": positive(int),
                 "depth": positive(int), "repetition": positive(int),
                 "fit": _frame}.get(declared.name)
        parser.add_argument(*flags, type=parse, default=declared.default, **keywords)


def from_arguments(args: Any, **changes: Any) -> Options:
    """The Options that parsed arguments (an argparse Namespace) give."""
    given = {f.name: getattr(args, f.name) for f in fields(Options) if hasattr(args, f.name)}
    return Options(**{**given, **changes})


def _frame(text: str) -> tuple[int, int]:
    import argparse

    try:
        return parse_frame(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive(kind: type, zero: bool = False, *, least: float | None = None,
             most: float | None = None) -> Callable[[str], Any]:
    """An argparse type: a positive number of ``kind`` (int or float), or 0 too; from
    ``least`` to ``most`` if given."""
    import argparse

    def parse(text: str) -> Any:
        try:
            number = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if not (number > 0 or (zero and number == 0)):
            raise argparse.ArgumentTypeError(f"must be {'0 or more' if zero else 'positive'}, "
                                             f"got {text}")
        if not (least is None or number >= least) or not (most is None or number <= most):
            raise argparse.ArgumentTypeError(f"must be {least or 1:g} to {most:g}, got {text}")
        return number
    return parse
