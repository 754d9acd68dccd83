"""`python -m minitepo ...` is the same as the `minitepo` console script."""

from minitepo.lab.cli import main

raise SystemExit(main())
