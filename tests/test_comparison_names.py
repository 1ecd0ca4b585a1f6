"""A submission's names are told apart as a reader sees them, and none borrows the archive's labels (issue 36 §5, §6).

Model ids and submitters are compared by their UTS #39 skeleton (ICU's
confusable mapping after NFKC and case folding): a look-alike of a filed
point's name or of one of the archive's own model ids is refused naming both;
the identical name is not a look-alike.  A published label (known-answer
reader, bridge run) comes from the ``source`` the archive records when it
files a point, never from a name an outsider writes.
"""
import json

import pytest

from llmarchive.archive import record_logs as records
from llmarchive.comparison.intake import SubmissionRejected, submit
from llmarchive.comparison.names import KNOWN_ANSWER_SOURCE, skeleton
from publish.words import numbers
from tests.test_comparison import paths, trials_of, twin_runs_template, unchained, write  # noqa: F401

CYRILLIC_A, CYRILLIC_O = "\u0430", "\u043e"


def other_answers(trials: list[dict], model: str, tag: str) -> list[dict]:
    """``trials`` as another run of ``model`` would give them: the same decisions, other words, its own run id."""
    out = []
    for i, t in enumerate(unchained(trials)):
        out.append(dict(t, run_id=f"run-{tag}", returned_model_id=model,
                        response_text=f"Run {tag} weighs case {i} once.\nDECISION: {t['token']}"
                        if t["outcome"] == "valid" else t["response_text"]))
    return out


def submitted(paths, tmp_path, model: str, tag: str, submitted_by: str = "a test lab", **kw):
    lines = [{"record_type": "comparison_submission", "model_id": model, "submitted_by": submitted_by}]
    file = write(tmp_path, lines + other_answers(trials_of(paths, "open-run"), model, tag), name=f"{tag}.jsonl")
    return submit(paths, file, today="2026-11-20", **kw)


def refused(paths, tmp_path, model: str, tag: str, **kw) -> list[tuple[str, str]]:
    with pytest.raises(SubmissionRejected) as info:
        submitted(paths, tmp_path, model, tag, **kw)
    return info.value.reasons


def test_the_skeleton_folds_cyrillic_fullwidth_and_non_breaking_hyphens_to_what_a_reader_sees():
    plain = skeleton("simulated-reader-invariant")
    assert skeleton(f"simulated-reader-inv{CYRILLIC_A}riant") == plain
    assert skeleton("ｓｉｍｕｌａｔｅｄ-reader-invariant") == plain
    assert skeleton("simulated\u2011reader-invariant") == plain
    assert skeleton("other-model-1") != skeleton("other-model-2")


@pytest.mark.parametrize("look_alike", [f"other-m{CYRILLIC_O}del-1", "ｏｔｈｅｒ-model-1", "other\u2011model-1"])
def test_a_model_id_that_looks_like_a_filed_points_is_refused_naming_both(paths, tmp_path, look_alike):
    submitted(paths, tmp_path, "other-model-1", "first")
    reasons = refused(paths, tmp_path, look_alike, "second")
    assert reasons == [("model_id", f"model id {look_alike!r} looks like 'other-model-1', the model id of a filed "
                                    "comparison point (the same letters to a reader, other code points)")]
    assert len(records.read(paths, "comparison_point")) == 1
    # the identical id is another run of the same model, not a look-alike
    assert submitted(paths, tmp_path, "other-model-1", "third").comparison_id


@pytest.mark.parametrize("look_alike", [f"simulated-reader-inv{CYRILLIC_A}riant", "ｓｉｍｕｌａｔｅｄ-reader-invariant",
                                        "simulated\u2011reader-invariant"])
def test_a_model_id_that_looks_like_one_of_the_archives_own_is_refused_naming_both(paths, tmp_path, look_alike):
    reasons = refused(paths, tmp_path, look_alike, "mimic")
    assert reasons == [("model_id", f"model id {look_alike!r} looks like the archive's own model id "
                                    "'simulated-reader-invariant' (the same letters to a reader, other code points)")]
    assert records.read(paths, "comparison_point") == []


def test_a_submitter_that_looks_like_a_filed_points_is_refused(paths, tmp_path):
    submitted(paths, tmp_path, "other-model-1", "first", submitted_by="Acme Labs")
    reasons = refused(paths, tmp_path, "other-model-2", "second", submitted_by=f"Acme L{CYRILLIC_A}bs")
    assert reasons == [("submitted_by", f"submitted_by 'Acme L{CYRILLIC_A}bs' looks like 'Acme Labs', the submitter "
                                        "of a filed comparison point (the same letters to a reader, other code "
                                        "points)")]


@pytest.mark.parametrize("model,who,condition", [
    ("simulated-reader-invariant", "a test lab", "model_id"),
    ("other-model-1", "this archive's generation bridge (needs_review)", "submitted_by"),
    ("other-model-1", "make demo (simulated reader, known answer)", "submitted_by"),
])
def test_an_outsider_cannot_borrow_the_archives_own_names(paths, tmp_path, model, who, condition):
    reasons = refused(paths, tmp_path, model, "borrower", submitted_by=who)
    assert [c for c, _ in reasons] == [condition] and "reserved" in reasons[0][1], reasons
    assert records.read(paths, "comparison_point") == []


def test_a_label_is_published_from_how_the_point_was_filed_not_from_its_names(paths, tmp_path):
    own = submitted(paths, tmp_path, "simulated-reader-invariant", "demo",
                    submitted_by="make demo (simulated reader, known answer)", source=KNOWN_ANSWER_SOURCE)
    assert own.record["source"] == KNOWN_ANSWER_SOURCE
    assert numbers.point_columns(own.record)["point_kind"] == numbers.KNOWN_ANSWER
    outside = submitted(paths, tmp_path, "other-model-1", "outside")
    assert "source" not in outside.record
    assert numbers.point_columns(outside.record)["point_kind"] == numbers.OUTSIDE_RUN
    # a record that names the archive's reader and bridge but has no source recorded is an outsider's
    borrowed = dict(outside.record, model_id="simulated-reader-invariant",
                    submitted_by="this archive's generation bridge (needs_review)")
    assert numbers.point_columns(borrowed) == {**numbers.point_columns(borrowed), "point_kind": numbers.OUTSIDE_RUN,
                                               "expected": None}
    assert json.dumps(records.read(paths, "comparison_point")[0]["source"]) == '"known_answer"'
