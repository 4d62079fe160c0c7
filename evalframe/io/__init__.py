"""Importers: other tools' evaluation data as an evalframe dataset and saved outputs."""

from __future__ import annotations

__all__: list[str] = []
