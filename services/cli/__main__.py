"""`python -m services.cli`: the `pagemill` command."""

from services.cli import main

main()
