"""Distributed protocols: pure, deterministic source and coordinator sides plus message types.

Time is always an argument (event time, ``now_ms``), never the wall clock, and every message is
counted. Subpackages: :mod:`tsmon.protocols.filters` (adaptive bound filters).
"""
