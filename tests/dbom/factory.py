"""Real evaluations for the ledger tests: the court reviews a tiny change once; variants differ by their inputs."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor

from checks.court import review
from checks.dbom import Entanglement
from checks.models import Case, ChangedFile, Evaluation
from rubric import load_rubric

DIFF = """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -2,3 +2,7 @@
 def add(a, b):
     return a + b
+
+
+def sub(a, b):
+    return a - b
"""
CONTENT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


@functools.cache
def base_evaluation() -> Evaluation:
    case = Case(
        repo="octo/calc", pr_number=7, base_sha="a" * 40, head_sha="b" * 40,
        title="Add subtraction", body="Adds `sub` to calc/ops.py.", diff=DIFF,
        files=(ChangedFile(path="calc/ops.py", status="modified", added_lines=(5, 6, 7, 8), content=CONTENT),),
        head_paths=("calc/ops.py",),
    )
    # a thread of its own, so this also works from inside a running event loop
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, review(case, load_rubric())).result()


def evaluation(n: int = 0) -> Evaluation:
    """A distinct evaluation per ``n``: same court result, a different head commit."""
    base = base_evaluation()
    if n == 0:
        return base
    head = f"{n:040x}"
    return base.model_copy(update={"inputs": base.inputs.model_copy(update={"head": head})})


def entanglement(ev: Evaluation) -> Entanglement:
    return Entanglement.from_evaluation(ev, model_ids={"judges": "offline"}, tool_versions={"logomesh": "test"})
