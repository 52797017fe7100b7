"""Which changed lines the head's tests ran (sandbox/languages/coverage.py): Go's cover profiles, and V8's coverage
written by a real node process here; a line no test ran spares its mutant a run, a line the data does not speak of
(a file a loader transformed, a line outside every block, no data) runs as before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.languages.coverage import LineCoverage, go_tree_path, read_go_profile, read_v8

PROFILE = textwrap.dedent("""\
    mode: set
    example.com/tally/calc/calc.go:4.24,6.2 1 1
    example.com/tally/calc/calc.go:9.30,10.22 1 1
    example.com/tally/calc/calc.go:10.22,12.3 1 0
    example.com/tally/calc/calc.go:13.2,14.33 2 1
    example.com/tally/calc/mean.go:3.30,5.2 1 0
    example.com/other/x.go:1.1,2.2 1 1
    not a block line
    example.com/tally/calc/calc.go:99.1,2.1 1 1
    """)


def test_a_go_profile_says_which_lines_ran_and_which_no_test_ran() -> None:
    coverage = read_go_profile(PROFILE, go_tree_path("example.com/tally", ""))
    assert coverage.covered("calc/calc.go", 5) is True
    assert coverage.covered("calc/calc.go", 11) is False  # only in a block that never ran
    assert coverage.covered("calc/calc.go", 10) is True  # the end of one block that ran, the start of one that did not
    assert coverage.covered("calc/mean.go", 4) is False
    assert coverage.covered("calc/calc.go", 7) is None  # between functions: in no block
    assert coverage.covered("calc/other.go", 1) is None
    assert "x.go" not in " ".join(coverage.known)  # another module's file is not the tree's


def test_a_go_profile_of_a_module_in_a_subfolder_maps_to_its_tree_paths() -> None:
    coverage = read_go_profile(PROFILE, go_tree_path("example.com/tally", "services/tally"))
    assert coverage.covered("services/tally/calc/calc.go", 11) is False
    assert coverage.covered("calc/calc.go", 11) is None


def test_merged_coverage_keeps_every_line_some_test_ran() -> None:
    one = LineCoverage(ran={"a.go": frozenset({1})}, known={"a.go": frozenset({1, 2})})
    two = LineCoverage(ran={"a.go": frozenset({2})}, known={"a.go": frozenset({2}), "b.go": frozenset({5})})
    both = one.merged(two)
    assert both.covered("a.go", 1) and both.covered("a.go", 2) and both.covered("b.go", 5) is False


LIB = textwrap.dedent("""\
    // the café's arithmetic: a non-ASCII line before the code moves UTF-8 bytes away from V8's offsets
    function add(a, b) {
      if (a > 100) {
        return -1;
      }
      return a + b;
    }

    function unused(values) {
      return values.length;
    }

    module.exports = { add, unused };
    """)
ESM = "export function twice(x) {\n  if (x === 0) {\n    return 0;\n  }\n  return 2 * x;\n}\n"
TEST = textwrap.dedent("""\
    const test = require('node:test');
    const assert = require('node:assert');
    const { add } = require('./lib.js');
    test('add', async () => {
      assert.strictEqual(add(1, 2), 3);
      const { twice } = await import('./esm.mjs');
      assert.strictEqual(twice(2), 4);
    });
    """)


@pytest.fixture(scope="module")
def v8_documents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[object]]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    root = tmp_path_factory.mktemp("v8")
    (root / "lib.js").write_text(LIB, encoding="utf-8")
    (root / "esm.mjs").write_text(ESM, encoding="utf-8")
    (root / "lib.test.js").write_text(TEST, encoding="utf-8")
    folder = root / "coverage"
    subprocess.run(["node", "--test", "lib.test.js"], cwd=root, check=True, capture_output=True,
                   env={**os.environ, "NODE_V8_COVERAGE": str(folder)})
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]
    return root, documents


def _read(root: Path) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        target = root / path
        return target.read_text(encoding="utf-8") if target.is_file() else None

    return read


def test_v8_coverage_of_node_s_runner_says_which_lines_ran(v8_documents: tuple[Path, list[object]]) -> None:
    root, documents = v8_documents
    wanted = {"lib.js": range(1, 14), "esm.mjs": range(1, 7)}
    coverage = read_v8(documents, _read(root), wanted, root=root.as_uri() + "/")
    assert coverage.covered("lib.js", 3) is True  # the condition ran
    assert coverage.covered("lib.js", 4) is False  # its branch never did
    assert coverage.covered("lib.js", 6) is True
    assert coverage.covered("lib.js", 10) is False  # a function no test calls
    assert coverage.covered("lib.js", 8) is None  # an empty line
    assert coverage.covered("esm.mjs", 3) is False and coverage.covered("esm.mjs", 5) is True  # an ES module


def test_v8_coverage_of_a_file_that_is_not_the_one_that_ran_says_nothing(
        v8_documents: tuple[Path, list[object]]) -> None:
    # a loader (a compiler, a bundler) ran other text under the file's URL: its offsets are not the file's
    root, documents = v8_documents
    read = _read(root)

    def transformed(path: str) -> str | None:
        text = read(path)
        return None if text is None else "'use strict';\n" + text

    coverage = read_v8(documents, transformed, {"lib.js": range(1, 14)}, root=root.as_uri() + "/")
    assert coverage.covered("lib.js", 11) is None and coverage.covered("lib.js", 4) is None
    assert read_v8(documents, read, {"other.js": [1]}, root=root.as_uri() + "/").covered("lib.js", 4) is None


def test_v8_documents_that_are_not_coverage_are_ignored(v8_documents: tuple[Path, list[object]]) -> None:
    root, _documents = v8_documents
    garbage: list[object] = [None, [], {"result": "x"}, {"result": [{"url": (root / "lib.js").as_uri(),
                                                                     "functions": [{"ranges": [{"count": "1"}]}]}]}]
    coverage = read_v8(garbage, _read(root), {"lib.js": [4]}, root=root.as_uri() + "/")
    assert coverage.covered("lib.js", 4) is None
