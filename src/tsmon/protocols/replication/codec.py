"""Replication messages as JSON-able dicts, for hosts that move them as rows (Bulut & Singh, §3-§4).

Every message of :mod:`~tsmon.protocols.replication.messages` encodes to a dict with a
``"type"`` tag and one key per dataclass field, and decodes back to an equal message:

* integers stay integers (JSON integers are exact), floats stay floats (``json`` writes the
  shortest repr, which reads back to the same double); ``nan`` and ``±inf`` travel as the
  strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` so the dicts are strict JSON;
* tuples become lists; a query id ``(origin, seq)`` is ``[origin, seq]``;
* a window segment (§3, Table 1) is ``[level, kind]``, a data range
  ``{"lo": [...], "hi": [...]}`` (one range per block).

:func:`from_dict` checks every field and raises ``ValueError`` naming the message type and the
field (``"Update.approx.hi: ..."``). Fields with a default (``Answer.route``, ``Answer.exact``,
``ReadRequest.reads``, ``Refresh.qid``, ``Refresh.center``) may be left out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from tsmon.protocols.replication.messages import (
    Answer,
    Decache,
    Insert,
    Message,
    Query,
    ReadRequest,
    Refresh,
    Update,
)
from tsmon.protocols.replication.segments import SLOTS, Approx, Segment

__all__ = ["TYPES", "from_dict", "to_dict"]

TYPES: dict[str, type] = {
    "query": Query,
    "answer": Answer,
    "update": Update,
    "insert": Insert,
    "decache": Decache,
    "read_request": ReadRequest,
    "refresh": Refresh,
}
"""The ``"type"`` tag of each message class."""
_NAMES = {cls: name for name, cls in TYPES.items()}
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class _Bad(ValueError):
    """A malformed value; ``where`` is the path inside the field."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(problem)
        self.where, self.problem = where, problem


# -- scalars ---------------------------------------------------------------------------------
def _enc_float(x: float) -> float | str:
    x = float(x)
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _dec_int(v: Any, where: str = "") -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Bad(where, f"expected an integer, got {v!r}")
    return v


def _dec_float(v: Any, where: str = "") -> float:
    if isinstance(v, str) and v in _SPECIAL:
        return _SPECIAL[v]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _Bad(where, f"expected a number (or 'NaN', 'Infinity', '-Infinity'), got {v!r}")
    return float(v)


def _dec_bool(v: Any, where: str = "") -> bool:
    if not isinstance(v, bool):
        raise _Bad(where, f"expected true or false, got {v!r}")
    return v


def _dec_list(v: Any, where: str, item: Callable[[Any, str], Any], size: int | None = None):
    if not isinstance(v, list | tuple):
        raise _Bad(where, f"expected a list, got {v!r}")
    if size is not None and len(v) != size:
        raise _Bad(where, f"expected {size} items, got {len(v)}")
    return tuple(item(x, f"{where}[{i}]") for i, x in enumerate(v))


# -- compound values -------------------------------------------------------------------------
def _dec_qid(v: Any, where: str = "") -> tuple[int, int]:
    return _dec_list(v, where, _dec_int, size=2)


def _dec_segment(v: Any, where: str = "") -> Segment:
    level, kind = _dec_list(v, where, lambda x, w: x, size=2)
    level = _dec_int(level, f"{where}[0]")
    if level < 0:
        raise _Bad(f"{where}[0]", f"a level is >= 0, got {level}")
    if kind not in SLOTS:
        raise _Bad(f"{where}[1]", f"a slot kind is one of {SLOTS}, got {kind!r}")
    return Segment(level, kind)


def _dec_approx(v: Any, where: str = "") -> Approx:
    if not isinstance(v, Mapping) or set(v) != {"lo", "hi"}:
        raise _Bad(where, f"expected {{'lo': [...], 'hi': [...]}}, got {v!r}")
    lo = _dec_list(v["lo"], f"{where}.lo", _dec_float)
    hi = _dec_list(v["hi"], f"{where}.hi", _dec_float, size=len(lo))
    if not lo:
        raise _Bad(f"{where}.lo", "a data range has at least one block")
    return Approx(lo, hi)


def _dec_reads(v: Any, where: str = "") -> tuple[tuple[tuple[int, float], ...], ...]:
    def pair(x: Any, w: str) -> tuple[int, float]:
        t, tol = _dec_list(x, w, lambda y, _: y, size=2)
        return _dec_int(t, f"{w}[0]"), _dec_float(tol, f"{w}[1]")

    return _dec_list(v, where, lambda log, w: _dec_list(log, w, pair))


def _optional(dec: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    return lambda v, where="": None if v is None else dec(v, where)


_Codec = tuple[Callable[[Any], Any], Callable[[Any, str], Any]]
_INT: _Codec = (int, _dec_int)
_FLOAT: _Codec = (_enc_float, _dec_float)
_INTS: _Codec = (list, lambda v, w: _dec_list(v, w, _dec_int))
_FLOATS: _Codec = (lambda xs: [_enc_float(x) for x in xs], lambda v, w: _dec_list(v, w, _dec_float))
_QID: _Codec = (list, _dec_qid)
_SEGMENT: _Codec = (list, _dec_segment)
_APPROX: _Codec = (lambda a: {"lo": _FLOATS[0](a.lo), "hi": _FLOATS[0](a.hi)}, _dec_approx)
_FIELDS: dict[type, dict[str, _Codec]] = {
    Query: {
        "sender": _INT,
        "receiver": _INT,
        "qid": _QID,
        "count": _INT,
        "positions": _INTS,
        "weights": _FLOATS,
        "delta": _FLOAT,
        "route": _INTS,
    },
    Answer: {
        "sender": _INT,
        "receiver": _INT,
        "qid": _QID,
        "value": _FLOAT,
        "bound": _FLOAT,
        "site": _INT,
        "route": _INTS,
        "exact": (bool, _dec_bool),
    },
    Update: {"sender": _INT, "receiver": _INT, "segment": _SEGMENT, "approx": _APPROX},
    Insert: {"sender": _INT, "receiver": _INT, "segment": _SEGMENT, "approx": _APPROX},
    Decache: {"sender": _INT, "receiver": _INT, "segment": _SEGMENT},
    ReadRequest: {
        "sender": _INT,
        "receiver": _INT,
        "qid": _QID,
        "count": _INT,
        "items": _INTS,
        "reads": (lambda r: [[[t, _enc_float(x)] for t, x in log] for log in r], _dec_reads),
    },
    Refresh: {
        "sender": _INT,
        "receiver": _INT,
        "item": _INT,
        "count": _INT,
        "value": _FLOAT,
        "width": _FLOAT,
        "qid": (lambda q: None if q is None else list(q), _optional(_dec_qid)),
        "center": (lambda c: None if c is None else _enc_float(c), _optional(_dec_float)),
    },
}


def to_dict(message: Message) -> dict[str, Any]:
    """``message`` as a JSON-able dict with a ``"type"`` tag.

    Examples
    --------
    >>> to_dict(Update(0, 2, Segment(1, "L"), Approx((2.0,), (float("inf"),))))
    {'type': 'update', 'sender': 0, 'receiver': 2, 'segment': [1, 'L'], 'approx': {'lo': [2.0], 'hi': ['Infinity']}}
    >>> q = Query(3, 0, (3, 7), count=40, positions=(3,), weights=(0.5,), delta=2.0, route=(3,))
    >>> from_dict(to_dict(q)) == q
    True
    """  # noqa: E501
    fields = _FIELDS.get(type(message))
    if fields is None:
        raise TypeError(f"not a replication message: {message!r}")
    out: dict[str, Any] = {"type": _NAMES[type(message)]}
    for name, (encode, _) in fields.items():
        out[name] = encode(getattr(message, name))
    return out


def from_dict(data: Mapping[str, Any]) -> Message:
    """The message :func:`to_dict` encoded; ``ValueError`` naming the field that is wrong.

    Examples
    --------
    >>> from_dict({"type": "decache", "sender": 1, "receiver": 0, "segment": [0, "R"]})
    Decache(sender=1, receiver=0, segment=Segment(level=0, kind='R'))
    >>> from_dict({"type": "decache", "sender": 1, "receiver": 0, "segment": [0, "X"]})
    Traceback (most recent call last):
    ...
    ValueError: Decache.segment[1]: a slot kind is one of ('R', 'S', 'L'), got 'X'
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"a replication message is a dict, got {data!r}")
    tag = data.get("type")
    cls = TYPES.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise ValueError(f"type: not a replication message type {tag!r}; one of {sorted(TYPES)}")
    name, fields = cls.__name__, _FIELDS[cls]
    unknown = sorted(set(data) - set(fields) - {"type"})
    if unknown:
        raise ValueError(f"{name}: unknown field(s) {unknown}")
    defaults = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    kwargs: dict[str, Any] = {}
    for field, (_, decode) in fields.items():
        if field not in data:
            if field in defaults:
                continue
            raise ValueError(f"{name}.{field}: missing")
        try:
            kwargs[field] = decode(data[field], "")
        except _Bad as bad:
            raise ValueError(f"{name}.{field}{bad.where}: {bad.problem}") from None
    return cls(**kwargs)
