"""The court's data: what a case is made of, what detectives report, what judges say, what the court rules.

Everything here is an immutable pydantic model. Nothing an :class:`Evaluation` holds is a clock reading, a
random id or a fact about LogoMesh's own caches (durations, timestamps, "built" against "cached"), so the same
review of the same inputs serialises to the same bytes and hashes to the same DBOM. Wall time is measured where
it belongs: the worker's metrics and the logs. (:class:`ProbeResult` and :class:`RedAnalysis` carry run times,
e.g. for the red agent's progress line; the evaluation keeps neither.)
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["critical", "high", "medium", "low", "info"]
SEVERITY_ORDER: dict[str, int] = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}
Verdict = Literal["pass", "neutral", "fail"]
OpinionVerdict = Literal["PASS", "KILL"]
ChangeStatus = Literal["added", "modified", "removed", "renamed"]

SCORE_DECIMALS = 4


def round_score(value: float) -> float:
    """Scores are stored rounded so that float noise never changes the bytes of a result."""
    return round(float(value), SCORE_DECIMALS)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- the case -------------------------------------------------------------------------------------------


class Location(Model):
    path: str
    line: int | None = None
    end_line: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        if self.end_line and self.end_line != self.line:
            return f"{self.path}:{self.line}-{self.end_line}"
        return f"{self.path}:{self.line}"


class ChangedFile(Model):
    """One file of the diff with the line numbers (at head) that the change adds."""

    path: str
    old_path: str | None = None
    status: ChangeStatus
    added_lines: tuple[int, ...] = ()
    removed_count: int = 0
    is_binary: bool = False
    is_symlink: bool = False
    content: str | None = Field(default=None, description="text at head, None if removed, binary or too big")
    not_analysed: str | None = Field(default=None, description="why a file at head has no content to analyse")


class Commit(Model):
    sha: str
    author_name: str
    author_email: str
    message: str
    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0

    @property
    def subject(self) -> str:
        """The message's first line without blank space around it, or "" for an empty message."""
        message = self.message.strip()
        return message.splitlines()[0].strip() if message else ""


class Mutant(Model):
    """One small change to one changed product line; the tests that cover the line should notice it."""

    id: str
    path: str
    line: int
    description: str
    source: str = Field(repr=False, description="the whole file with the mutation applied")


class EnvironmentOverride(Model):
    """``test.environment`` in the base branch's ``.logomesh.yml``: replaces what detection found."""

    requirements: tuple[str, ...] | None = None
    install_project: bool | None = None
    import_roots: tuple[str, ...] | None = None
    python: str | None = None


class TestSpec(Model):
    """What the court asks the sandbox to run.

    ``tree`` picks the tree: the head commit, the base commit, or the *guard* tree (the head's product code
    under the base's test files and test configuration). ``mutants`` run after the tests, each against the tests
    that covered its line, within ``mutation_seconds``.
    """

    __test__ = False  # not a pytest test class

    command: tuple[str, ...] | None = None
    setup_command: tuple[str, ...] | None = None
    timeout_seconds: int = 600
    tree: Literal["head", "base", "guard"] = "head"
    mutants: tuple[Mutant, ...] = ()
    mutation_seconds: float = 0.0
    environment: EnvironmentOverride | None = None
    rerun: tuple[str, ...] = Field(default=(), description="run only these node ids again (a failure's re-run), "
                                   "in the same tree and environment; a custom command is not re-run")
    language: Literal["python", "go", "javascript"] = Field(
        default="python", description="whose tests to run (a language plug-in, checks/languages/)")
    python: str | None = Field(default=None, description="run with this interpreter when the sandbox offers it and "
                               "the project admits it, instead of the one chosen (pytest broke under that one)")
    dependencies_as_of: str | None = Field(
        default=None, description="build the environment from the releases uploaded before this ISO 8601 time "
        "(the base commit's, when today's releases break the base: checks/dependency_drift.py)")
    unpinned: tuple[str, ...] = Field(
        default=(), description="requirements (project names) installed at today's releases instead of the "
        "project's pins (or the day's releases of dependencies_as_of): pytest's own stack when those keep pytest "
        "from starting (checks/dependency_drift.py)")


class Case(Model):
    """Everything the court may look at for one change. Built by the caller; the court never does I/O."""

    repo: str = "local"
    pr_number: int | None = None
    base_sha: str
    head_sha: str
    title: str = ""
    body: str = ""
    linked_issues: tuple[str, ...] = ()
    diff: str
    files: tuple[ChangedFile, ...]
    commits: tuple[Commit, ...] = ()
    commits_total: int | None = Field(default=None, description="commits in base..head, merges left out: more "
                                      "than len(commits) when the list was cut to the newest")
    head_paths: tuple[str, ...] = Field(default=(), description="every path in the tree at head")
    base_committed_at: str | None = Field(default=None, description="the base commit's committer date, ISO 8601")
    linguist: dict[str, str] = Field(default_factory=dict, description="changed paths the base's .gitattributes "
                                     "marks linguist-generated, -vendored or -documentation")
    test_spec: TestSpec = TestSpec()
    config_sha256: str | None = None

    @property
    def intent_text(self) -> str:
        return "\n\n".join([self.title, self.body, *self.linked_issues]).strip()

    @property
    def intent_sha256(self) -> str:
        return sha256_text(self.intent_text)

    @property
    def diff_sha256(self) -> str:
        return sha256_text(self.diff)


# --- detectives -----------------------------------------------------------------------------------------


class Evidence(Model):
    """One fact a detective established. ``id`` is stable: the same fact always gets the same id."""

    id: str
    detective: str
    kind: str
    summary: str
    location: Location | None = None
    severity: Severity = "info"
    confidence: float = Field(ge=0.0, le=1.0, default=1.0)
    cwe: str | None = None
    facts: dict[str, Any] = Field(default_factory=dict)


class TestCaseResult(Model):
    __test__ = False  # not a pytest test class

    name: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    message: str | None = None
    location: str | None = Field(default=None, description="path:line in the repository where it failed")
    rewritten: bool = Field(default=False, description="reported as passing although the call raised")


class DeclaredRequirement(Model):
    """One requirement line of an environment plan and the file (and table or section) that declares it."""

    requirement: str
    source: str


class EnvironmentPlan(Model):
    """What the project needs to run its tests, detected from its files (or set in ``.logomesh.yml``)."""

    python: str | None
    offered: tuple[str, ...] = ()
    requires_python: str | None = None
    layout: Literal["src", "flat"] = "flat"
    import_roots: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    install_project: bool = False
    lock_files: tuple[str, ...] = ()
    key: str = ""
    error: str | None = None
    overridden: bool = False
    declared: tuple[DeclaredRequirement, ...] = Field(default=(), description="each requirement with the file "
                                                      "that declares it (the first one, when several do)")
    uploaded_before: str | None = Field(default=None, description="only releases uploaded before this time were "
                                        "installed (an environment as of the base commit's day)")
    undated: tuple[str, ...] = Field(default=(), description="projects taken among today's releases even when "
                                     "uploaded_before dates the rest (pytest's own stack, when the day's releases "
                                     "of it cannot start under the sandbox's interpreter)")
    undated_before: str | None = Field(default=None, description="the undated projects were taken among the "
                                       "releases uploaded before this time (some weeks after the interpreter's "
                                       "first release); None: today's")
    left_out: tuple[DeclaredRequirement, ...] = Field(default=(), description="optional requirements the project "
                                                      "declares (extras) that the plan does not install")
    release_data: str | None = Field(default=None, description="the wheel whose data files stood in for what the "
                                     "project generates and leaves out of git, in this run's tree "
                                     "(sandbox/release_data.py)")


class ToolchainPlan(Model):
    """The toolchain and modules one language's tests ran with (languages other than Python, whose environment is
    an :class:`EnvironmentPlan`)."""

    language: str
    version: str | None = Field(description="the toolchain chosen from the sandbox image (None: none fits)")
    wanted: str | None = Field(default=None, description="what the project asks for (go.mod's go line)")
    offered: tuple[str, ...] = ()
    modules: tuple[str, ...] = Field(default=(), description="the module roots whose tests ran ('' = the root)")
    vendored: bool = False
    missing: tuple[str, ...] = Field(default=(), description="required modules the sandbox does not have")
    sources: tuple[str, ...] = ()
    error: str | None = None
    runner: str | None = Field(default=None, description="the test runner, where the language has several "
                               "(JavaScript: 'node --test', 'jest', 'vitest')")
    covers: tuple[str, ...] = Field(default=(), description="other languages whose tests the runner ran "
                                    "(TypeScript under Jest or Vitest)")


class SetupReport(Model):
    """How the environment was obtained: ``installed`` (with network to the index only, in this review or in an
    earlier one whose cached image is reused: which one is the cache's state, not the change's, and is logged),
    ``none`` needed, ``failed``, or ``forbidden`` by the server's settings."""

    status: Literal["installed", "none", "failed", "forbidden"]
    reason: str | None = None
    refused: tuple[str, ...] = Field(default=(), description="destinations the setup tried and was refused, "
                                     "sorted (kept with a cached environment)")
    install: str | None = Field(default=None, description="the editable install of the project: ok, failed, skipped")
    startup: tuple[str, ...] = Field(default=(), description="start-up code the environment holds (executable "
                                     ".pth lines, sitecustomize/usercustomize, auto-loaded pytest plugins), one "
                                     "sentence each naming the file and its distribution")
    resolved: tuple[str, ...] = Field(default=(), description="the distributions installed, ``name==version``, "
                                      "sorted")
    built: tuple[str, ...] = Field(default=(), description="the sdists of the resolved set built into wheels in a "
                                   "throw-away container, each with the sha256 of the wheel the environment holds "
                                   "and of its sdist, sorted")


class HookSite(Model):
    """A repository implementation of a pytest hook that decides outcomes, found live in the run."""

    hook: str
    path: str
    line: int
    wrapper: bool = False


class RuntimeCall(Model):
    """A dangerous call the repository's product code made while its tests ran (seen by an audit hook)."""

    event: str
    path: str
    line: int


class MutantResult(Model):
    id: str
    path: str
    line: int
    description: str
    status: Literal["killed", "survived", "uncovered", "timeout", "not_run"]
    tests_run: int = 0


class TestRunResult(Model):
    """What the sandbox measured. ``status`` says whether the numbers mean anything; ``env_error`` means the
    environment, not the change, kept the tests from running (a failed install, an import error at base)."""

    __test__ = False  # not a pytest test class

    status: Literal["ran", "no_tests", "not_measured", "timeout", "error", "env_error"]
    tree: Literal["head", "base", "guard"] = "head"
    collected: int = 0
    deselected: tuple[str, ...] = ()
    collection_errors: tuple[TestCaseResult, ...] = ()
    hooks: tuple[HookSite, ...] = ()
    environment: EnvironmentPlan | None = None
    toolchains: tuple[ToolchainPlan, ...] = Field(default=(), description="the toolchains of the other languages "
                                                  "whose tests ran (Go)")
    setup: SetupReport | None = None
    mutants: tuple[MutantResult, ...] = ()
    runtime: tuple[RuntimeCall, ...] = Field(default=(), description="dangerous calls seen at run time")
    cases_omitted: int = Field(default=0, description="test cases not stored (passing ones, and any past the cap): "
                               "the counts above still hold them")
    past_cap: int = Field(default=0, description="tests collected past the sandbox's cap on recorded tests: "
                          "they ran, but their outcomes were not recorded (not measured, never 'removed')")
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    tests: tuple[TestCaseResult, ...] = ()
    reason: str | None = None
    output: str = Field(default="", description="the run's output, redacted, with its timings and memory "
                        "addresses taken out (sandbox/redact.py)")
    image: str | None = None
    absent_submodules: tuple[str, ...] = Field(default=(), description="git submodules the base declares that "
                                               "the cloned tree does not hold")

    @property
    def executed(self) -> int:
        return self.passed + self.failed + self.errored

    @property
    def pass_rate(self) -> float | None:
        if self.executed == 0:
            return None
        return self.passed / self.executed


class ProbeResult(Model):
    """What one red-team probe did inside the sandbox. The probe's own oracle prints markers on stdout."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    oom_killed: bool = False
    duration: float = 0.0


class RecordedVectors(Model):
    """What R was computed from, so that anyone can recompute it from the record alone (``logomesh dbom verify
    --recompute``): the intent vector and every embedded chunk's vector as little-endian float16, base64, with the
    chunks' sizes (their weights), the SHA-256 of each chunk's text and the aggregation and calibration
    parameters. The evaluation's hash, and so the signed DBOM, covers all of it."""

    encoding: Literal["float16-le-base64"] = "float16-le-base64"
    dims: int = Field(ge=1)
    intent: str = Field(description="v_intent: the unit intent vector (the word-weighted mean of its windows)")
    chunks: tuple[str, ...] = Field(description="the unit vectors of the code chunks R compared, in order")
    chunk_words: tuple[int, ...] = Field(description="each chunk's size in words: its weight in the mean")
    chunk_text_sha256: tuple[str, ...] = Field(description="SHA-256 of each chunk's text as it was embedded")
    top_k: int = Field(ge=1, description="R_raw is the size-weighted mean of this many best chunk cosines")
    raw_low: float = Field(description="calibration: this raw cosine is R = 0")
    raw_high: float = Field(description="calibration: this raw cosine is R = 1")


class SemanticResult(Model):
    """R as measured: the raw cosine, the calibrated score and what it was computed from."""

    measured: bool
    raw_similarity: float | None = None
    score: float | None = None
    model: str | None = None
    intent_sources: tuple[str, ...] = ()
    chunks: int = 0
    reason: str | None = None
    anchors: tuple[str, ...] = Field(default=(), description="code the intent names (identifiers, backticked text)")
    anchors_found: tuple[str, ...] = Field(default=(), description="the anchors the change touches")
    penalty_threshold: float | None = Field(
        default=None, description="R below this is an intent mismatch (None: the description refers to this change "
        "or R was not measured, so no intent penalty applies)")
    vectors: RecordedVectors | None = Field(
        default=None, description="what R was computed from (None: R was not measured)")


class RedFinding(Model):
    id: str
    title: str
    severity: Literal["critical", "high", "medium", "low"]
    confirmed: bool
    confidence: float = Field(ge=0.0, le=1.0)
    cwe: str | None = None
    location: Location | None = None
    payload: str | None = None
    effect: str | None = None
    reproducer: str | None = Field(default=None, description="a short script that shows a confirmed race")


class RedAnalysis(Model):
    attack_successful: bool = False
    vulnerability_count: int = 0
    max_severity: Literal["none", "low", "medium", "high", "critical"] = "none"
    findings: tuple[RedFinding, ...] = ()
    ran: bool = False
    reason: str | None = None
    search: dict[str, Any] | None = Field(default=None, description="the search log: seed, tree, trace, probes")
    runtime_seconds: float | None = Field(default=None, description="wall time of the attack; never scored")


class TestChange(Model):
    """One test whose outcome the change moved (or, for pre-existing failures, did not)."""

    __test__ = False  # not a pytest test class

    name: str
    base: str | None = Field(description="outcome at base; None = the test did not exist")
    head: str = Field(description="outcome at head (under the base's oracle for existing tests); 'missing'")
    message: str | None = None
    location: str | None = None
    cause: str | None = Field(default=None, description="why the failure is the environment's, not the change's")


class DependencyChange(Model):
    """A requirement the change adds, removes or re-pins, with the file that declares it and, where known, the
    version pip installed on each side."""

    name: str
    change: Literal["added", "removed", "repinned"]
    base: str | None = Field(default=None, description="the requirement line at base")
    head: str | None = Field(default=None, description="the requirement line at head")
    source: str | None = Field(default=None, description="the file that declares it (at head; at base when removed)")
    base_resolved: str | None = None
    head_resolved: str | None = None


class TestDiff(Model):
    """The tests at base and at head, keyed by node id (see ``checks/differential.py``).

    ``status`` is ``measured`` only when both sides ran; ``env_error`` when the base itself could not run its
    tests and ``not_measured`` when the base run did not complete: then the head is judged on its own (the
    failing tests of files the change touched are ``new_failing``, the others ``unattributed``).
    """

    __test__ = False  # not a pytest test class

    status: Literal["measured", "env_error", "not_measured"]
    reason: str | None = None
    guarded: bool = Field(default=False, description="existing tests ran under the base's test files and config")
    regressed: tuple[TestChange, ...] = ()
    new_failing: tuple[TestChange, ...] = ()
    fixed: tuple[str, ...] = ()
    new_passing: tuple[str, ...] = ()
    pre_existing: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    expectation_changed: tuple[str, ...] = Field(default=(), description="existing tests whose expectation the "
                                                 "change rewrote (they fail under the base's oracle)")
    unchanged_passing: int = 0
    tampered: tuple[TestChange, ...] = Field(default=(), description="passing at head, failing under the base's "
                                             "oracle or rewritten by a hook")
    unattributed: tuple[TestChange, ...] = Field(default=(), description="failing at head while the base could "
                                                 "not be measured: neither charged nor passed over")
    environmental: tuple[TestChange, ...] = Field(default=(), description="failing for a reason of the sandbox's "
                                                  "environment (named in ``cause``), not of the change")
    flaky: tuple[TestChange, ...] = Field(default=(), description="failures their re-runs did not reproduce "
                                          "(how, in ``cause``): not charged, never a pass")
    past_cap: tuple[str, ...] = Field(default=(), description="base tests not recorded at head because the run "
                                      "passed the cap on recorded tests: not measured, never 'removed'")
    unreached: tuple[str, ...] = Field(default=(), description="base tests that a run which did not complete (a "
                                       "timeout, a crash) at head or under the base's oracle never reached: not "
                                       "measured, never 'regressed' or 'removed'")
    retired: tuple[TestChange, ...] = Field(default=(), description="tests the change deleted together with the "
                                            "product names they tested (failing under the base's tests only "
                                            "because those names are gone; how, in ``cause``): not charged")
    declared: tuple[TestChange, ...] = Field(default=(), description="tests the change deleted that fail under the "
                                             "base's tests and use a name its own changelog entry declares changed "
                                             "(which, in ``cause``): not charged, never a pass")
    mutants: tuple[MutantResult, ...] = ()
    dependencies: tuple[DependencyChange, ...] = Field(default=(), description="requirements the change adds, "
                                                       "removes or re-pins")
    startup_added: tuple[str, ...] = Field(default=(), description="start-up code in the head's environment that "
                                           "the base's did not hold: never a pass")
    base_tests: TestRunResult | None = None
    guard_tests: TestRunResult | None = None

    @property
    def kill_rate(self) -> float | None:
        ran = [m for m in self.mutants if m.status != "not_run"]
        if not ran:
            return None
        return sum(1 for m in ran if m.status in ("killed", "timeout")) / len(ran)


class DetectiveReport(Model):
    """What one detective hands back: evidence, and the measurement it owns (if any)."""

    detective: str
    evidence: tuple[Evidence, ...] = ()
    tests: TestRunResult | None = None
    differential: TestDiff | None = None
    semantic: SemanticResult | None = None
    red: RedAnalysis | None = None
    notices: tuple[str, ...] = ()


# --- judges ---------------------------------------------------------------------------------------------


class Brief(Model):
    """What the judges see: the case, every piece of evidence, and the fact-anchored component scores."""

    case: Case
    evidence: tuple[Evidence, ...]
    tests: TestRunResult | None
    semantic: SemanticResult | None
    red: RedAnalysis
    differential: TestDiff | None = None
    components: dict[str, float | None] = Field(
        description="rationale/architecture/testing from facts; None = not measured")


class JudicialOpinion(Model):
    judge: str
    criterion_id: str
    score: int = Field(ge=1, le=5)
    argument: str
    cited_evidence: tuple[str, ...] = ()
    verdict: OpinionVerdict = "PASS"


class Deliberation(Model):
    """A judge's full answer: its opinions, and what it leaves on the record about how it reached them.

    ``evidence`` (e.g. which model answered, with which response ids and tokens) joins the Evaluation's evidence
    for the DBOM but is never read by the Chief Justice; ``notices`` join the verdict's notices.
    """

    judge: str
    opinions: tuple[JudicialOpinion, ...]
    evidence: tuple[Evidence, ...] = ()
    notices: tuple[str, ...] = ()


class Rehearing(Model):
    """The one re-hearing the Chief Justice orders when judges spread by more than the rubric's limit on a
    criterion: which criteria and why, the first round's opinions on them, and who moved. The second round is
    the Evaluation's ``opinions`` on those criteria."""

    criteria: tuple[str, ...]
    reasons: tuple[str, ...] = Field(description="per criterion, the spread that ordered it")
    first_round: tuple[JudicialOpinion, ...] = Field(description="the opinions on those criteria before it")
    moved: tuple[str, ...] = Field(default=(), description="'judge on criterion: first → second'")
    notices: tuple[str, ...] = Field(default=(), description="judges that kept their opinion, and why")


class CriterionRuling(Model):
    """The Chief Justice's ruling on one criterion: the final score and which rules moved it."""

    criterion_id: str
    score: float
    opinions_considered: int
    rules_applied: tuple[str, ...] = ()
    overruled: tuple[str, ...] = ()
    dissent: str | None = None


class RedSummary(Model):
    attack_successful: bool
    vulnerability_count: int
    max_severity: str
    findings: tuple[RedFinding, ...] = ()


class RubricRef(Model):
    name: str
    version: str
    sha256: str


class Inputs(Model):
    repo: str
    pr_number: int | None
    base: str
    head: str
    intent_sha256: str
    diff_sha256: str
    config_sha256: str | None = None


class Evaluation(Model):
    """The court's verdict. The seed schema's keys stay at the top level."""

    rationale_score: float
    architecture_score: float
    testing_score: float
    logic_score: float
    cis_raw: float
    cis_score: float
    red_penalty_applied: float
    intent_penalty: float
    red_analysis: RedSummary
    verdict: Verdict
    verdict_reasons: tuple[str, ...]
    measured: dict[str, bool]
    evidence: tuple[Evidence, ...]
    opinions: tuple[JudicialOpinion, ...]
    rulings: tuple[CriterionRuling, ...]
    dissent: tuple[str, ...]
    notices: tuple[str, ...]
    tests: TestRunResult | None
    semantic: SemanticResult | None
    rubric: RubricRef
    inputs: Inputs
    differential: TestDiff | None = None
    rehearing: Rehearing | None = None

    def canonical_json(self) -> str:
        """Byte-stable JSON: sorted keys, fixed separators."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def pretty_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False)
