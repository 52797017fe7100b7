"""Detectives: one plug-in module each, with a stable id and a What / Why / Example docstring."""

from checks.detectives.doc_analyst import DocAnalyst
from checks.detectives.harness import HarnessInspector
from checks.detectives.red_team import RedTeam
from checks.detectives.repo_investigator import RepoInvestigator
from checks.detectives.semantic import Semantic
from checks.detectives.test_runner import TestRunner

__all__ = ["DocAnalyst", "HarnessInspector", "RedTeam", "RepoInvestigator", "Semantic", "TestRunner"]
