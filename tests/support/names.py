"""Names tests make up: databases nobody else uses.

Tests import this module, never `conftest` by name: with several conftest.py files (tests/,
tests/spark/, tests/bench/) a bare `import conftest` gets whichever pytest loaded first."""

from __future__ import annotations

import re
import secrets


def unique_db_name(prefix: str = "t") -> str:
    """A database name nobody else uses: `<prefix>_<16 hex>` (prefix sanitised)."""
    clean = re.sub(r"[^a-z0-9_]", "_", prefix.lower())[:40]
    return f"{clean}_{secrets.token_hex(8)}"
