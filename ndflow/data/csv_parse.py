"""Splitting one CSV line into fields and reading a field's value, with tfjs-data's rules.

Fields (:func:`split_row`), as TF.js 4.22's CSV parser reads them:

- A field that starts with ``"`` is quoted: delimiters inside it are text, and it ends at a ``"`` followed by
  the delimiter or the line end. The outer quotes are removed but a doubled quote inside stays doubled (the
  quoted field ``say ""hi""`` reads with both pairs). A quote anywhere else in a field is an ordinary
  character. After a closing quote followed by other text, the rest of the line up to the next quote belongs
  to the field.
- Records are lines: a line break inside quotes ends the record as well (TF.js splits lines first).
- With ``delim_whitespace`` the delimiter is a space and runs of spaces (and spaces at the start of the line)
  count as one; a space at the end of the line still starts one more, empty field. Tabs are not delimiters.

Values (:func:`js_number`): a field is a number when JavaScript's ``Number(field)`` is one: surrounding
white space is ignored, ``0x``/``0o``/``0b`` integers and ``Infinity`` are numbers, a field of only white space
is 0, and ``NaN``, ``inf`` or ``1_000`` are text.
"""

from __future__ import annotations

import math
import re

__all__ = ["js_number", "split_row"]

# JavaScript's white space and line terminators (what Number() trims).
_JS_SPACE = "\t\n\v\f\r \xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(map(chr, range(0x2000, 0x200B)))
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_NON_DECIMAL = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")
_BASES = {"x": 16, "o": 8, "b": 2}


def js_number(text: str) -> float | None:
    """``Number(text)`` as JavaScript computes it, or None where that is NaN."""
    s = text.strip(_JS_SPACE)
    if s == "":
        return 0.0
    if _DECIMAL.fullmatch(s):
        return float(s)
    if _NON_DECIMAL.fullmatch(s):
        try:
            return float(int(s[2:], _BASES[s[1].lower()]))
        except OverflowError:
            return math.inf
    return None


_OUT, _FIELD, _QUOTE, _QUOTE_AFTER_QUOTE, _WITHIN_QUOTE_IN_QUOTE = range(5)


def split_row(line: str, delimiter: str, delim_whitespace: bool) -> list[str]:
    """The fields of ``line`` (see the module docstring)."""
    if '"' not in line:
        if not delim_whitespace:
            return line.split(delimiter)
        fields = [f for f in line.split(" ") if f]
        if not fields or line.endswith(" "):
            fields.append("")
        return fields
    return _split_quoted(line, delimiter, delim_whitespace)


def _split_quoted(line: str, delimiter: str, delim_whitespace: bool) -> list[str]:
    """The general state machine, for lines holding a quote."""
    fields: list[str] = []
    start = 0
    state = _OUT
    for i, ch in enumerate(line):
        if state == _OUT:
            if ch == '"':
                start, state = i + 1, _QUOTE
            elif ch == delimiter:
                start = i + 1
                if not delim_whitespace:
                    fields.append("")
            else:
                start, state = i, _FIELD
        elif state == _FIELD:
            if ch == delimiter:
                fields.append(line[start:i])
                start, state = i + 1, _OUT
        elif state == _QUOTE:
            if ch == '"':
                state = _QUOTE_AFTER_QUOTE
        elif state == _QUOTE_AFTER_QUOTE:
            if ch == delimiter:
                fields.append(line[start : i - 1])
                start, state = i + 1, _OUT
            elif ch == '"':
                state = _QUOTE
            else:
                state = _WITHIN_QUOTE_IN_QUOTE
        elif ch == '"':  # _WITHIN_QUOTE_IN_QUOTE
            state = _QUOTE
    fields.append(line[start:-1] if state == _QUOTE_AFTER_QUOTE else line[start:])
    return fields
