"""Importers: other tools' evaluation data as an evalframe dataset and saved outputs.

``ef.io.from_ragas``, ``from_deepeval``, ``from_inspect``, ``from_promptfoo`` and ``from_hf``
read a file written by that tool, optionally write the dataset YAML (``to=``) and the saved
outputs JSON (``outputs=``), and return an ``Imported`` (the dataset and outputs frames).
"""

from __future__ import annotations

from evalframe.io._importers import (
    Imported,
    from_deepeval,
    from_hf,
    from_inspect,
    from_promptfoo,
    from_ragas,
)

__all__ = ["Imported", "from_deepeval", "from_hf", "from_inspect", "from_promptfoo", "from_ragas"]
