"""`python -m chainreact` = the `chainreact` command."""

from .cli import main

raise SystemExit(main())
