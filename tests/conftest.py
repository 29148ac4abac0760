"""Fixtures shared by the suite: the examples run the way the CLI runs them."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from backpropviz.script import graph_of_script, run_script

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test of scale that takes seconds "
                                       "(skip locally with -m 'not slow'; CI runs it)")
    _take_this_workers_cores()
    _ctrl_c_as_at_a_terminal()
    _texts_kept_for_the_suite()


# The modules whose tests take the most time (clips rendered, stories told, pages drawn in
# Chromium), most first: run before the quick ones, so that as the workers of `make test`
# run out of work and take each other's, what is left to the last is quick, and neither
# waits long for the other's last test (it waited some 5 s with these last).
SLOWEST_FIRST = ("test_train_views", "test_animate", "test_html", "test_clip_story",
                 "test_parallel_clip", "test_rolled_clip", "test_clip_frame",
                 "test_fitted_layouts", "test_page_view", "test_page_follow", "test_rnn_names",
                 "test_slides", "test_rolling", "test_page_groups", "test_practice",
                 "test_readme", "test_cli")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest modules' tests first (SLOWEST_FIRST), each module's in its own order."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))


def pytest_collection_finish(session: pytest.Session) -> None:
    _garbage_collected_less_often()


def _garbage_collected_less_often() -> None:
    """What a test process holds once its tests are collected (torch, manim, numpy, the
    test modules) is set aside from the cyclic garbage collector for good, and its young
    objects are collected after 20,000 allocations rather than 700: the suite's clips
    and pages make many objects that live a while, and each full collection scanned all
    of it again (the two processes of `make test` spent some 43 s in the collector, read
    from gc.callbacks; 16 s so). Garbage is still collected, only less often."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)


def _texts_kept_for_the_suite() -> None:
    """The clips' texts kept (animate/kept_texts.py) in a folder of the suite's own, not
    the user's cache: shared by its workers and the processes they start, and by the
    next run on this machine (a text read back is the one made: test_kept_texts)."""
    import tempfile

    os.environ.setdefault("BACKPROPVIZ_CACHE", str(
        Path(tempfile.gettempdir()) / f"backpropviz-suite-{os.getuid()}"))


def _ctrl_c_as_at_a_terminal() -> None:
    """Ctrl-C interrupts, as in a terminal, even when the suite was started in the
    background (a shell starts background jobs with SIGINT ignored, and every process
    they start inherits that): the Ctrl-C tests are of what a user at a terminal gets."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _take_this_workers_cores() -> None:
    """Under pytest-xdist, each worker runs on its share of the cores, as a process
    given fewer cores would: what defaults to the cores it may use (a clip's render
    jobs) then starts no more processes than it has cores. Otherwise the two workers
    of `make test` would each start a clip's render on both cores, their start-up and
    scene building twice over, while the other worker keeps those cores busy."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) > 1 and workers > 1:
        os.sched_setaffinity(0, cores[int(worker[2:]) % workers::workers] or cores)


@pytest.fixture(scope="session")
def example() -> Callable[..., nx.MultiDiGraph]:
    """``example("d2l_mlp", "L")``: the IR of ``examples/d2l_mlp.py``, built by the
    script front end as ``backpropviz render`` builds it (backward run if the
    script did not; roots optional); ``backward=False`` for the forward pass only.
    The script runs once (memory_growth's measurements take a while); each call gets
    a copy of its own, so a test may change what it gets."""
    built: dict[tuple, nx.MultiDiGraph] = {}

    def build(name: str, *roots: str, **options: Any) -> nx.MultiDiGraph:
        key = (name, roots, tuple(sorted(options.items())))
        if key not in built:
            built[key] = graph_of_script(EXAMPLES / f"{name}.py", roots, quiet=True, **options)
        return copy.deepcopy(built[key])
    return build


@pytest.fixture(scope="session")
def example_names() -> Callable[[str], dict[str, Any]]:
    """``example_names("d2l_mlp")``: the example's global names after it ran (by the
    script front end), for tests of the engine's own objects; what it prints is
    left for ``capsys``."""
    def run(name: str) -> dict[str, Any]:
        return run_script(EXAMPLES / f"{name}.py")
    return run


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium (the system's: playwright downloads none here), launched once a
    test process rather than once a module (each launch some 1.5 s of CPU). Once it is
    open the process has Playwright's second thread until the session ends, so a clip
    rendered later in it defaults to one render job (animate/parallel.py's
    default_jobs), as it does anyway in a worker of `make test`, which has one core."""
    from test_html import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        pytest.skip("no Chromium at /usr/bin/chromium (`make` installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                              args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Pages:
    """Where a module's tests open their pages: all in one browser context. Chromium
    spends about twice the CPU opening a page in a context of its own (what Playwright's
    ``Browser.new_page`` makes) as in one already open; the suite opens some sixty. The
    pages share no state the page keeps (it stores nothing), and each has its own
    history, viewport and media."""

    def __init__(self, context) -> None:
        self.context = context

    def new_page(self, *, viewport: dict | None = None, reduced_motion: str | None = None):
        """A page as ``Browser.new_page(viewport=..., reduced_motion=...)`` opens one (at
        1280x720 unless told)."""
        page = self.context.new_page()
        if viewport is not None:
            page.set_viewport_size(viewport)
        if reduced_motion is not None:
            page.emulate_media(reduced_motion=reduced_motion)
        return page


@pytest.fixture(scope="module")
def browser(chromium) -> Pages:
    """A module's pages, in a context of its own (closed, with every page still open in
    it, as the module ends)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 720})
    yield Pages(context)
    context.close()
