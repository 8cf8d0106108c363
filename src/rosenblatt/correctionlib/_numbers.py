"""JSON numbers that correctionlib reads back exactly.

correctionlib reads its JSON with rapidjson's default (normal-precision)
number parser: the digits are gathered into an integer (or, past 2**53 in a
fraction or past 2**64, into a double), converted to a double and scaled by a
power of ten. The shortest decimal text of a double (Python's ``repr``) then
comes back up to two units in the last place off for about one value in
eight. :func:`rapidjson_double` reproduces that parser; :class:`ExactNumbers`
finds, for each value, a decimal text that Python and correctionlib both read
as the value itself, so that bin edges and formula offsets mean the same in
both.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = ["ExactNumbers", "rapidjson_double"]

_MAX_FAST = (1 << 53) - 1
#: a JSON number between the delimiters of arrays and objects
_NUMBER = re.compile(r"(?<=[\[,:])-?\d[\d.eE+-]*(?=[,\]}])")


def _scale(d: float, p: int) -> float:
    """rapidjson's ``FastPath``: one multiplication or division by a power of ten."""
    if p < -308:
        return 0.0
    if p >= 0:
        return d * float(f"1e{p}")
    return d / float(f"1e{-p}")


def rapidjson_double(text: str) -> float:
    """The double that rapidjson's default parser makes of the JSON number ``text``."""
    negative = text.startswith("-")
    i = int(negative)
    n = len(text)
    limit, last_digit = (922337203685477580, 8) if negative else (1844674407370955161, 5)
    significand, as_double, d, digits = 0, False, 0.0, 0
    first = True
    while i < n and text[i].isdigit():
        digit = ord(text[i]) - 48
        if as_double:
            d = d * 10.0 + digit
        elif significand >= limit and (significand != limit or digit > last_digit):
            d, as_double = float(significand) * 10.0 + digit, True
        else:
            significand = significand * 10 + digit
            digits += 0 if first else 1
        first = False
        i += 1
    exp_frac = 0
    if i < n and text[i] == ".":
        i += 1
        if not as_double:
            while i < n and text[i].isdigit() and significand <= _MAX_FAST:
                significand = significand * 10 + ord(text[i]) - 48
                exp_frac -= 1
                digits += significand != 0
                i += 1
            d, as_double = float(significand), True
        while i < n and text[i].isdigit():
            if digits < 17:
                d = d * 10.0 + ord(text[i]) - 48
                exp_frac -= 1
                digits += d > 0.0
            i += 1
    exponent = 0
    if i < n and text[i] in "eE":
        exponent = int(text[i + 1 :])
    if not as_double:
        d = float(significand)
    p = exponent + exp_frac
    d = _scale(_scale(d, -308), p + 308) if p < -308 else _scale(d, p)
    return -d if negative else d


def _search(value: float) -> str | None:
    """An integer-significand text ``S e-k`` of ``value`` that rapidjson reads exactly."""
    magnitude = abs(value)
    sign = "-" if value < 0 else ""
    below, above = math.nextafter(magnitude, 0.0), math.nextafter(magnitude, math.inf)
    lo = (Fraction(below) + Fraction(magnitude)) / 2
    hi = (Fraction(above) + Fraction(magnitude)) / 2
    order = math.floor(math.log10(magnitude))
    for k in range(15 - order, 26 - order):
        power = Fraction(10) ** k
        first, last = math.floor(lo * power) + 1, math.ceil(hi * power) - 1
        if last < first:
            continue
        candidates = []
        d = float(first)
        while d <= last:
            candidates.append(int(d))
            d = math.nextafter(d, math.inf)
        candidates.extend(range(first, last + 1, max(1, (last - first) // 16)))
        for significand in candidates:
            if first <= significand <= last:
                text = f"{sign}{significand}e{-k}"
                if rapidjson_double(text) == value and float(text) == value:
                    return text
    return None


class ExactNumbers:
    """Texts of values that correctionlib reads exactly, cached by value."""

    def __init__(self) -> None:
        self._texts: dict[float, str | None] = {}

    def text(self, value: float) -> str | None:
        """A text both Python and correctionlib read as ``value``, or None if none was found."""
        value = float(value)
        if value not in self._texts:
            text = repr(value)
            exact = math.isfinite(value) and (value == 0 or rapidjson_double(text) == value)
            self._texts[value] = (
                text if exact else (_search(value) if math.isfinite(value) else None)
            )
        return self._texts[value]

    def read(self, value: float) -> float:
        """What correctionlib reads for ``value`` written by :meth:`dumps`."""
        text = self.text(value)
        return value if text is not None else rapidjson_double(repr(float(value)))

    def is_exact(self, value: float) -> bool:
        """Whether correctionlib reads ``value`` exactly once written by :meth:`dumps`."""
        return self.text(value) is not None

    def dumps(self, json_text: str, values: set[float]) -> str:
        """Rewrite the numbers of ``json_text`` equal to one of ``values`` in their exact form.

        Numbers are found by their ``repr``, which is how :func:`json.dumps`
        writes them; any number with that text is the same double, so
        rewriting one that is not among ``values`` changes nothing.
        """
        replace = {}
        for value in values:
            text = self.text(value)
            if text is not None and text != repr(float(value)):
                replace[repr(float(value))] = text
        if not replace:
            return json_text
        return _NUMBER.sub(lambda m: replace.get(m.group(), m.group()), json_text)
