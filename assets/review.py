"""The ``needs_review`` decision as a Dagster job: one op, configured with the human's decision.

Thin by design: :func:`llmarchive.succession.review.resolve` records the decision and
acts on it (held bridge runs join the curve, or stay comparison points),
exactly as ``llmarchive review resolve`` does.
"""
from typing import Literal, Optional

from dagster import Config, Failure, OpExecutionContext, Output, job, op

from assets.resources import ArchiveResource
from llmarchive.archive import utc_today
from llmarchive.succession import ReviewError, resolve


class ReviewConfig(Config):
    """Which review (its id or first 8+ characters, from ``llmarchive review list``), the decision, who decides."""

    review_id: str
    decision: Literal["successor", "not_successor"]
    reviewer: str
    note: Optional[str] = None


@op(description="Resolve one needs_review: successor → its held bridge runs join the family's curve and the "
                "active model switches (subject_model); not_successor → they stay comparison points. Recorded with "
                "the date and the reviewer; a review already resolved is refused.")
def resolve_needs_review(context: OpExecutionContext, config: ReviewConfig, archive: ArchiveResource) -> Output[str]:
    try:
        done = resolve(archive.paths(), config.review_id, config.decision, config.reviewer, utc_today(),
                       note=config.note)
    except ReviewError as exc:
        raise Failure(description=str(exc)) from None
    review = done.review
    context.log.info(f"needs_review {review.review_id[:12]} ({review.model_id}) resolved as {config.decision} "
                     f"by {done.record['reviewer']}")
    return Output(config.decision, metadata={
        "review_id": review.review_id,
        "model_id": review.model_id,
        "record_sha256": done.record.get("record_sha256"),
        "switch": (done.switch or {}).get("model_id") or "-",
        "joined_curve": len(done.joined_curve),
        "still_held": len(done.still_held),
        "comparison_points": len(review.comparison_points),
    })


@job(description="Resolve a needs_review (method §4.3: a new model id with no successor declaration). Launch it "
                 "from the Launchpad with ops.resolve_needs_review.config.review_id, .decision (successor or "
                 "not_successor) and .reviewer filled in; `llmarchive review list` shows the ids.")
def review_job():
    resolve_needs_review()
