"""Sphinx configuration of backpropviz's documentation (``make docs`` builds it)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The package beside these docs, not whichever copy is installed, and the
# local extensions (the CLI reference, the IR contract, the module list).
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]

import backpropviz  # noqa: E402

project = "backpropviz"
author = "the backpropviz authors"
copyright = "the backpropviz authors, MIT licence"
release = version = backpropviz.__version__

extensions = [
    "sphinx.ext.autodoc",
    "backpropviz.sphinx",  # the figures: drawn by the tool while the docs are built
    "cli_reference",
    "ir_contract",
    "module_list",
]

exclude_patterns = ["_build"]
default_role = "code"
smartquotes = False  # an option is --fit, not –fit
highlight_language = "none"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
html_title = f"backpropviz {release}"
html_theme_options = {"description": "Make backpropagation visible.", "page_width": "1100px"}
html_static_path: list[str] = []
