"""Other tools' evaluation data as an evalframe dataset and saved outputs: the sources.

``evalframe.io._common`` holds what every importer shares (column mapping, limits, writing);
each tool's reader lives beside it: ``_inspect``, ``_promptfoo`` and ``_tables`` (Ragas,
DeepEval, Hugging Face).
"""

from __future__ import annotations

from typing import Final

from evalframe.io._common import Imported, parse_mapping
from evalframe.io._inspect import from_inspect
from evalframe.io._promptfoo import from_promptfoo
from evalframe.io._tables import from_deepeval, from_hf, from_ragas

__all__ = [
    "SOURCES",
    "Imported",
    "from_deepeval",
    "from_hf",
    "from_inspect",
    "from_promptfoo",
    "from_ragas",
    "parse_mapping",
]

SOURCES: Final = {
    "ragas": from_ragas,
    "deepeval": from_deepeval,
    "inspect": from_inspect,
    "promptfoo": from_promptfoo,
    "hf": from_hf,
}
