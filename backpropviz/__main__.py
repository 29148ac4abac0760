"""``python -m backpropviz``: the command line."""

from .cli import main

raise SystemExit(main())
