"""VisionInspector — the report's images, and (with a vision provider) whether its diagrams match the code.

What: lists every image the edge extracted from the report (page, size, format, SHA-256). Offline it says
plainly that the images were found and **not analysed**. With a :class:`DiagramClassifier` (an LLM with
vision behind the caller's adapter) each image is classified and an architecture diagram is compared with the
code's real structure (its graph nodes, fan-out and fan-in), which the classifier receives as plain facts.
Why: a diagram of a parallel graph over a linear pipeline is a claim like any other.
Example: ``diagram-not-analysed: 2 image(s) on p. 1, 3 were not analysed (no vision provider configured)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from checks.audit.ast_facts import ArchitectureFacts
from checks.audit.models import ReportDocument, ReportImage
from checks.errors import DetectiveError
from checks.models import Evidence, Location, Model

ID = "vision"
DiagramKind = Literal["architecture_diagram", "flowchart", "screenshot", "chart", "other"]


class StructureSummary(Model):
    """What the code's structure is, handed to a classifier instead of the code itself."""

    nodes: tuple[str, ...]
    fan_out: dict[str, tuple[str, ...]]
    fan_in: dict[str, tuple[str, ...]]
    graphs: int


class DiagramAssessment(Model):
    """A classifier's structured answer about one image."""

    kind: DiagramKind
    matches_code: bool | None = None
    description: str = ""


@runtime_checkable
class DiagramClassifier(Protocol):
    """Looks at one image; the adapter (e.g. Anthropic vision) lives in ``app/``, never in the court."""

    model_id: str

    async def classify(self, image: ReportImage, structure: StructureSummary) -> DiagramAssessment: ...


def structure_of(facts: ArchitectureFacts) -> StructureSummary:
    return StructureSummary(
        nodes=tuple(sorted({n.name for n in facts.nodes})),
        fan_out={k: tuple(v) for k, v in facts.fan_out().items()},
        fan_in={k: tuple(v) for k, v in facts.fan_in().items()},
        graphs=len(facts.graphs),
    )


def _where(images: Sequence[ReportImage]) -> str:
    return ", ".join(str(p) for p in sorted({i.page for i in images}))


class VisionInspector:
    id = ID

    def __init__(self, classifier: DiagramClassifier | None = None,
                 unavailable_reason: str = "no vision provider configured") -> None:
        self.classifier = classifier
        self.unavailable_reason = unavailable_reason

    async def inspect(self, report: ReportDocument | None, facts: ArchitectureFacts) -> list[Evidence]:
        if report is None:
            return []
        if not report.images:
            return [Evidence(id=f"{ID}.none", detective=ID, kind="report-images-missing", severity="medium",
                             summary="The report contains no image, so no architecture diagram",
                             facts={"images": 0, "report": True})]
        listing = [{"page": i.page, "name": i.name, "format": i.format, "width": i.width, "height": i.height,
                    "bytes": i.size, "sha256": i.sha256} for i in report.images]
        items = [Evidence(id=f"{ID}.images", detective=ID, kind="report-images",
                          summary=f"{len(report.images)} image(s) in the report on p. {_where(report.images)}",
                          location=Location(path=report.name, line=report.images[0].page),
                          facts={"images": listing, "report": True, "neutral": True})]
        if self.classifier is None:
            items.append(Evidence(
                id=f"{ID}.not-analysed", detective=ID, kind="diagram-not-analysed", severity="low",
                summary=f"{len(report.images)} image(s) on p. {_where(report.images)} were not analysed "
                        f"({self.unavailable_reason})",
                facts={"reason": self.unavailable_reason, "report": True, "unmeasured": True}))
            return items
        structure = structure_of(facts)
        for image in report.images:
            where = Location(path=report.name, line=image.page)
            try:
                answer = await self.classifier.classify(image, structure)
            except DetectiveError as exc:  # one unreadable image or a provider outage never fails the audit
                items.append(Evidence(id=f"{ID}.diagram:{image.sha256[:12]}", detective=ID,
                                      kind="diagram-not-analysed", severity="low", location=where,
                                      summary=f"{image.name} was not analysed: {exc.message}",
                                      facts={"reason": exc.message, "report": True, "unmeasured": True}))
                continue
            facts_out = {"image": image.name, "sha256": image.sha256, "kind": answer.kind,
                         "matches_code": answer.matches_code, "description": answer.description,
                         "model": self.classifier.model_id, "report": True}
            if answer.kind == "architecture_diagram" and answer.matches_code is False:
                items.append(Evidence(id=f"{ID}.diagram:{image.sha256[:12]}", detective=ID, kind="diagram-mismatch",
                                      severity="medium", location=where, facts=facts_out,
                                      summary=f"The diagram {image.name} does not match the code's structure: "
                                              f"{answer.description}"))
            else:
                diagram = answer.kind in ("architecture_diagram", "flowchart")
                items.append(Evidence(id=f"{ID}.diagram:{image.sha256[:12]}", detective=ID,
                                      kind="diagram-classified", location=where, facts=facts_out,
                                      severity="info" if diagram else "low",
                                      summary=f"{image.name} is a {answer.kind.replace('_', ' ')}"
                                              + ("" if answer.matches_code is None else
                                                 " that matches the code" if answer.matches_code else "")))
        return items
