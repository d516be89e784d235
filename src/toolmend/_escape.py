"""Text toolmend did not make (ids, names, roles, model strings), escaped for where it goes.

A history comes from whoever sent the request. Its ids, function names and roles end up in
places that give some characters a meaning: a log line that ``toolmend stats`` reads back, an
HTTP response header, a terminal, an HTML page. One function per medium makes such a value
inert there:

* :func:`log` for log lines. Every control character (C0, DEL, C1), every Unicode format
  character (bidi controls, zero-width characters, soft hyphen), surrogate, whitespace
  (including the line and paragraph separators U+2028/U+2029), and each character a toolmend
  line uses as a separator (``%`` ``;`` ``@`` ``[`` ``]`` ``,`` ``(`` ``)`` ``:`` ``{`` ``}``
  ``"``) is written as ``%XX`` (below U+0100), ``%uXXXX`` (the rest of the BMP) or
  ``%UXXXXXX``. Everything else is kept, so ``call_abc`` and ``call_中文`` read as they are,
  and ``a;b c`` becomes ``a%3Bb%20c``. :func:`unescape` reverses it. An escaped value can
  never end a field, a list or a line of a toolmend log line.
* :func:`header` for HTTP header values: :func:`log`, and every character outside printable
  ASCII escaped the same way, so the value is printable ASCII (``call_中文`` becomes
  ``call_%u4E2D%u6587``).
* :func:`terminal` for text printed on a terminal: control and invisible characters shown as
  ``\\n``, ``\\x1b``, ``\\u202e`` (readable, not meant to be reversed), so a value can neither
  drive the terminal (ESC, OSC, CR, NUL) nor reorder or hide what is printed (bidi).
* :func:`html` for HTML pages: :func:`html.escape`, after the control and invisible characters
  but the line break and the tab are shown as :func:`terminal` shows them, so a bidi control
  cannot reorder a page either.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Iterable
from typing import Final

__all__ = ["header", "html", "log", "log_safe", "log_source", "terminal", "unescape"]

_FORMAT_CHARS: Final = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
"""The Unicode format characters (category Cf): bidi controls, zero-width and tag characters."""

_LOG_UNSAFE: Final = re.compile(
    '[\\s\\x00-\\x1f\\x7f-\\x9f%;@\\[\\],():{}"\\u2028\\u2029\\ud800-\\udfff' + _FORMAT_CHARS + "]"
)
_HEADER_UNSAFE: Final = re.compile('[^\\x21-\\x7e]|[%;@\\[\\],():{}"]')
_ESCAPED: Final = re.compile(r"%(?:U([0-9A-F]{6})|u([0-9A-F]{4})|([0-9A-F]{2}))")


def _code(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point < 0x100:
        return f"%{point:02X}"
    if point < 0x10000:
        return f"%u{point:04X}"
    return f"%U{point:06X}"


def log(value: str) -> str:
    """``value`` for a log line: nothing in it can end a field, list or line. A value that is
    not a ``str`` is a ``TypeError`` (a caller's bug, not something to write as ``None``).

    >>> log("call_1\\ntoolmend repaired x; 3 problem(s) left: fake@1")
    'call_1%0Atoolmend%20repaired%20x%3B%203%20problem%28s%29%20left%3A%20fake%401'
    >>> log("call_中文")
    'call_中文'
    """
    if _LOG_UNSAFE.search(value) is None:
        return value
    return _LOG_UNSAFE.sub(_code, value)


def log_safe(values: Iterable[str]) -> bool:
    """Whether :func:`log` leaves every one of ``values`` as it is, told by one search over
    them joined (each unsafe character is a single character, so the joined text holds one
    exactly when some value does). A log line naming every call id of a long history (a
    Mistral id rewrite names each one) then escapes none of them one by one. A value that is
    not a ``str`` is a ``TypeError``, as for :func:`log`.

    >>> log_safe(["call_1", "call_中文"]), log_safe(["call_1", "a;b"])
    (True, False)
    """
    return _LOG_UNSAFE.search("".join(values)) is None


def log_source(source: object) -> str:
    """A hook's name for a log line, with the model it was called for (``name(model)``): both
    escaped by :func:`log`, the model string being the caller's.

    >>> log_source("litellm.acompletion(gpt 4o)")
    'litellm.acompletion(gpt%204o)'
    """
    name, paren, model = (source if isinstance(source, str) else str(source)).partition("(")
    if not paren:
        return log(name)
    return f"{log(name)}({log(model.removesuffix(')'))})"


def header(value: object) -> str:
    """``value`` (as ``str``) for an HTTP header: printable ASCII only, separators escaped.

    >>> header("call_中文\\r\\n")
    'call_%u4E2D%u6587%0D%0A'
    """
    text = value if isinstance(value, str) else str(value)
    if _HEADER_UNSAFE.search(text) is None:
        return text
    return _HEADER_UNSAFE.sub(_code, text)


def unescape(text: str) -> str:
    """The value :func:`log` or :func:`header` escaped.

    >>> unescape(log("a;b c\\n")) == "a;b c\\n"
    True
    """

    def value(match: re.Match[str]) -> str:
        digits = match.group(1) or match.group(2) or match.group(3)
        return chr(int(digits, 16))

    return _ESCAPED.sub(value, text)


def _terminal_table() -> dict[int, str]:
    table = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
    table.update({ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"})
    invisible = (0x00AD, 0x061C, 0x180E, *range(0x200B, 0x2010), 0x2028, 0x2029)
    for code in (*invisible, *range(0x202A, 0x202F), *range(0x2060, 0x2070), 0xFEFF):
        table[code] = f"\\u{code:04x}"
    return table


TERMINAL_ESCAPES: Final = _terminal_table()
"""What :func:`terminal` replaces: ``str.translate`` table."""


def terminal(value: object) -> str:
    """``value`` (as ``str``) for a terminal or a page: control and invisible characters shown
    escaped (``\\x1b``, ``\\n``, ``\\u202e``), everything else as it is.

    >>> terminal("call_1\\x1b]0;title\\x07\\u202e")
    'call_1\\\\x1b]0;title\\\\x07\\\\u202e'
    """
    text = value if isinstance(value, str) else str(value)
    return text.translate(TERMINAL_ESCAPES)


_PAGE_ESCAPES: Final = {
    code: shown for code, shown in TERMINAL_ESCAPES.items() if code not in (0x0A, 0x09)
}


def html(value: object, quote: bool = True) -> str:
    """``value`` (as ``str``) for an HTML page, in text or in a quoted attribute: what
    :func:`html.escape` escapes, and control and invisible characters shown escaped as by
    :func:`terminal` (line breaks and tabs kept: a page shows indented JSON).

    >>> html("<b>\u202eabc")
    '&lt;b&gt;\\\\u202eabc'
    """
    text = value if isinstance(value, str) else str(value)
    return _html.escape(text.translate(_PAGE_ESCAPES), quote)
