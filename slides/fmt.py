"""Numbers as the slides print them: the templates' filters (num, bound, range_of, change, sig), and
the modules' words that hold a figure, so that a figure reads alike wherever it is printed."""
from __future__ import annotations

import math


def fmt_num(x, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        raise ValueError(f"no number to format: {x!r}")
    return f"{x:,.{digits}f}"


def fmt_bound(x, digits: int = 0) -> str:
    """A bound as a sentence says it ("within 8%"): rounded up at ``digits``, so that 7.08 reads 8, not
    a 7 the figure passes."""
    step = 10 ** digits
    return fmt_num(math.ceil(x * step - 1e-9) / step, digits)


def fmt_range(lowest_highest: dict, digits: int = 1) -> str:
    """A lowest and highest (span) as "a–b", or one number where they print alike."""
    low, high = fmt_num(lowest_highest["low"], digits), fmt_num(lowest_highest["high"], digits)
    return low if low == high else f"{low}–{high}"


def fmt_change(ratio: float) -> str:
    """A ratio as a signed change in percent, one decimal, more where one would round a change to
    +0.0 or -0.0 and hide the side of no change it lies on (an interval's bound): +3.2, -0.04, 0.0."""
    pct = 100 * (ratio - 1)
    for digits in (1, 2, 3):
        text = f"{pct:+.{digits}f}"
        if text.strip("+-0."):           # a digit that is not zero: the sign is shown
            return text
    return f"{0:.1f}"


def fmt_count(n: int, noun: str) -> str:
    """A count with its noun, plural past one: "1 block", "2 blocks"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def fmt_sig(x, sig: int = 3) -> str:
    """Significant figures, never scientific notation: 0.234, 27.9, 2,981."""
    if x == 0:
        return "0"
    digits = max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))
    return fmt_num(x, digits)
