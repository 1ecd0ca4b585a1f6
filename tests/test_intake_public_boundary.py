"""Whatever the comparison intake accepts can be published: an outsider's words cannot hold publication hostage.

Publication refuses, with no exemption, a credential, a path of this
machine and a money field anywhere in ``public/`` (tests/test_boundary_shapes.py).
A submitter, model id or header value carrying one would, once accepted,
stop every later ``publish`` until someone edited the private record by
hand.  So the intake applies the same rules
(:func:`llmarchive.archive.boundary_rules.public_text_problem`) and refuses
such a submission before anything is written — and a record written behind
the intake's back is still refused by publication.
"""
import json
import sqlite3
import urllib.parse
from pathlib import Path

import pytest

from llmarchive.archive import record_logs as records
from llmarchive.cli import main
from llmarchive.comparison import submit
from publish import BoundaryError, publish_all
from tests.test_boundary_shapes import KEYS
from tests.test_intake_boundaries import intake, template, write  # noqa: F401  (fixtures)

CODE_ROOT = Path(__file__).resolve().parents[1]
HOSTILE = {
    "the-users-home": lambda home: f"lab, results in {Path.home()}/evals",
    "the-users-home-percent-escaped": lambda home: "lab, results in " + urllib.parse.quote(f"{Path.home()}/evals",
                                                                                          safe=""),
    "the-users-home-doubled-slashes": lambda home: f"lab, results in {Path.home()}//evals".replace("/", "//", 1),
    "the-users-home-backslashes": lambda home: "lab, results in " + f"{Path.home()}/evals".replace("/", "\\"),
    "the-archive-home": lambda home: f"lab at {home}/./private",
    "the-code-folder": lambda home: f"lab ({CODE_ROOT}/evals)",
    "an-anthropic-key": lambda home: f"lab {KEYS['anthropic'][0]}",
    "a-hugging-face-token": lambda home: f"lab {KEYS['hugging-face'][0]}",
    "a-random-token": lambda home: f"lab {KEYS['generic'][0]}",
    "a-money-field": lambda home: "lab (cost_eur reported)",
}
WHAT = {"the-users-home": "the user's home directory", "the-archive-home": "the archive home's absolute path",
        "the-code-folder": "the code's folder on this machine", "an-anthropic-key": "an Anthropic API key",
        "a-hugging-face-token": "a Hugging Face token", "a-random-token": "a credential-shaped token",
        "a-money-field": "a money field"}


def nothing_stored(paths) -> None:
    assert records.read(paths, "comparison_point") == []
    folder = paths.comparison_points
    assert not folder.exists() or [p.name for p in folder.iterdir() if p.name != ".intake.lock"] == []


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_submitter_publication_would_refuse_is_refused_at_intake_in_one_line(intake, tmp_path, capsys, name):
    paths, _, trials = intake
    who = HOSTILE[name](str(paths.home))
    file = write(tmp_path, trials)
    assert main(["comparison", "submit", str(file), "--submitted-by", who]) == 2
    err = capsys.readouterr().err.strip().split("\n")
    assert err[0] == f"error: {file}: submission rejected, nothing stored (1 reason):", err
    assert len(err) == 2 and err[1].startswith(f"{file}: submitted_by: submitted_by holds "), err
    what = next(w for key, w in WHAT.items() if name.startswith(key))
    assert what in err[1] and "publication never carries one" in err[1], err
    for key, _ in KEYS.values():
        assert key not in err[1], "a credential is named by its kind, never printed"
    nothing_stored(paths)


@pytest.mark.parametrize("field, value, condition", [
    ("explicitly_set", {"api_key": KEYS["openai-project"][0]}, "explicitly_set"),
    ("explicitly_set", {"stop": ["DECISION", "{home}//private"]}, "explicitly_set"),
    ("note", "copied from {home}/private/records", "note"),
    ("model_family", "lab_eur_family", "model_family"),
    ("requested_model_id", "org/" + KEYS["google"][0], "requested_model_id"),
])
def test_a_header_value_publication_would_refuse_is_refused_at_intake(intake, tmp_path, field, value, condition):
    paths, _, trials = intake
    if isinstance(value, dict):
        value = json.loads(json.dumps(value).replace("{home}", str(paths.home)))
    else:
        value = value.replace("{home}", str(paths.home))
    header = {"record_type": "comparison_submission", "submitted_by": "a test lab", field: value}
    with pytest.raises(Exception) as refused:
        submit(paths, write(tmp_path, [header] + trials), today="2026-11-12")
    assert [c for c, _ in refused.value.reasons] == [condition], refused.value.reasons
    nothing_stored(paths)


def test_an_accepted_submitter_with_an_amount_and_another_machines_path_is_published(intake, tmp_path):
    """The outsider's own words are data: an amount in them (its submitter, its model family) is exempt at
    publication, a path of another machine is not this machine's; the point is accepted and the archive
    publishes."""
    paths, _, trials = intake
    who = "a test lab (€12.50 of compute, results in /home/lab/evals)"
    header = {"record_type": "comparison_submission", "model_family": "lab models at €0.16 a run"}
    accepted = submit(paths, write(tmp_path, [header] + trials), submitted_by=who, today="2026-11-12")
    assert accepted.record["submitted_by"] == who
    publish_all(paths, build_time="2026-12-04T00:00:00Z")
    db = sqlite3.connect(paths.public / "archive.db")
    assert db.execute("select submitted_by from comparison_points").fetchall() == [(who,)]
    db.close()


def test_a_hostile_submitter_written_behind_the_intakes_back_still_stops_the_publication(intake, tmp_path):
    paths, _, trials = intake
    accepted = submit(paths, write(tmp_path, trials), submitted_by="a test lab", today="2026-11-12")
    point = {k: v for k, v in accepted.record.items() if k not in ("record_sha256", "prev_sha256", "recorded_at")}
    records.append(paths, "comparison_point", dict(point, comparison_id="cp-behind", submission_sha256="0" * 64,
                                                   submitted_by=HOSTILE["the-archive-home"](str(paths.home))))
    with pytest.raises(BoundaryError, match="contains the archive home's absolute path"):
        publish_all(paths, build_time="2026-12-04T00:00:00Z")
