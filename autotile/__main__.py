"""``python -m autotile`` runs the command line."""

from autotile.cli import main

main()
