"""The byte-level JSON primitives every compiled reader and writer shares.

Each reader or writer (the saved outputs reader ``core/_outputs_compiled.py`` and its nested
fields ``core/_outputs_nested.py``, the JSONL dataset pass ``core/_dataset_lines.py``,
trajectory expectations ``core/_expectations_pass.py``, the retrieval and argument
scanners in ``metrics/``, the strict scanner ``metrics/_json_scan.py``, the report's writers
``views/_records.py`` and ``views/_layout.py``) keeps its own logic and imports these:

- :mod:`~evalframe.core._json._text`: whitespace, the literal words, byte copies, blank text,
  UTF-8 validity;
- :mod:`~evalframe.core._json._strings`: strings decoded, skipped and re-encoded, escapes,
  UTF-8;
- :mod:`~evalframe.core._json._numbers`: numbers read exactly or declined, and re-spelled;
- :mod:`~evalframe.core._json._values`: object members and their names, whole values skipped
  or re-encoded.

The byte-level functions are kernels (``core/_njit.py``): compiled on first use and cached on
disk, or run as their own Python source on small inputs. tests/test_json_primitives.py checks
them, and the readers and writers built on them, against ``json`` and ``orjson`` over
generated documents.
"""
