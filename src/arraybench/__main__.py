"""Entry point for `python -m arraybench`."""

from arraybench.cli import main

raise SystemExit(main())
