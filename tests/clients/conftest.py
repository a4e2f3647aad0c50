"""The SDK tests import `pagemill_client` from clients/python when it is not installed (`make install` installs it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("pagemill_client") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))
