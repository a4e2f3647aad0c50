"""The root `pagemill` group; each command group lives in a module of its own and registers on it."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """pagemill: PDFs and page images in, Markdown out."""
