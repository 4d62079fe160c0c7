"""API keys held so that they never show themselves (``Secret``), and URLs shown without
the credentials they may carry (``display_url``).

In core so that option values (``ef.Endpoint``) hold a key as a ``Secret`` from the moment
they are built; the providers' request code is the only reader of :meth:`Secret.reveal`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["Secret", "display_url"]


class Secret:
    """An API key that never shows itself: ``repr``, ``str`` and f-strings print ``***``.

    Only the request code calls :meth:`reveal`, to build the ``Authorization`` header.

    Examples:
        >>> key = Secret("sk-live-123")
        >>> key, str(key), f"{key}"
        (Secret('***'), '***', '***')
        >>> key.reveal()
        'sk-live-123'
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> Any:
        raise TypeError("An API key is not picklable; pass it again where it is needed.")

    @staticmethod
    def of(value: str | Secret | None) -> Secret | None:
        """A secret from a plain or secret value; ``None`` for a missing or blank key."""
        if isinstance(value, Secret):
            return value if value.reveal().strip() else None
        if value is None or not str(value).strip():
            return None
        return Secret(str(value).strip())


def display_url(url: str) -> str:
    """``url`` without user info, query or fragment: safe to show, log and hash into ids.

    Examples:
        >>> display_url("https://user:pw@host.test:8443/v1?api-key=abc")
        'https://host.test:8443/v1'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
