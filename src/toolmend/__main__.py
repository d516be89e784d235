"""``python -m toolmend`` runs the command line."""

from ._cli import main

raise SystemExit(main())
