"""Counts with their noun in the right number, for what autotile prints, reports and exports.

The outputs read ``1 study(ies)`` and ``1 entries``; one helper spells ``1 study`` and
``3 studies`` the same way everywhere.
"""

from __future__ import annotations


def plural(noun: str) -> str:
    """``noun``'s plural: its last word with ``-ies`` after a consonant's ``y``, else ``-s``.

    >>> plural("study"), plural("entry"), plural("infeasible proposal"), plural("day")
    ('studies', 'entries', 'infeasible proposals', 'days')
    """
    if noun.endswith("y") and len(noun) > 1 and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def count(n: int, noun: str, many: str | None = None) -> str:
    """``n`` (with thousands separators) and ``noun``, plural unless ``n`` is 1; ``many`` is the
    plural when :func:`plural` does not form it.

    >>> count(1, "study"), count(3, "study"), count(1200, "trace"), count(0, "trial")
    ('1 study', '3 studies', '1,200 traces', '0 trials')
    """
    return f"{n:,} {noun if n == 1 else many or plural(noun)}"


def lead(reason: str) -> str:
    """A reason's lead, before the colon that starts its figures: what a table cell or a count shows.

    >>> lead("too large to execute in verification: inputs and output hold 140,642,816 elements")
    'too large to execute in verification'
    """
    return reason.split(":", 1)[0]
