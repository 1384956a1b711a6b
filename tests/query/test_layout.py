"""How the language's modules depend on each other: no import cycle (so no import inside a
function to dodge one), and no protocol, engine or Spark code."""

from __future__ import annotations

import ast as pyast
import graphlib
from pathlib import Path
from types import ModuleType

import pytest

import tsmon.query as A
from tsmon.query import nodes, patterns

MODULES = sorted(Path(A.__file__).parent.glob("*.py"))


def _imports(path: Path) -> list[str]:
    tree = pyast.parse(path.read_text(encoding="utf-8"))
    imported = [
        alias.name
        for node in pyast.walk(tree)
        if isinstance(node, pyast.Import)
        for alias in node.names
    ]
    return imported + [
        node.module or "" for node in pyast.walk(tree) if isinstance(node, pyast.ImportFrom)
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_language_imports_no_protocol_or_engine_code(path: Path) -> None:
    """The resolver, and every module of the language, stay free of protocol (and runtime)
    code. (Since issue 14 a kind's nodes and its lark builder share a module, so only the
    modules below need no lark.)"""
    forbidden = ("tsmon.protocols", "tsmon.engine", "tsmon.spark", "pyspark")
    imported = _imports(path)
    assert not [name for name in imported if name.startswith(forbidden)], imported


@pytest.mark.parametrize("module", [nodes, patterns])
def test_the_node_base_and_the_matching_rule_need_no_parser(module: ModuleType) -> None:
    imported = _imports(Path(module.__file__ or ""))
    assert not [name for name in imported if name.startswith("lark")], imported


def _language_imports(path: Path) -> set[str]:
    return {name for name in _imports(path) if name.startswith("tsmon.query.")}


def test_the_modules_of_the_language_import_each_other_without_a_cycle() -> None:
    graph = {f"tsmon.query.{path.stem}": _language_imports(path) for path in MODULES}
    graph.pop("tsmon.query.__init__")
    order = list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError
    assert order.index("tsmon.query.parser") > order.index("tsmon.query.statements")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_module_imports_inside_a_function(path: Path) -> None:
    tree = pyast.parse(path.read_text(encoding="utf-8"))
    nested = [
        node.lineno
        for function in pyast.walk(tree)
        if isinstance(function, pyast.FunctionDef)
        for node in pyast.walk(function)
        if isinstance(node, pyast.Import | pyast.ImportFrom)
    ]
    assert nested == [], f"{path.name}: imports at lines {nested}"
