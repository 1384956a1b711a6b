"""Top-k messages as JSON-able dicts, for hosts that move them as rows (Spark control files).

Objects are the hosts' object names (strings); integers stay exact (JSON integers are
unbounded in Python). A mapping ``object -> (V, δ)`` travels as ``[[object, V, δ], ...]`` and
a set of objects as a sorted list, so equal messages encode to equal dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tsmon.protocols.topk.messages import (
    CountReply,
    CountRequest,
    Install,
    Message,
    Offload,
    ResolutionRequest,
    Shift,
    ValueReply,
    ValueRequest,
)

_TYPES: dict[str, type] = {
    "request": ResolutionRequest,
    "value_request": ValueRequest,
    "value_reply": ValueReply,
    "install": Install,
    "offload": Offload,
    "count_request": CountRequest,
    "count_reply": CountReply,
    "shift": Shift,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def _pairs(values: Mapping[Any, tuple[int, int]]) -> list[list[Any]]:
    return [[o, v, d] for o, (v, d) in sorted(values.items())]


def to_dict(message: Message) -> dict[str, Any]:
    """``message`` as a JSON-able dict with a ``"type"``.

    Examples
    --------
    >>> to_dict(Install(2, {"b": -1, "a": 1}, top=frozenset({"a"}), epoch=3))["deltas"]
    [['a', 1], ['b', -1]]
    >>> request = ResolutionRequest(1, {"a": (3, 0)}, border=2, new=True)
    >>> from_dict(to_dict(request)) == request
    True
    """
    out: dict[str, Any] = {"type": _NAMES[type(message)]}
    for name, value in vars(message).items():
        if name == "values":
            value = _pairs(value)
        elif name == "deltas":
            value = [[o, d] for o, d in sorted(value.items())]
        elif name in ("top", "objects") and value is not None:
            value = sorted(value)
        out[name] = value
    return out


def from_dict(data: Mapping[str, Any]) -> Message:
    """The message :func:`to_dict` encoded; ``ValueError`` naming what is wrong."""
    if not isinstance(data, Mapping) or data.get("type") not in _TYPES:
        raise ValueError(f"not a top-k message: {data!r}")
    fields = {k: v for k, v in data.items() if k != "type"}
    try:
        if "values" in fields:
            fields["values"] = {o: (int(v), int(d)) for o, v, d in fields["values"]}
        if "deltas" in fields:
            fields["deltas"] = {o: int(d) for o, d in fields["deltas"]}
        for name in ("top", "objects"):
            if fields.get(name) is not None:
                fields[name] = frozenset(fields[name])
        return _TYPES[data["type"]](**fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad top-k message {data!r}: {exc}") from None
