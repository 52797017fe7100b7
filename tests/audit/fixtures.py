"""The audit's fixture world: a small multi-agent repository with a real git history, and a PDF report about
it (text on two pages and an embedded diagram) that makes known true and known false claims."""

from __future__ import annotations

import datetime
import io
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Fixture Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Fixture Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
}
START = 1_767_225_600  # 2026-01-01T00:00:00Z

STATE = '''"""The shared state of the courtroom graph."""
import operator
from typing import Annotated, TypedDict

from pydantic import BaseModel


class Evidence(BaseModel):
    source: str
    finding: str


class AgentState(TypedDict):
    repo_url: str
    evidences: Annotated[list[Evidence], operator.add]
'''

GRAPH = '''"""The courtroom as a graph: detectives fan out, judges fan out, the Chief Justice joins."""
from langgraph.graph import END, START, StateGraph

from src.judges import defense, prosecutor, tech_lead
from src.justice import chief_justice
from src.state import AgentState


def build_graph():
    graph = StateGraph(AgentState)
    for name, fn in (("prosecutor", prosecutor), ("defense", defense), ("tech_lead", tech_lead),
                     ("chief_justice", chief_justice)):
        graph.add_node(name, fn)
    graph.add_edge(START, "repo_investigator")
    graph.add_edge(START, "doc_analyst")
    graph.add_edge(["repo_investigator", "doc_analyst"], "evidence_aggregator")
    graph.add_edge("evidence_aggregator", "prosecutor")
    graph.add_edge("evidence_aggregator", "defense")
    graph.add_edge("evidence_aggregator", "tech_lead")
    graph.add_edge(["prosecutor", "defense", "tech_lead"], "chief_justice")
    graph.add_edge("chief_justice", END)
    return graph.compile()
'''

JUDGES = '''"""Three judges, three philosophies, one schema."""
from pydantic import BaseModel


class JudicialOpinion(BaseModel):
    judge: str
    score: int
    argument: str


class Prosecutor:
    motto = "Trust no one."


class Defense:
    motto = "Reward effort."


class TechLead:
    motto = "Does it actually work?"


def _judge(llm, persona, state):
    return llm.with_structured_output(JudicialOpinion).invoke(persona.motto)


def prosecutor(state):
    return {"opinions": []}


def defense(state):
    return {"opinions": []}


def tech_lead(state):
    return {"opinions": []}
'''

JUSTICE = '''"""The Chief Justice: deterministic rules, no prompt."""


def rule_of_security(scores, flaws):
    return min(scores) if flaws else max(scores)


def rule_of_evidence(score, fact):
    return max(min(score, fact + 1), fact - 1)


class ChiefJustice:
    def rule(self, opinions):
        return rule_of_security([o.score for o in opinions], [])


def chief_justice(state):
    return {"verdict": ChiefJustice().rule([])}
'''

TOOLS = '''"""Repository tools."""
import os


def clone_repo(url):
    os.system(f"git clone {url} /tmp/work")
'''

# (author, message, files, minutes after START)
HISTORY: list[tuple[str, str, dict[str, str], int]] = [
    ("Ada Lovelace <ada@example.com>", "Add the typed agent state with reducers", {"src/state.py": STATE}, 0),
    ("Ada Lovelace <ada@example.com>", "Wire the courtroom graph with parallel fan-out", {"src/graph.py": GRAPH}, 180),
    ("Grace Hopper <grace@example.com>", "Add three judge personas bound to a schema", {"src/judges.py": JUDGES}, 420),
    ("Grace Hopper <grace@example.com>", "Add the Chief Justice and its deterministic rules",
     {"src/justice.py": JUSTICE}, 1440),
    ("Ada Lovelace <ada@example.com>", "wip", {"src/tools.py": TOOLS, "README.md": "# courtroom\n"}, 1500),
]

TRUE_PATHS = ("src/graph.py", "src/state.py", "src/justice.py")
FALSE_PATHS = ("src/memory/vector_store.py", "src/sandbox_runner.py")
TRUE_COMPONENTS = ("ChiefJustice", "StateGraph", "JudicialOpinion")
UNKNOWN_COMPONENTS = ("MetaCognitionEngine",)
TRUE_FEATURES = ("parallel-graph", "typed-state", "structured-output", "reducers", "personas", "chief-justice")
FALSE_FEATURES = ("safe-tools",)

PAGE_ONE = (
    "Courtroom: an automated auditor. Architecture. The workflow is a LangGraph StateGraph built in src/graph.py. "
    "Two detectives run in parallel and their evidence joins in an aggregator (fan-out and fan-in), then the "
    "Prosecutor, the Defense and the Tech Lead judge in parallel. The state is a Pydantic model and a TypedDict "
    "defined in src/state.py; its evidence list has a reducer (operator.add) so parallel writes merge instead of "
    "overwriting each other. Every judge answers through structured output bound to the JudicialOpinion schema. "
    "Long-term memory lives in src/memory/vector_store.py and is consulted before each verdict. "
    "Dialectics. The three personas form a dialectic: thesis, antithesis and a synthesis. The Prosecutor "
    "assumes guilt, the Defense rewards effort and the Tech Lead asks whether the code works. Their opinions "
    "disagree by design, and a persona never sees the others' opinions before it answers, so the synthesis "
    "has real material to resolve. "
)
PAGE_TWO = (
    "Synthesis. The ChiefJustice in src/justice.py applies deterministic rules: the rule of security caps a "
    "score when a flaw is confirmed, and the rule of evidence lets facts overrule opinions. No prompt decides "
    "the verdict; the rules are plain functions, so the same state always yields the same ruling. "
    "Metacognition. A MetaCognitionEngine reflects on the audit itself and re-weights the judges over time. "
    "Safety. All tools are sandboxed and every command runs in src/sandbox_runner.py, so shell injection is "
    "impossible. The diagram below shows the state flowing through the graph: detectives fan out from the start "
    "node, the aggregator joins them, the judges fan out again and the Chief Justice is the single point of "
    "fan-in before the end. Each node reads the state and returns only the keys it changes, which the reducers "
    "merge deterministically. This is how the courtroom keeps its record consistent while its branches run at "
    "the same time, and why the final ruling can be traced back to the evidence that produced it."
)


def git(path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV, **(env or {})}).stdout


def build_repo(path: Path) -> Path:
    """The fixture repository: five commits by two authors over a day; commit ids are stable."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for author, message, files, minutes in HISTORY:
        for name, text in files.items():
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        stamp = f"@{START + 60 * minutes} +0000"
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", message, f"--author={author}",
            env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    return path


def diagram_png() -> bytes:
    """A small architecture diagram: boxes for the nodes, lines for the edges."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (320, 160), "white")
    draw = ImageDraw.Draw(image)
    boxes = {"start": (10, 65, 60, 95), "repo": (90, 20, 150, 50), "doc": (90, 110, 150, 140),
             "judges": (180, 65, 240, 95), "chief": (260, 65, 310, 95)}
    for box in boxes.values():
        draw.rectangle(box, outline="black", width=2)
    for a, b in (("start", "repo"), ("start", "doc"), ("repo", "judges"), ("doc", "judges"), ("judges", "chief")):
        ax, ay = boxes[a][2], (boxes[a][1] + boxes[a][3]) // 2
        bx, by = boxes[b][0], (boxes[b][1] + boxes[b][3]) // 2
        draw.line((ax, ay, bx, by), fill="black", width=2)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


OUTLINE = {1: (("Architecture", 0), ("Dialectics", 1)), 2: (("Synthesis", 0), ("Safety", 1))}


def build_report(path: Path, pages: tuple[str, ...] = (PAGE_ONE, PAGE_TWO), with_image: bool = True,
                 outline: dict[int, tuple[tuple[str, int], ...]] | None = None) -> Path:
    """The fixture report as a real PDF (fpdf2) with an outline (bookmarks), byte-identical on every build."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC))
    pdf.set_font("helvetica", size=11)
    sections = OUTLINE if outline is None else outline
    for number, text in enumerate(pages, start=1):
        pdf.add_page()
        for title, level in sections.get(number, ()):
            pdf.start_section(title, level=level)
        pdf.multi_cell(0, 6, text)
        if with_image and number == len(pages):
            pdf.image(io.BytesIO(diagram_png()), w=120)
    path.write_bytes(bytes(pdf.output()))
    return path
