"""A demonstration archive: what ``make demo`` sets up before running the pipeline.

Admission is a human act (method §3, gate 4), so a fresh clone has only
``candidate`` protocols, and candidates never reach a curve or the open
lane.  To show the whole pipeline, the demo admits the twelve ``v0``
protocols by SPEC's lane rule with the reviewer recorded as
:data:`DEMO_REVIEWER` — a label that says in every admission record that no
human reviewed anything.  The guard protocols of a demo archive are built
from the public development seed and are admitted only because the demo
says so explicitly; a real archive refuses that (``llmarchive panels
promote`` without ``--allow-development-seed``).
"""
from llmarchive.paths import ArchivePaths

DEMO_REVIEWER = "make demo (scripted demonstration; no human review)"


def admit_demo_protocols(paths: ArchivePaths, series: str = "v0") -> list[str]:
    """Admit every protocol of ``series`` by the lane rule; return the ids admitted now."""
    from llmarchive import lanes, registry

    registry.build_all(paths)
    admitted = []
    known = registry.known_ids(paths)
    for protocol in registry.load_all(paths):
        if protocol.get("series") != series or protocol.get("status") == "admitted":
            continue
        lane, twin = lanes.planned_lane(protocol["protocol_id"])
        lanes.promote(paths, protocol, lane, twin_id=twin, human_reviewed=True, reviewer=DEMO_REVIEWER,
                      allow_development_seed=True, known_ids=known)
        admitted.append(protocol["protocol_id"])
    return admitted
