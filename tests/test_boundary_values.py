"""The value check: the owner's money, this machine's paths and credentials never reach public/.

Each leak is planted where a private reason would travel — a coverage row
published as written, so it lands in ``coverage.csv`` and ``archive.db`` —
and publication must refuse in one line naming the file and the match,
leaving ``public/`` as it was.  The open panels' own amounts and the models'
answers are published untouched.  Every kind of published file is searched
(:func:`test_every_kind_of_published_file_is_searched`).
"""
import json
import sqlite3
from pathlib import Path

import pytest

from llmarchive import budget as budget_mod
from llmarchive.archive import record_logs as records
from publish import BoundaryError, publish_all
from publish.boundary.values import ValueCheck, build as build_check
from publish.boundary import SealedTextCheck
from tests import publish_helpers as ph

BUILD = "2026-12-03T00:00:00Z"
OPEN = "base_rate_neglect__wording__v0"
SECRET = "sk-planted-credential-0123456789"


def open_amount(archive) -> tuple[str, int]:
    """An amount an open panel states (``€150``) and its value."""
    import re

    text = ph.protocol(archive, OPEN)["panel"][0]["versions"]["A"]
    number = re.search(r"€(\d+)\b(?!,)", text).group(1)
    return f"€{number}", int(number)


def plant(archive, detail: str) -> None:
    """A coverage row carrying ``detail`` as its public words (the log is rewritten: one plant at a time)."""
    archive.record_log("coverage").unlink(missing_ok=True)
    records.append(archive, "coverage", {"period": "2026-11", "job": "full_sweep", "series": "commercial",
                                         "protocol_id": OPEN, "status": "gap", "cause": "budget_halted",
                                         "run_id": None, "detail": detail, "condition": "budget_refused"})


def public_bytes(archive) -> dict:
    return {str(p.relative_to(archive.public)): p.read_bytes() for p in archive.public.rglob("*") if p.is_file()}


@pytest.fixture
def checked(archive, monkeypatch):
    """A published archive with money in the open panel and in an open-lane answer, a budget whose ceiling is
    an amount the panel states, three euros spent this month, and a credential in the environment."""
    amount, value = open_amount(archive)
    budget_mod.write_budget(archive, budget_mod.Budget(float(value), 6.5, 1.0, {"scenario": 0.0094,
                                                                                "fingerprint": 0.0011}))
    meter = budget_mod.SpendMeter(archive, budget_mod.Authorization("manual", "scenario", "general", 1.0),
                                  "filler", "anthropic", "m")
    for i in range(3):
        meter.charge([(f"c{i}", {"answered": True})])
    monkeypatch.setenv("LLMARCHIVE_TEST_API_KEY", SECRET)
    ph.write_run(archive, ph.protocol(archive, OPEN), "open-1", "2026-11-02",
                 response="Paying €12.50 for the check is worth it.\nDECISION: A")
    publish_all(archive, build_time=BUILD)
    return archive, amount


def test_the_open_panels_amounts_and_the_models_answers_are_published(checked):
    archive, amount = checked
    panel = (archive.public / "panels" / f"{OPEN}.json").read_text(encoding="utf-8")
    assert amount in panel, "the ceiling's figure is published where the open panel states it"
    lane = (archive.public / "open-lane" / "2026.jsonl").read_text(encoding="utf-8")
    assert "€12.50" in lane, "a model's answer is published unchanged, cents included"


@pytest.mark.parametrize("leak,where", [
    ("budget_refused: a run of 120 calls costs about €1.12; €0.16 left in the general pool for 2026-12",
     "a euro amount with cents ('€1.12')"),
    ("the answer was €12.50 left in the general pool", "a euro amount with cents ('€12.50')"),
    ("the ceiling of {amount} was reached", "a figure of the budget in a money context ('{amount}')"),
    ("3 EUR spent this month", "a figure of the budget in a money context ('3 EUR')"),
    ("rates_eur_per_call were read", "a money field ('rates_eur_per_call')"),
    ("exploratory: not listed in any manifest under {home}/private/timestamps",
     "the archive home's absolute path ({home})"),
    ("a model file under {user}/.cache/llm", "the user's home directory ({user})"),
    ("the key {secret} was refused", "the value of the environment variable LLMARCHIVE_TEST_API_KEY (a credential)"),
], ids=["cents", "cents-of-an-answer-in-other-words", "ceiling", "month-total", "money-field", "home", "user-home",
        "credential"])
def test_each_planted_leak_refuses_the_publication_naming_file_and_match(checked, leak, where):
    archive, amount = checked
    before = public_bytes(archive)
    values = {"amount": amount, "home": str(archive.home), "user": str(Path.home()), "secret": SECRET}
    plant(archive, leak.format(**values))
    with pytest.raises(BoundaryError) as refused:
        publish_all(archive, build_time="2026-12-04T00:00:00Z")
    message = str(refused.value)
    print(message)
    assert message.split(":")[0].split(",")[0] in ("coverage.csv", "archive.db"), message
    assert f"contains {where.format(**values)}; refusing to publish" in message
    assert SECRET not in message, "a credential is named, never printed"
    assert "\n" not in message
    assert public_bytes(archive) == before, "public/ is left as it was"
    assert not [p for p in archive.home.iterdir() if p.name.startswith(".publish-staging")]


def test_every_kind_of_published_file_is_searched(tmp_path):
    """JSON, JSONL, CSV, HTML (as written and as read), SQLite text cells, and a database's free pages."""
    check = build_check(tmp_path / "home", tmp_path / "code", None, {}, [], environ={"X_TOKEN": SECRET})
    home = str(tmp_path / "home")
    files = {
        "status.json": json.dumps({"note": "spent €3.20"}, ensure_ascii=True),
        "open-lane/2026.jsonl": json.dumps({"run_id": "r", "note": f"at {home}/x"}) + "\n",
        "coverage.csv": f"period,detail\n2026-11,{SECRET}\n",
        "index.html": "<p>left: <b>&euro;0.16</b></p>",
    }
    for name, text in files.items():
        root = tmp_path / name.replace("/", "_")
        (root / name).parent.mkdir(parents=True)
        (root / name).write_text(text, encoding="utf-8")
        with pytest.raises(BoundaryError, match=rf"^{name}"):
            SealedTextCheck([], []).check_tree(root, workers=1, also=check)
    root = tmp_path / "db"
    root.mkdir()
    db = sqlite3.connect(root / "archive.db")
    db.execute("create table coverage (detail text)")
    db.execute("insert into coverage values (?)", (f"€0.16 left, home {home}",))
    db.commit()
    db.close()
    with pytest.raises(BoundaryError, match=r"^archive.db, table coverage: contains the archive home"):
        SealedTextCheck([], []).check_tree(root, workers=1, also=check)
    db = sqlite3.connect(root / "archive.db")
    db.execute("pragma secure_delete = off")            # as many SQLite builds do: a deleted row's bytes stay
    db.execute("delete from coverage")                  # gone from every query, still in the file
    db.commit()
    assert db.execute("select count(*) from coverage").fetchone() == (0,)
    db.close()
    with pytest.raises(BoundaryError, match=r"^archive.db \(raw bytes\): contains the archive home"):
        SealedTextCheck([], []).check_tree(root, workers=1, also=check)


def test_an_amount_is_exempt_only_in_the_words_of_the_open_panel():
    check = ValueCheck()
    check.add_figure(150.0)
    check.allow("Port records show that you are paid €150 if the crate holds fakes.")
    assert check.scan_text('{"text": "Port records show that you are paid €150 if the crate holds fakes."}',
                           "panels/x.json") is None
    assert check.scan_text("<li>you are paid <b>€150</b> if the crate holds fakes</li>", "index.html") is None
    assert "figure of the budget" in check.scan_text("the ceiling is €150 this month", "coverage.csv")
    assert "figure of the budget" in check.scan_text("Port records show that you are paid €150 in total",
                                                      "coverage.csv"), "the words after the amount count too"
