"""The `pagemill` command: serve everything on one machine, run one component, or parse files.

One module per command group, each registering on the root group of `services.cli.root`:

    serve.py       pagemill serve (everything on this machine; supervise.py keeps its children)
    components.py  pagemill gateway | worker | reconcile | migrate | vllm-command | config
    admin.py       pagemill admin tenant … | key … | seal-secrets
    parse.py       pagemill parse
    mcp.py         pagemill mcp (the MCP tools over stdio)
    eval.py        pagemill eval | specsim (pagemill_eval, the `[eval]` extra)
"""

from __future__ import annotations

from services.cli import admin, components, eval, mcp, parse, serve  # noqa: F401 - each registers its commands
from services.cli.root import main

__all__ = ["main"]
