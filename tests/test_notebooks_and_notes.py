"""Notebooks and course notes: the page's static fallback, the cell magic, the Sphinx directive."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest
from test_cli import EXAMPLES, script

from backpropviz import Value, draw
from backpropviz.html import step_through


def test_the_page_offers_a_static_picture_and_says_what_it_is():
    a = Value(3.0)
    b = a + a
    c = b * b
    c.backward()
    names = {"a": a, "b": b, "c": c}
    page = step_through(c, names=names)
    bundle = page._repr_mimebundle_()
    assert bundle["text/html"].startswith('<iframe srcdoc="')
    # The static picture is the last step: every gradient drawn (dc/da = 24, dc/db = 12).
    assert bundle["image/svg+xml"] == draw(c, names=names).svg
    assert ">24<" in bundle["image/svg+xml"] and ">12<" in bundle["image/svg+xml"]
    assert bundle["text/plain"] == repr(page)
    assert repr(page).startswith("<Page: backpropviz: the backward pass of c (")
    assert repr(draw(c)) == ("<Diagram of 3 values and 2 ops, with gradients; "
                             ".render('figure.svg') writes it>")


IPYTHON_SESSION = """
    import json, sys
    from IPython.testing.globalipapp import start_ipython
    ip = start_ipython()
    ip.run_line_magic("load_ext", "backpropviz")
    ip.run_cell("from backpropviz import Value\\nbase = Value(1.5)")
    shown = ip.run_cell_magic("backpropviz", "--rankdir BT -o cell.json", '''
    def main():
        a = Value(2.0)
        b = a * base + a
        b.backward()
        return b
    L = main()
    ''')
    page = ip.run_cell_magic("backpropviz", "--format html", "c = base * base\\n")
    missing = ip.run_cell("%%backpropviz nope\\nd = base * 2\\n")
    failed = ip.run_cell("%%backpropviz\\ne = base * undefined_name\\n")
    slow = ip.run_cell("%%backpropviz --script-timeout 0.3\\nsteps = 0\\n"
                       "while True: steps += 1\\n")
    training = ip.run_cell("%%backpropviz --iterations 3\\nf = base * base\\n")
    # A PyTorch cell after cells of backpropviz's engine: its own graph, backward or not.
    ip.run_cell("%%backpropviz -o torch.txt\\nimport torch\\n"
                "w = torch.tensor([1.0, 2.0], requires_grad=True)\\n"
                "out = (w * w).sum()\\nout.backward()\\n")
    ip.run_cell("%%backpropviz -o torch2.txt\\nv = torch.tensor(3.0, requires_grad=True)\\n"
                "o2 = (v * v).tanh()\\n")
    print(json.dumps({
        "shown": repr(shown), "page": sorted(page._repr_mimebundle_()),
        "L": ip.user_ns["L"].data, "missing": missing.success, "failed": failed.success,
        "slow": slow.success, "training": training.success,
        "rankdir": "rankdir=\\"BT\\"" in shown.source,
    }))
    """


def test_the_cell_magic_runs_the_cell_and_shows_its_graph(tmp_path):
    pytest.importorskip("IPython")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(IPYTHON_SESSION)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["shown"].startswith("<Diagram of 4 values and 2 ops, with gradients")
    assert result["rankdir"] and result["L"] == 5.0  # the cell's names stay defined
    assert result["page"] == ["image/svg+xml", "text/html", "text/plain"]
    assert result["missing"] is False and result["failed"] is False  # the cells fail
    said = done.stdout + done.stderr
    assert "UsageError: backpropviz: unknown root 'nope'" in said  # one line, no traceback
    assert "NameError" in said  # IPython's own traceback of the cell
    assert "UsageError: backpropviz: the cell failed, so there is no graph to draw" in said
    assert result["slow"] is False  # stopped, and says where: the cell's second line
    assert result["training"] is False and ("UsageError: backpropviz: a cell draws its last "
                                            "backward pass; record a training loop") in said
    assert re.search(r"UsageError: backpropviz: the cell ran longer than 0.3 s "
                     r"\(--script-timeout\); it was at <ipython-input-\d+-\w+>:2\n", said)
    # out = Σ w², ∂out/∂w = 2w; o2 = tanh(v²) at v = 3, ∂o2/∂v = 2v(1 − tanh²(9))
    torch_text = (tmp_path / "torch.txt").read_text()
    assert "w = param" in torch_text and "grad [2] [2, 4]" in torch_text
    assert "# backward from out" in torch_text and " a " not in torch_text
    torch = pytest.importorskip("torch")
    v = torch.tensor(3.0, requires_grad=True)
    torch.tanh(v * v).backward()  # in float32, as the cell computed it
    assert f"v = param         data 3   grad {v.grad.item():.4g}" in (
        tmp_path / "torch2.txt").read_text()
    written = json.loads((tmp_path / "cell.json").read_text())
    # b = a·base + a at a = 2, base = 1.5: db/da = base + 1 = 2.5, db/dbase = a = 2.
    grads = {node["label"]: node["grad"] for node in written["nodes"]
             if node["kind"] == "value" and node["label"]}
    assert grads == {"a": 2.5, "base": 2.0, "L": 1.0}  # the global name first, as for scripts


def _sphinx(source, out, *extra):
    return subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", *extra,
                           str(source), str(out)], capture_output=True, text=True, timeout=300)


def test_sphinx_build_draws_the_scripts_and_follows_their_changes(tmp_path):
    pytest.importorskip("sphinx")
    source = tmp_path / "src"
    (source / "notes").mkdir(parents=True)
    script(source, "conf.py", 'project = "course"\nextensions = ["backpropviz.sphinx"]\n')
    (source / "add_mul.py").write_text((EXAMPLES / "add_mul.py").read_text())
    script(source, "index.rst", """
        Course
        ======

        .. toctree::

           notes/week1

        .. backpropviz:: add_mul.py
           :rankdir: BT
           :alt: e = (a + b) c

        .. backpropviz:: add_mul.py
           :fit: 1280x720
        """)
    script(source / "notes", "week1.rst", """
        Week 1
        ======

        .. backpropviz:: ../add_mul.py
           :steps:

        .. backpropviz:: /add_mul.py
           :format: html
        """)
    done = _sphinx(source, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    index = (out / "index.html").read_text()
    assert '<img alt="e = (a + b) c" class="backpropviz" src="_images/add_mul.svg" />' in index
    picture = (out / "_images" / "add_mul.svg").read_text()
    # e = (a + b)c at a = 2, b = 1, c = -3: e = -9, de/da = de/db = c = -3, de/dc = 3.
    assert ">−9<" in picture and ">−3<" in picture
    # Drawn bottom-up (:rankdir: BT): the output e above the input a.
    heights = dict(re.findall(r'<g id="(v\d+)" class="node[^"]*">.*?<text[^>]* y="([-\d.]+)"',
                              picture, re.S))
    assert float(heights["v4"]) < float(heights["v0"])
    # :fit: as --fit: sized in pixels, filling the 1280x720 frame in one direction.
    width, height = map(float, re.search(r'<svg width="([\d.]+)px" height="([\d.]+)px"',
                                         (out / "_images" / "add_mul1.svg").read_text()).groups())
    assert width <= 1280 and height <= 720 and (width == 1280 or height == 720)
    week = (out / "notes" / "week1.html").read_text()
    assert week.count('class="backpropviz" src="../_images/step-') == 3  # the seed, ×, +
    assert week.count('<iframe srcdoc="') == 1
    # The script changes: the next build draws what it computes now, a = 5: e = -18.
    (source / "add_mul.py").write_text(
        (EXAMPLES / "add_mul.py").read_text().replace("Value(2.0", "Value(5.0"))
    done = _sphinx(source, out)
    assert done.returncode == 0, done.stderr
    assert ">−18<" in (out / "_images" / "add_mul.svg").read_text()


def test_sphinx_reports_a_script_that_gives_no_picture(tmp_path):
    pytest.importorskip("sphinx")
    source = tmp_path / "src"
    source.mkdir()
    script(source, "conf.py", 'extensions = ["backpropviz.sphinx"]\n')
    script(source, "empty.py", "x = 1\n")
    script(source, "index.rst", "Notes\n=====\n\n.. backpropviz:: empty.py\n")
    done = _sphinx(source, tmp_path / "out")
    assert done.returncode != 0
    assert "backpropviz: empty.py: no graph found" in done.stderr
