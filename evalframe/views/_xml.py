"""Text for XML (an SVG file): the characters it cannot hold, drawn visibly instead."""

from __future__ import annotations

from typing import Final

__all__ = ["xml_text"]

_PICTURES: Final = str.maketrans(
    {**{c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)}, 0xFFFE: 0xFFFD,
     0xFFFF: 0xFFFD}
)  # fmt: skip


def xml_text(text: str) -> str:
    r"""``text`` with the characters XML cannot hold (C0 controls but tab and line breaks,
    U+FFFE, U+FFFF) shown as their Unicode control pictures (U+0001 as U+2401), or U+FFFD.

    An SVG is XML: a tag holding U+0001 made the SVG renderer fail (and vl-convert abort
    the process); drawn as a picture, the label stays visible and the file stays valid.

    Examples:
        >>> xml_text("a\x01b\tc") == "a\u2401b\tc"
        True
    """
    return text.translate(_PICTURES)
