"""``python -m toolmend.testing``: the same as ``toolmend serve`` (see
:mod:`toolmend.testing.serve`)."""

from .serve import main

raise SystemExit(main())
