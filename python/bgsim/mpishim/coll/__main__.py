"""Prints the collective registry as the table of docs/collectives.md."""

from . import markdown

print(markdown())
