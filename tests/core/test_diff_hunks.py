"""The unified diff read hunk by hunk: what the declared-change and renamed-test rules read."""

from __future__ import annotations

from checks.diff import diff_hunks

TWO_HUNKS = """\
diff --git a/tests/test_app.py b/tests/test_app.py
index 1111111..2222222 100644
--- a/tests/test_app.py
+++ b/tests/test_app.py
@@ -1,3 +1,3 @@
 import app
-def test_old():
+def test_new():
     assert app.x
@@ -10,2 +10,3 @@ def test_other():
     assert app.y
+    assert app.z
 # end
\\ No newline at end of file
diff --git "a/src/caf\\303\\251.py" "b/src/caf\\303\\251.py"
deleted file mode 100644
index 3333333..0000000
--- "a/src/caf\\303\\251.py"
+++ /dev/null
@@ -1,1 +0,0 @@
-x = 1
"""


def test_each_file_keeps_its_hunks_apart_in_diff_order() -> None:
    files = diff_hunks(TWO_HUNKS)
    assert [path for path, _ in files] == ["tests/test_app.py", "src/café.py"]  # a deleted file: the base's path
    test_hunks = files[0][1]
    assert test_hunks == [[" import app", "-def test_old():", "+def test_new():", "     assert app.x"],
                          ["     assert app.y", "+    assert app.z", " # end"]]  # no "\\ No newline" marker
    assert files[1][1] == [["-x = 1"]]


def test_a_diff_that_does_not_parse_gives_no_hunks() -> None:
    assert diff_hunks("") == []
    assert diff_hunks("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-only one line\n") == []
