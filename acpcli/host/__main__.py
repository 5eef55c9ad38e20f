"""``python -I -m acpcli.host``: a session host (:mod:`acpcli.host.server`)."""

from acpcli.host.server import main

raise SystemExit(main())
