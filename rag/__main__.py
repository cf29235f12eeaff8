"""`python -m rag` is the `papers` command."""

from rag.frontends.cli import main

main()
