"""``python -m feedrouter.cli``: the ``feedrouter`` command."""

from feedrouter.cli import main

main()
