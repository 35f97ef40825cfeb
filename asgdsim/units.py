"""Quantities with units, parsed once at the edge.

Scenario files write quantities as text ("120 ms", "56 Gb/s", "6 GB");
everything inside asgdsim is a plain float in SI base units (seconds, bytes,
bytes per second, FLOP per second). This module is the only place that knows
unit names. A plain number is taken as already being in the base unit,
but for a rate below what any link or GPU runs at (a megabyte or a
megaFLOP a second), which is a unit left out ("bandwidth: 10" meaning
10 GB/s, not 10 bytes a second): refused, naming the units to write,
unless asgdsim wrote it (a resolved scenario, whose numbers are all base
units, and may be a test's bytes a second).

Decimal prefixes are powers of 1000 and binary ones (Ki, Mi, Gi) powers of
1024; a lower-case ``b`` is a bit, an upper-case ``B`` a byte, so "56 Gb/s"
is 7e9 bytes per second.
"""

from __future__ import annotations

import math
import re

__all__ = ["UnitError", "parse_quantity", "DIMENSIONS"]

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}

#: micro as the micro sign (U+00B5) or the Greek mu (U+03BC) keyboards give
_TIME = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
         "min": 60.0, "h": 3600.0, "hour": 3600.0,
         "second": 1.0, "seconds": 1.0, "minute": 60.0, "minutes": 60.0, "hours": 3600.0}


def _prefixed(base: dict[str, float]) -> dict[str, float]:
    return {p + name: scale * factor for name, factor in base.items() for p, scale in _PREFIX.items()}


_BYTES = _prefixed({"B": 1.0, "b": 0.125, "bit": 0.125})
_RATE = {f"{u}/s": f for u, f in _BYTES.items()} | {
    f"{u}ps": f for u, f in _BYTES.items() if not u.endswith("bit")}
_FLOPS = _prefixed({"FLOP/s": 1.0, "FLOPS": 1.0, "flop/s": 1.0})
_FLOP = _prefixed({"FLOP": 1.0, "flop": 1.0})

#: dimension name -> {unit text: factor to the SI base unit}
DIMENSIONS: dict[str, dict[str, float]] = {
    "time": _TIME,
    "bytes": _BYTES,
    "bandwidth": _RATE,
    "flop_rate": _FLOPS,
    "flops": _FLOP,
}

#: what a quantity of each dimension is called in a message
_WORDS = {"time": "a time", "bytes": "a size", "bandwidth": "a bandwidth",
          "flop_rate": "a FLOP rate", "flops": "a FLOP count"}
_EXAMPLE = {"time": "'120 ms'", "bytes": "'6 GB'", "bandwidth": "'56 Gb/s'",
            "flop_rate": "'4.37 TFLOP/s'", "flops": "'15.5 GFLOP'"}
#: the units a message lists
_KNOWN = {"time": "ns, us (or \u00b5s), ms, s (sec, second), min (minute), h (hour)",
          "bytes": "B, or b or bit for bits, after k, M, G, T, P or Ki, Mi, Gi, Ti",
          "bandwidth": "B/s or Bps, b/s, bit/s or bps, after k, M, G, T, P or Ki, Mi, Gi, Ti",
          "flop_rate": "FLOP/s or FLOPS after k, M, G, T, P", "flops": "FLOP after k, M, G, T, P"}

#: the least rate a plain number (no unit) may give: below it, a unit was left out
_PLAIN_FLOOR = {"bandwidth": 1e6, "flop_rate": 1e6}
#: the range of any quantity besides 0, in base units: wide beyond any
#: hardware or run (a picosecond to a thousand years, a byte a second to
#: 10^30), narrow enough that the arithmetic on it stays finite (a step of
#: 1e200 s overflowed its law's variance; one of 5e-324 s divided by 0)
RANGE = {"time": (1e-12, 3.2e10), "bytes": (1.0, 1e21), "bandwidth": (1.0, 1e30),
         "flop_rate": (1.0, 1e30), "flops": (1.0, 1e27)}
_BASE = {"time": "s", "bytes": "B", "bandwidth": "B/s", "flop_rate": "FLOP/s", "flops": "FLOP"}

_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\s\d].*?)?\s*$")


class UnitError(ValueError):
    """A quantity that is not a number with a unit of the expected kind."""


def parse_quantity(value: object, dimension: str, resolved: bool = False) -> float:
    """Return ``value`` in the SI base unit of ``dimension``; ``resolved``:
    a number asgdsim wrote (a resolved scenario), taken as it is.

    >>> parse_quantity("120 ms", "time")
    0.12
    >>> parse_quantity("56 Gb/s", "bandwidth")
    7000000000.0
    """
    return _in_range(_parse(value, dimension, resolved), value, dimension)


def _in_range(number: float, value: object, dimension: str) -> float:
    low, high = RANGE[dimension]
    if number != 0 and math.isfinite(number) and not low <= abs(number) <= high:
        raise UnitError(f"{value!r} is {number:g} {_BASE[dimension]}, outside what asgdsim "
                        f"computes with: {low:g} to {high:g} {_BASE[dimension]}")
    return number


def _parse(value: object, dimension: str, resolved: bool) -> float:
    units = DIMENSIONS[dimension]
    if isinstance(value, bool):
        raise UnitError(f"expected {_WORDS[dimension]} such as {_EXAMPLE[dimension]}, got {value!r}")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:       # an integer of hundreds of digits
            raise UnitError(f"a number of {len(str(value)):,} digits is too large") from None
        return number if resolved else _plain(number, value, dimension)
    if not isinstance(value, str):
        raise UnitError(f"expected {_WORDS[dimension]} such as {_EXAMPLE[dimension]}, got {value!r}")
    match = _NUMBER_UNIT.match(value)
    if not match:
        raise UnitError(f"expected {_WORDS[dimension]} such as {_EXAMPLE[dimension]}, got {value!r}")
    number, unit = float(match.group(1)), (match.group(2) or "")
    if not unit:
        return number if resolved else _plain(number, value, dimension)
    if unit not in units:
        # the case tells bits from bytes and mega from milli: suggested, never guessed
        cased = sorted(u for u in units if u.lower() == unit.lower())
        hint = f" (did you mean {' or '.join(map(repr, cased))}?)" if cased else ""
        raise UnitError(
            f"unknown {_WORDS[dimension].removeprefix('a ')} unit {unit!r} in {value!r}{hint}; "
            f"expected a number with a unit such as {_EXAMPLE[dimension]} "
            f"({_KNOWN[dimension]})")
    return number * units[unit]


def _plain(number: float, value: object, dimension: str) -> float:
    """A number without a unit, in the base unit, unless it is a rate too
    small to be meant so."""
    floor = _PLAIN_FLOOR.get(dimension)
    if floor is not None and 0 < number < floor:
        base = _BASE[dimension]
        raise UnitError(
            f"{value!r} has no unit, so it would be {number:g} {base}, below any real "
            f"device's; write the unit, such as "
            f"{_EXAMPLE[dimension]} ({_KNOWN[dimension]}), or '{number:g} {base}' if that is meant")
    return number
