"""`python -m qgate.cli`."""

from qgate.cli.main import main

main()
