"""Plain-dict form of the filter protocol's messages, for rows, JSON files and pickles.

The Spark runtime moves messages as rows (source → coordinator) and as control files
(``ctrl-<batchId>.json``, coordinator → sources); both need a form without Python classes.
:func:`to_dict` gives a dict of ``str``, ``int``, ``float``, ``bool`` and ``None`` that survives
strict JSON (``json.dumps(..., allow_nan=False)``) and :func:`from_dict` rebuilds the message
exactly: ints stay ints (timestamps, sequence numbers) and floats keep every bit, since JSON
writes a float as its shortest round-tripping ``repr``.

Strict JSON has no infinity, yet ``W = inf`` is how the coordinator frees an object (§3.4:
objects in no query stop sending). A non-finite float is therefore written as one of the strings
``"inf"``, ``"-inf"`` or ``"nan"``; finite floats stay JSON numbers.

Examples
--------
>>> from tsmon.protocols.filters.messages import Growth
>>> d = to_dict(Growth("a", float("inf"), 1_000, seq=7, adaptive=False))
>>> d
{'type': 'growth', 'object_id': 'a', 'width': 'inf', 'ts_ms': 1000, 'seq': 7, 'adaptive': False}
>>> from_dict(d)
Growth(object_id='a', width=inf, ts_ms=1000, seq=7, adaptive=False)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from tsmon.protocols.filters.messages import Growth, Message, Shrink, StreamedUpdate

__all__ = ["from_dict", "to_dict"]

_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}

#: The keys of each message type, besides ``"type"``.
_KEYS = {
    "update": ("object_id", "value", "ts_ms", "seq", "width_seq", "forced"),
    "growth": ("object_id", "width", "ts_ms", "seq", "adaptive"),
    "shrink": ("object_id", "width", "ts_ms", "seq", "adaptive"),
}
#: Keys a message may carry besides those, only when set (with a period chosen online).
_OPTIONAL = {
    "update": ("shadow",),
    "growth": ("period_ms", "uniform"),
    "shrink": ("period_ms", "uniform"),
}
#: Per type, the keys a message must carry and those it may carry (the check of each row).
_REQUIRED = {kind: frozenset(("type", *keys)) for kind, keys in _KEYS.items()}
_ALLOWED = {kind: _REQUIRED[kind] | frozenset(_OPTIONAL[kind]) for kind in _KEYS}


def _float_out(x: float) -> float | str:
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def to_dict(message: Message) -> dict[str, Any]:
    """The JSON-able dict of a :class:`StreamedUpdate`, :class:`Growth` or :class:`Shrink`.

    Examples
    --------
    >>> to_dict(StreamedUpdate("a", 2.5, 10, width_seq=3, forced=True, seq=4))
    {'type': 'update', 'object_id': 'a', 'value': 2.5, 'ts_ms': 10, 'seq': 4, 'width_seq': 3,
     'forced': True}
    """
    if isinstance(message, StreamedUpdate):
        update = {
            "type": "update",
            "object_id": message.object_id,
            "value": _float_out(message.value),
            "ts_ms": int(message.ts_ms),
            "seq": int(message.seq),
            "width_seq": None if message.width_seq is None else int(message.width_seq),
            "forced": bool(message.forced),
        }
        if message.shadow is not None:
            update["shadow"] = int(message.shadow)
        return update
    if isinstance(message, Growth | Shrink):
        out = {
            "type": "growth" if isinstance(message, Growth) else "shrink",
            "object_id": message.object_id,
            "width": _float_out(message.width),
            "ts_ms": int(message.ts_ms),
            "seq": int(message.seq),
            "adaptive": bool(message.adaptive),
        }
        if message.period_ms is not None:
            out["period_ms"] = int(message.period_ms)
        if message.uniform is not None:
            out["uniform"] = _float_out(message.uniform)
        return out
    raise TypeError(
        f"cannot encode {type(message).__name__}; pass a StreamedUpdate, Growth or Shrink"
    )


def from_dict(d: Mapping[str, Any]) -> Message:
    """The message encoded by :func:`to_dict`; a malformed dict raises ``ValueError``.

    Examples
    --------
    >>> from_dict({"type": "shrink", "object_id": "b", "width": 0.5, "ts_ms": 0, "seq": 2,
    ...            "adaptive": True})
    Shrink(object_id='b', width=0.5, ts_ms=0, seq=2, adaptive=True)
    >>> from_dict({"type": "grow"})
    Traceback (most recent call last):
    ...
    ValueError: message type must be one of ['growth', 'shrink', 'update'], got 'grow'
    """
    if type(d) is not dict and not isinstance(d, Mapping):  # a dict without the ABC check
        raise ValueError(f"a message must be a dict, got {type(d).__name__}")
    kind = d.get("type")
    if kind not in _KEYS:
        raise ValueError(f"message type must be one of {sorted(_KEYS)}, got {kind!r}")
    if not _REQUIRED[kind] <= d.keys() <= _ALLOWED[kind]:
        missing = [k for k in _KEYS[kind] if k not in d]
        extra = sorted(set(d) - _ALLOWED[kind])
        raise ValueError(
            f"{kind} message: missing keys {missing}, unexpected keys {extra}; "
            f"expected exactly {['type', *_KEYS[kind]]}"
        )
    object_id = d["object_id"]
    if not isinstance(object_id, str):
        raise ValueError(f"{kind} message: object_id must be a str, got {object_id!r}")
    ts_ms = _int_in(d, "ts_ms", kind)
    seq = _int_in(d, "seq", kind)
    if kind == "update":
        width_seq = None if d["width_seq"] is None else _int_in(d, "width_seq", kind)
        return StreamedUpdate(
            object_id,
            _float_in(d, "value", kind),
            ts_ms,
            width_seq=width_seq,
            forced=_bool_in(d, "forced", kind),
            seq=seq,
            shadow=_int_in(d, "shadow", kind) if "shadow" in d else None,
        )
    make = Growth if kind == "growth" else Shrink
    period = _int_in(d, "period_ms", kind) if "period_ms" in d else None
    return make(
        object_id,
        _float_in(d, "width", kind),
        ts_ms,
        seq=seq,
        adaptive=_bool_in(d, "adaptive", kind),
        period_ms=period,
        uniform=_float_in(d, "uniform", kind) if "uniform" in d else None,
    )


def _int_in(d: Mapping[str, Any], key: str, kind: str) -> int:
    x = d[key]
    if type(x) is int:  # the common case, without the ABC check
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{kind} message: {key} must be an int, got {x!r}")
    return int(x)


def _float_in(d: Mapping[str, Any], key: str, kind: str) -> float:
    x = d[key]
    if type(x) is float:  # the common case, without the ABC check
        return x
    if isinstance(x, str) and x in _NON_FINITE:
        return _NON_FINITE[x]
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(
            f"{kind} message: {key} must be a number or one of 'inf', '-inf', 'nan', got {x!r}"
        )
    return float(x)


def _bool_in(d: Mapping[str, Any], key: str, kind: str) -> bool:
    x = d[key]
    if not isinstance(x, bool):
        raise ValueError(f"{kind} message: {key} must be a bool, got {x!r}")
    return x
