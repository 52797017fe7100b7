"""The audit's I/O edge: read a repository (a git URL cloned into a temp dir, or a local path) and a PDF report.

A git source is read from git's object store at ``HEAD`` (:class:`app.review.gitrepo.GitRepo`), never checked out:
no hook runs (``core.hooksPath=/dev/null``, an empty template), no symlink is materialised, and the ``ext::``
transport is refused. A plain directory is walked with ``os.walk(followlinks=False)`` and every symlink is
skipped, never followed. Everything is capped (files, bytes, pages, images); what is left out is listed.

Exceptions::

    AuditInputError          the audit's input cannot be read; ``source`` names it
    ├── SourceError          the repository: not found, not cloneable, empty
    └── ReportError          the PDF: missing, too big, encrypted or not a PDF
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.review.assembly import llm_judges
from app.review.gitrepo import SAFE_GIT_CONFIG, GitError, GitRepo, network_git_env
from app.settings import Settings
from checks.audit import (
    AuditParts,
    AuditResult,
    DiagramClassifier,
    HistoryCommit,
    ReportDocument,
    ReportImage,
    ReportPage,
    ReportSection,
    RepoSnapshot,
    SourceFile,
    render_audit,
    run_audit,
)
from checks.audit.digest import build_audit_digest
from checks.judges import offline_judges
from rubric import Rubric, build_rubric, load_rubric

if TYPE_CHECKING:
    from pypdf import PdfReader

AUDIT_RUBRIC = "auditor.json"
CLONE_TIMEOUT = 300
MAX_PATHS = 100_000
MAX_SOURCE_FILES = 5_000
MAX_FILE_BYTES = 1_000_000
MAX_TOTAL_SOURCE_BYTES = 64_000_000
MAX_PDF_BYTES = 50_000_000
MAX_PDF_PAGES = 500
MAX_IMAGES = 100
MAX_SECTIONS = 500
MAX_OUTLINE_DEPTH = 8
MAX_SECTION_TITLE = 200
SOURCE_SUFFIXES = (".py",)
URL = re.compile(r"^(?:https?|ssh|git|file)://[^\s]+$")
SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:[^\s]+$")
NOT_A_COMMIT = "(working tree)"
# Only the ordinary transports; ``ext::`` (runs a command) and anything unknown are refused.
REMOTE_PROTOCOLS = ("https", "http", "ssh", "git", "file")


class AuditInputError(ValueError):
    def __init__(self, source: str, message: str) -> None:
        self.source = source
        self.message = message
        super().__init__(f"{source}: {message}")


class SourceError(AuditInputError):
    """The repository could not be read."""


class ReportError(AuditInputError):
    """The PDF report could not be read."""


def is_remote(source: str) -> bool:
    return bool(URL.match(source) or SCP_LIKE.match(source))


def redact(source: str) -> str:
    """The URL without user or token (``https://user:token@host/...`` → ``https://host/...``)."""
    return re.sub(r"^([a-z]+://)[^/@]*@", r"\1", source)


def display_name(source: str) -> str:
    """A stable, path-free name for the report: the URL without credentials, or the directory's name."""
    if is_remote(source):
        no_auth = redact(source)
        return no_auth.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1].rsplit(":", 1)[-1] or no_auth
    return Path(source).resolve().name or "repository"


def clone(url: str, dest: Path, timeout: int = CLONE_TIMEOUT) -> GitRepo:
    """A bare clone of ``url`` into ``dest``: no checkout, no hooks, no templates, only ordinary transports."""
    shown = redact(url)
    if url.startswith("-"):
        raise SourceError(shown, "not a repository URL")
    env = network_git_env(protocols=REMOTE_PROTOCOLS)
    argv = ["git", *SAFE_GIT_CONFIG, "clone", "--bare", "--quiet", "--template=", "--", url, str(dest)]
    try:
        proc = subprocess.run(argv, capture_output=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SourceError(shown, f"git clone timed out after {timeout}s") from exc
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").replace(url, shown).strip().splitlines()
        raise SourceError(shown, "git clone failed: " + (detail[-1] if detail else "no detail"))
    return GitRepo(dest)


def read_history(repo: GitRepo, head: str, max_commits: int) -> tuple[tuple[HistoryCommit, ...], bool]:
    """Commits reachable from ``head``, newest first (merges left out), and whether the list was cut."""
    out = repo.git("log", "--no-merges", f"--max-count={max_commits + 1}", "--no-renames",
                   "--format=%x1e%H%x00%an%x00%ae%x00%at%x00%B%x00", "--numstat", head)
    commits: list[HistoryCommit] = []
    for record in filter(None, out.split("\x1e")):
        fields = record.split("\x00", 5)
        if len(fields) < 6:
            continue
        sha, name, email, when, message, numstat = fields
        files = ins = dels = 0
        for line in numstat.splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                files += 1
                ins += int(parts[0]) if parts[0].isdigit() else 0
                dels += int(parts[1]) if parts[1].isdigit() else 0
        commits.append(HistoryCommit(sha=sha, author_name=name, author_email=email, timestamp=int(when or 0),
                                     message=message.strip(), files_changed=files, insertions=ins, deletions=dels))
    return tuple(commits[:max_commits]), len(commits) > max_commits


def snapshot_from_git(repo: GitRepo, name: str, max_commits: int) -> RepoSnapshot:
    try:
        head = repo.resolve("HEAD")
    except GitError as exc:
        raise SourceError(name, "the repository has no commits") from exc
    tree = repo.tree(head)
    skipped: list[str] = []
    paths = sorted(tree)
    if len(paths) > MAX_PATHS:
        skipped.append(f"{len(paths) - MAX_PATHS} path(s) beyond the first {MAX_PATHS}")
        paths = paths[:MAX_PATHS]
    wanted: list[tuple[str, str]] = []
    for path in paths:
        mode, oid = tree[path]
        if mode == "120000":
            skipped.append(f"{path} (symlink, not followed)")
        elif mode in ("100644", "100755") and path.endswith(SOURCE_SUFFIXES):
            wanted.append((path, oid))
    if len(wanted) > MAX_SOURCE_FILES:
        skipped.extend(f"{p} (beyond {MAX_SOURCE_FILES} source files)" for p, _ in wanted[MAX_SOURCE_FILES:])
        wanted = wanted[:MAX_SOURCE_FILES]
    sources: list[SourceFile] = []
    total = 0
    for (path, _oid), text in zip(wanted, repo.blobs([oid for _p, oid in wanted]), strict=True):
        if text is None:
            skipped.append(f"{path} (binary or larger than {MAX_FILE_BYTES} bytes)")
            continue
        total += len(text)
        if total > MAX_TOTAL_SOURCE_BYTES:
            skipped.append(f"{path} (total source cap of {MAX_TOTAL_SOURCE_BYTES} bytes reached)")
            continue
        sources.append(SourceFile(path=path, text=text))
    commits, truncated = read_history(repo, head, max_commits)
    return RepoSnapshot(name=name, head_sha=head, paths=tuple(paths), sources=tuple(sources), commits=commits,
                        history_truncated=truncated, skipped=tuple(skipped))


def snapshot_from_directory(root: Path, name: str) -> RepoSnapshot:
    """A directory that is not a git repository: walked without following any symlink; no history."""
    paths: list[str] = []
    sources: list[SourceFile] = []
    skipped: list[str] = []
    total = 0
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and not os.path.islink(os.path.join(dirpath, d)))
        for filename in sorted(filenames):
            full = Path(dirpath, filename)
            rel = full.relative_to(root).as_posix()
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                skipped.append(f"{rel} (symlink, not followed)")
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if len(paths) >= MAX_PATHS:
                skipped.append(f"{rel} (beyond {MAX_PATHS} paths)")
                continue
            paths.append(rel)
            if not rel.endswith(SOURCE_SUFFIXES):
                continue
            if info.st_size > MAX_FILE_BYTES or len(sources) >= MAX_SOURCE_FILES \
                    or total + info.st_size > MAX_TOTAL_SOURCE_BYTES:
                skipped.append(f"{rel} (over the size caps)")
                continue
            with open(full, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
            if b"\0" in data[:8000]:
                skipped.append(f"{rel} (binary)")
                continue
            total += len(data)
            digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
            sources.append(SourceFile(path=rel, text=data.decode("utf-8", "replace")))
    paths.sort()
    sources.sort(key=lambda s: s.path)
    return RepoSnapshot(name=name, head_sha=f"{NOT_A_COMMIT} {digest.hexdigest()[:12]}", paths=tuple(paths),
                        sources=tuple(sources), skipped=tuple(skipped))


@contextlib.contextmanager
def open_snapshot(source: str, max_commits: int) -> Iterator[RepoSnapshot]:
    """The repository named by ``source`` (URL or local path) as a snapshot; a clone lives only inside."""
    name = display_name(source)
    if is_remote(source):
        with tempfile.TemporaryDirectory(prefix="logomesh-audit-") as tmp:
            repo = clone(source, Path(tmp) / "repo.git")
            yield snapshot_from_git(repo, name, max_commits)
        return
    root = Path(source)
    if not root.is_dir():
        raise SourceError(source, "no such directory (and not a git URL)")
    local = _git_root(root)
    if local is None:
        yield snapshot_from_directory(root, name)
        return
    yield snapshot_from_git(local, name, max_commits)


def _git_root(root: Path) -> GitRepo | None:
    """``root`` as a git repository when it is one itself (its top level, or a bare repository); a directory
    inside someone else's work tree is just a directory, never its enclosing repository."""
    try:
        repo = GitRepo.open(root)
        if repo.git("rev-parse", "--is-bare-repository").strip() == "true":
            return repo
        top = repo.git("rev-parse", "--show-toplevel").strip()
    except GitError:
        return None
    return repo if Path(top).resolve() == root.resolve() else None


def read_report(path: Path, max_bytes: int = MAX_PDF_BYTES) -> ReportDocument:
    """Text per page and embedded images of a PDF. Damaged pages or images become notices, never crashes."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ReportError(str(path), f"larger than {max_bytes} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise ReportError(str(path), f"cannot read: {exc.strerror}") from exc
    if not data.startswith(b"%PDF-"):
        raise ReportError(str(path), "not a PDF file")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ReportError(str(path), "the PDF is encrypted")
        page_objects = list(reader.pages)
    except PyPdfError as exc:
        raise ReportError(str(path), f"not a readable PDF: {exc}") from exc
    notices: list[str] = []
    if len(page_objects) > MAX_PDF_PAGES:
        notices.append(f"only the first {MAX_PDF_PAGES} of {len(page_objects)} pages were read")
        page_objects = page_objects[:MAX_PDF_PAGES]
    pages: list[ReportPage] = []
    images: list[ReportImage] = []
    sections = read_outline(reader, notices)
    for number, page in enumerate(page_objects, start=1):
        try:
            text = page.extract_text() or ""
        except (PyPdfError, ValueError, KeyError, TypeError) as exc:
            notices.append(f"page {number}: text could not be extracted ({type(exc).__name__})")
            text = ""
        pages.append(ReportPage(number=number, text=text))
        if len(images) >= MAX_IMAGES:
            continue
        try:
            found = list(page.images)
        except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
            notices.append(f"page {number}: images could not be extracted ({type(exc).__name__})")
            continue
        for image in found[: MAX_IMAGES - len(images)]:
            width = height = None
            with contextlib.suppress(Exception):  # a broken image still counts as found
                if image.image is not None:
                    width, height = image.image.size
            images.append(ReportImage(page=number, name=image.name, format=image.name.rsplit(".", 1)[-1].lower(),
                                      width=width, height=height, size=len(image.data),
                                      sha256=hashlib.sha256(image.data).hexdigest(), data=image.data))
    return ReportDocument(name=path.name, sha256=hashlib.sha256(data).hexdigest(), pages=tuple(pages),
                          sections=sections, images=tuple(images), notices=tuple(notices))


def read_outline(reader: PdfReader, notices: list[str]) -> tuple[ReportSection, ...]:
    """The PDF's outline (bookmarks), depth first, as the report's sections. A hostile outline (cycles, absurd
    depth or length) is cut at the caps; an unreadable one becomes a notice."""
    from pypdf.errors import PyPdfError

    sections: list[ReportSection] = []

    def walk(items: list[Any], level: int) -> None:
        for item in items:
            if len(sections) >= MAX_SECTIONS:
                return
            if isinstance(item, list):
                if level < MAX_OUTLINE_DEPTH:
                    walk(item, level + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())[:MAX_SECTION_TITLE]
            try:
                index = reader.get_destination_page_number(item)
            except (PyPdfError, ValueError, KeyError, TypeError, AttributeError):
                index = None
            page = index + 1 if index is not None and index >= 0 else None
            sections.append(ReportSection(title=title, page=page, level=level))

    try:
        walk(list(reader.outline), 0)
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        notices.append(f"the PDF's outline could not be read ({type(exc).__name__})")
    if len(sections) >= MAX_SECTIONS:
        notices.append(f"only the first {MAX_SECTIONS} outline entries were read")
    return tuple(sections)


def load_audit_rubric(path: Path | None) -> Rubric:
    """The rubric the audit is judged by: ``path``, or the bundled ``auditor.json``."""
    if path is not None:
        return load_rubric(path)
    text = resources.files("rubric").joinpath(AUDIT_RUBRIC).read_text(encoding="utf-8")
    return build_rubric(json.loads(text), AUDIT_RUBRIC)


@dataclass(frozen=True)
class AuditOutcome:
    result: AuditResult
    markdown: str
    rubric: Rubric
    tree_sha256: str
    model_ids: dict[str, str]


def audit_parts(stack: contextlib.AsyncExitStack, settings: Settings, rubric: Rubric) -> AuditParts:
    """The bench and the eyes of one audit, chosen by settings; ``stack`` closes their clients afterwards.

    With an LLM provider (``anthropic`` with a key, or ``openai``: :func:`app.llm.make_llm_client`), every rubric
    persona becomes an LLM judge (each falling back to its offline audit persona when the provider cannot be
    reached); report images go to the Anthropic diagram classifier with ``anthropic`` only. Otherwise the offline
    personas rule and the images are listed, not analysed.
    """
    parts = AuditParts()
    offline = {judge.persona: judge for judge in offline_judges(rubric.judges, court="audit")}
    judges, notice = llm_judges(stack, settings, rubric.judges, offline, digest=build_audit_digest)
    if notice is not None:
        parts.notices.append(notice)
    if judges:
        parts.judges = judges
    if settings.llm_provider == "openai":
        parts.classifier_missing = "the openai provider has no diagram classifier (only anthropic reads images)"
        return parts
    if settings.llm_provider != "anthropic":
        return parts
    api_key = settings.llm_key()
    if api_key is None:
        parts.classifier_missing = "the anthropic provider has no API key (LOGOMESH_LLM_API_KEY)"
        return parts
    import anthropic

    from app.llm.vision_anthropic import AnthropicDiagramClassifier

    client = anthropic.AsyncAnthropic(api_key=api_key,
                                      base_url=settings.llm_base_url, timeout=settings.llm_timeout_seconds,
                                      max_retries=settings.llm_max_retries)
    stack.push_async_callback(client.close)
    parts.classifier = AnthropicDiagramClassifier(client, settings.llm_model)
    return parts


async def audit_repository(source: str, *, settings: Settings, report_path: Path | None = None,
                           rubric_path: Path | None = None,
                           classifier: DiagramClassifier | None = None) -> AuditOutcome:
    """Read the repository and the report, run the audit court, render the Markdown report.

    ``classifier`` overrides the vision provider the settings would choose.
    """
    rubric = load_audit_rubric(rubric_path)
    report = read_report(report_path) if report_path is not None else None
    async with contextlib.AsyncExitStack() as stack:
        with open_snapshot(source, rubric.forensics.max_commits) as snapshot:
            parts = audit_parts(stack, settings, rubric)
            if classifier is not None:
                parts.classifier = classifier
            if snapshot.skipped:
                parts.notices.append(f"{len(snapshot.skipped)} path(s) were not read: "
                                     + "; ".join(snapshot.skipped[:10]) + (" …" if len(snapshot.skipped) > 10 else ""))
            result = await run_audit(snapshot, report, rubric, parts)
            tree_sha256 = snapshot.content_sha256()
    return AuditOutcome(result=result, markdown=render_audit(result, rubric), rubric=rubric, tree_sha256=tree_sha256,
                        model_ids=_model_ids(parts, result))


def _model_ids(parts: AuditParts, result: AuditResult) -> dict[str, str]:
    """Which models ruled: ``judges`` is ``offline`` unless a judge answered through a model; ``vision`` when a
    diagram classifier was there to ask."""
    models = {"judges": "offline"}
    llm = sorted({str(e.facts.get("model")) for e in result.evidence
                  if e.kind == "llm-exchange" and e.facts.get("outcome") == "answered"})
    if llm:
        models["judges"] = ",".join(llm)
    if parts.classifier is not None:
        models["vision"] = str(getattr(parts.classifier, "model_id", type(parts.classifier).__name__))
    return models
