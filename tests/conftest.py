"""Fixtures shared by the suite: the examples run the way the CLI runs them."""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def example() -> Callable[..., nx.MultiDiGraph]:
    """``example("d2l_mlp", "L")``: the IR of ``examples/d2l_mlp.py``, built by the
    script front end as ``backpropviz render`` builds it (backward run if the
    script did not; roots optional); ``backward=False`` for the forward pass only.
    Each call runs the script afresh, so a test may change what it gets."""
    def build(name: str, *roots: str, **options: Any) -> nx.MultiDiGraph:
        return graph_of_script(EXAMPLES / f"{name}.py", roots, quiet=True, **options)
    return build


@pytest.fixture(scope="session")
def example_names() -> Callable[[str], dict[str, Any]]:
    """``example_names("d2l_mlp")``: the example's global names after it ran (by the
    script front end), for tests of the engine's own objects; what it prints is
    left for ``capsys``."""
    def run(name: str) -> dict[str, Any]:
        return run_script(EXAMPLES / f"{name}.py")
    return run
