"""How long each example's clip is, beat by beat, without drawing a frame.

Run with ``.venv/bin/python bench/clip_lengths.py`` (all of ``examples/`` but
memory_growth, whose clip of thousands of ops takes minutes), or name scripts:
``bench/clip_lengths.py examples/d2l_mlp.py -v``. Each clip is played as manim's
dry run (no frame drawn, no file written); it prints the clip's length and, with
``-v``, each cue's seconds, the pace its step was given and its first line.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import manim

from backpropviz.animate.sweep import BackpropScene
from backpropviz.errors import BackpropvizError
from backpropviz.script import graph_of_script

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {"memory_growth.py"}


def dry_run(script: Path) -> BackpropScene:
    """The clip of ``script`` played without drawing (its times and cues are the same)."""
    G = graph_of_script(script, (), quiet=True)
    settings = {"media_dir": tempfile.mkdtemp(prefix="bpv-bench-"), "disable_caching": True,
                "progress_bar": "none", "verbosity": "WARNING", "quality": "low_quality",
                "dry_run": True}
    with manim.tempconfig(settings):
        scene = BackpropScene(G)
        scene.camera.capture_mobjects = lambda mobjects, **kwargs: None
        scene.render()
    return scene


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", type=Path)
    parser.add_argument("-v", "--verbose", action="store_true", help="each cue's seconds")
    args = parser.parse_args()
    scripts = args.scripts or [p for p in sorted((ROOT / "examples").glob("*.py"))
                               if p.name not in SKIPPED] + [ROOT / "examples/capstone/"
                                                            "forked_neuron.py"]
    for script in scripts:
        try:
            scene = dry_run(script)
        except BackpropvizError as error:
            print(f"{script.name}: not a clip ({error})")
            continue
        print(f"{script.name}: {scene.time:.1f} s")
        if not args.verbose:
            continue
        starts = [start for what, _, start in scene.timeline if what == "step"]
        paces = {start: scene.paces[index].kind
                 for index, start in enumerate(starts, start=1) if index in scene.paces}
        ends = [start for start, _ in scene.cues[1:]] + [scene.time]
        for (start, text), end in zip(scene.cues, ends, strict=True):
            kind = paces.get(start, "")
            print(f"  {end - start:5.1f} s  {kind:6}  {text.splitlines()[0][:70]}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
