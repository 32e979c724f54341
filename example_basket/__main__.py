"""``python -m example_basket``: serve the basket demo, or ``demo`` to walk through it."""

from example_basket.cli import main

main()
