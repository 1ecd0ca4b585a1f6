"""The two boundary checks of one build, made from the build's inputs and the home as it is now.

:func:`sealed_text_check` (no guard or sealed wording: :mod:`publish.boundary.sealed`) and
:func:`value_check` (no money of the owner's, no path of this machine,
no credential: :mod:`publish.boundary.values`).  The build runs both over its
staging folder (:mod:`publish.pipeline.build`), and ``publish --check`` runs them
again over ``public/`` as it stands (:func:`publish.pipeline.checks.leak_problems`),
so both read one definition of what is exempt.
"""
from llmarchive import budget as budget_mod
from llmarchive.archive import ArchivePaths, REPO_ROOT, RecordFileError
from measure.chain import ChainError
from panels.instruction import INSTRUCTION
from publish.data import sources
from publish.boundary import values
from publish.errors import PublishError
from publish.boundary.values import ValueCheck
from publish.boundary.sealed import SealedTextCheck


def sealed_text_check(inputs: sources.Inputs) -> SealedTextCheck:
    """The sealed-text check for a build: the wording of non-open protocols; open wording and the instruction
    exempt."""
    public = [t.text for t in inputs.texts.public] + [INSTRUCTION]
    return SealedTextCheck(inputs.texts.private, public)


def value_check(paths: ArchivePaths, inputs: sources.Inputs, panel_files: dict[str, bytes]) -> ValueCheck:
    """The value check for a build (:mod:`publish.boundary.values`), read from the home as it is now.

    Exempt from its money rules: the words of the open panels as published
    (``panel_files``, ``panels/<protocol_id>.json``), the decision
    instruction, the models' answers the open lane publishes, and the words
    an outsider wrote on a comparison point (who submitted it, its note, its
    model ids and family) — data, not ours, and never allowed to block a
    publication by mentioning an amount.  What has no exemption (a credential,
    a path of this machine, a money field) the intake refused already
    (:func:`llmarchive.archive.boundary_rules.public_text_problem`).
    """
    exempt = [INSTRUCTION, *(t.text for t in inputs.texts.public)]
    exempt += [text for data in panel_files.values() for text in values.document_strings(data)]
    exempt += list(values.answers_with_amounts(line for run in inputs.open_runs for line in run.lines))
    exempt += [point[key] for point in inputs.by_kind("comparison_point")
               for key in ("submitted_by", "note", "model_id", "requested_model_id") if isinstance(point.get(key), str)]
    exempt += [point["measurement"]["model_family"] for point in inputs.by_kind("comparison_point")
               if isinstance(point.get("measurement"), dict) and isinstance(point["measurement"].get("model_family"), str)]
    try:
        budget = budget_mod.load_budget(paths)
        # The ledger's tally (its checkpoint and the entries after it), not the whole ledger parsed again: the
        # figures grew with every call the archive ever made, read twice a publication (the build, the checks).
        months = budget_mod.read_ledger(paths).tally.pool_totals()
    except (budget_mod.BudgetError, RecordFileError, ChainError) as exc:
        raise PublishError(f"the value check cannot read the budget it keeps out of public/: {exc}") from None
    seeds = []
    if paths.panel_seed_file.exists():
        try:
            seeds.append(paths.panel_seed_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise PublishError(f"{paths.panel_seed_file}: cannot be read ({exc})") from None
    return values.build(paths.home, REPO_ROOT, budget, months, exempt, seeds=seeds)
