"""User text made safe to put inside a generated C ``/* ... */`` comment.

Spec descriptions, choice values, the spec path and the profile name end up in header comments,
and the profile's name and hash in string literals (:func:`c_string`).
A ``*/`` there ends the comment early and the rest is parsed as code; a ``/*`` makes gcc warn
(-Wcomment), which -Werror builds reject; a newline breaks a one-line comment's layout. Both
exporters pass every such text through :func:`comment`.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # undecodable bytes of a file name: UTF-8 cannot encode them
_DELIMITER = re.compile(r"\*(?=/)|/(?=\*)")


def comment(text) -> str:
    """``text`` on one line with no comment delimiters: ``*/`` -> ``* /``, ``/*`` -> ``/ *``.

    Control characters (newlines, tabs) become spaces and lone surrogates U+FFFD, so the header
    stays one comment per line and can always be written as UTF-8.

    >>> comment("depth (*/ ping-pong)\\nnext /* line")
    'depth (* / ping-pong) next / * line'
    """
    s = _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", str(text)))
    return _DELIMITER.sub(lambda m: m.group() + " ", s)


def c_string(text) -> str:
    r"""``text`` as a C string literal: printable ASCII kept (but ``"``, ``\`` and ``?``, which
    could start a trigraph, escaped), every other byte of its UTF-8 as a three-digit octal escape.

    >>> print(c_string('a"b??=\\ é'))
    "a\"b\?\?=\\ \303\251"
    """
    out = []
    for b in str(text).encode("utf-8", "surrogatepass"):
        c = chr(b)
        if c in '"\\?':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7f:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'
