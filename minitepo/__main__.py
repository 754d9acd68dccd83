"""`python -m minitepo ...` is the same as the `minitepo` console script."""

from minitepo.cli import main

raise SystemExit(main())
