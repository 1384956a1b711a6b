"""The examples of README.md and docs/*.md, run as written on the shipped data.

Fenced blocks are marked by their info string:

* ``tsq`` — query text: every statement must pass ``tsmon check`` (no error); ``tsq file=NAME``
  is also written to ``NAME`` in the directory the ``sh run`` blocks of that page run in;
* ``python run`` — executed (cwd: the repository, so ``../shared/data`` is the shipped data);
* ``sh run`` — each line a ``tsmon`` command, run in a fresh directory next to a link to the
  shared data (so ``../shared/...`` works there too); each must exit with status 0;
* ``text expect`` — after ``sh run``: each line must appear in the commands' output (spaces
  normalised).

Other blocks (shell sessions that start Spark or wait for input, synopses) are not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tsmon.cli.check import check_text

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / "../shared"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """``(info string, text, line)`` of every fenced block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [
        (m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1)
        for m in _FENCE.finditer(text)
    ]


def marked(kind: str) -> list[tuple[Path, str, str, int]]:
    return [
        (page, info, body, line)
        for page in PAGES
        for info, body, line in blocks(page)
        if info.split(" ")[0] == kind.split(" ")[0] and info.startswith(kind)
    ]


def _id(case: tuple[Path, str, str, int]) -> str:
    return f"{case[0].name}:{case[3]}"


def test_the_pages_have_runnable_examples() -> None:
    """Marking is how an example gets run: losing the marks would silently skip them."""
    assert len(marked("tsq")) >= 6 and marked("python run") and marked("sh run")


@pytest.mark.parametrize("case", marked("tsq"), ids=_id)
def test_query_examples_pass_check(case: tuple[Path, str, str, int]) -> None:
    page, _, body, line = case
    checked = check_text(body)
    assert not checked.errors, f"{page.name}:{line}: {checked.errors}"
    assert checked.statements


def _need_data() -> None:
    if not (SHARED / "data" / "nab").is_dir():
        pytest.skip(f"shared data not found at {SHARED.resolve()}")


@pytest.mark.parametrize("case", marked("python run"), ids=_id)
def test_python_examples_run(case: tuple[Path, str, str, int], monkeypatch) -> None:
    _need_data()
    page, _, body, line = case
    monkeypatch.chdir(REPO)
    exec(compile(body, f"{page.name}:{line}", "exec"), {"__name__": "__example__"})


@pytest.mark.parametrize("page", [p for p in PAGES if any(i == "sh run" for i, *_ in blocks(p))])
def test_command_examples_run_and_print_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    _need_data()
    (tmp_path / "shared").symlink_to(SHARED.resolve())
    work = tmp_path / "work"
    work.mkdir()
    output = ""
    for info, body, line in blocks(page):
        words = info.split()
        if words[:1] == ["tsq"] and len(words) > 1 and words[1].startswith("file="):
            (work / words[1].removeprefix("file=")).write_text(body, encoding="utf-8")
        elif words == ["sh", "run"]:
            for command in body.splitlines():
                argv = shlex.split(command, comments=True)
                if not argv:
                    continue
                assert argv[0] == "tsmon", f"{page.name}:{line}: not a tsmon command: {command}"
                run = subprocess.run(
                    [sys.executable, "-m", "tsmon.cli", *argv[1:]],
                    capture_output=True,
                    text=True,
                    cwd=work,
                    env=dict(os.environ, COLUMNS="200", PYTHONPATH=str(REPO / "src")),
                    timeout=300,
                )
                assert run.returncode == 0, f"{page.name}:{line}: {command}\n{run.stdout}"
                output += run.stdout
        elif words == ["text", "expect"]:
            shown = " ".join(output.split())
            for expected in filter(None, (" ".join(x.split()) for x in body.splitlines())):
                assert expected in shown, f"{page.name}:{line}: {expected!r} not in\n{output}"
