"""The value check knows a credential by its shape, a path however it is spelled, an amount however it is hidden.

The machine that publishes need not hold the keys a run was made with, so
a key is refused for looking like one (a provider's documented prefix, or a
long random token), not only for being the value of a variable here.  A
path of this machine is refused written with percent-escapes, doubled
slashes, ``/./`` or backslashes; an amount with cents is refused behind a
zero-width space, with the euro sign as its decimal mark, with ``EUR``
glued to it, and with ``€`` glued after it (``0,16€``).  Hex digests, ids
and model ids — published everywhere — are not credentials.
"""
import json
import sqlite3
import urllib.parse

import pytest

from llmarchive.archive import record_logs as records
from publish import BoundaryError, publish_all
from publish.boundary.values import build as build_check
from publish.boundary import SealedTextCheck
from tests import publish_helpers as ph

OPEN = "base_rate_neglect__wording__v0"

# Fake keys in each provider's documented shape, put together here so no file holds one whole.
KEYS = {
    "anthropic": ("sk-ant-" + "api03-" + "Xq7bT2mN9vLk4RwZ" * 6 + "-AA", "an Anthropic API key"),
    "openai-project": ("sk-" + "proj-" + "R4nd0mPr0jectK3yT8xQ2" * 4, "an OpenAI API key"),
    "openai": ("sk-" + "T3Bl8kFJx2Qm9Zr4Lw7Vn1Hc5Yp0Gd6s", "an OpenAI API key"),
    "hugging-face": ("hf" + "_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi", "a Hugging Face token"),
    "github-classic": ("gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a GitHub token"),
    "github-fine-grained": ("github" + "_pat_" + "11ABCDEFG0" + "aBcD1234eFgH5678" * 4, "a GitHub token"),
    "aws": ("AK" + "IA" + "Q3EGRIPZ7XJ4LM2N", "an AWS access key id"),
    "google": ("AI" + "za" + "SyD4x9-Qm2Lr7Tb0Kv5Wn8Hc3Jp6Gs1Fd_E", "a Google API key"),
    "generic": ("Zx8Kq2LmW9vT4pB7rN1bY6cH3jF5dS0aGeU", "a credential-shaped token (35 random characters)"),
}


@pytest.fixture
def check(tmp_path):
    """A value check whose environment holds no key at all (as on a machine that publishes only)."""
    return build_check(tmp_path / "home", tmp_path / "code", None, {}, [], environ={})


@pytest.mark.parametrize("name", list(KEYS))
def test_a_key_is_refused_by_its_shape_whatever_the_environment_holds(check, name):
    key, kind = KEYS[name]
    for text in (json.dumps({"explicitly_set": {"max_tokens": 256, "api_key": key}}),
                 f"a test lab (key {key})", key):
        message = check.scan_text(text, "archive.db, table runs")
        assert message == (f"archive.db, table runs: contains {kind} (a credential, recognised by its shape); "
                           "refusing to publish"), text
        assert key not in message, "a credential is named by its kind, never printed"


@pytest.mark.parametrize("text", [
    "d2b6f6a8c1e0f3b5a7c9e1d3f5b7a9c1e3d5f7b9a1c3e5d7f9b1a3c5e7d9f1b3",     # a sha256 digest, as published
    "D2B6F6A8C1E0F3B5A7C9E1D3F5B7A9C1E3D5F7B9A1C3E5D7F9B1A3C5E7D9F1B3",     # the same in capitals
    "cp-3f9a1c0b5d7e2a4f", "c-2026-11-rcf-wording", "risky_choice_framing__wording__v0",
    "claude-sonnet-4-5-20250929", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "Qwen/Qwen2.5-72B-Instruct-AWQ",
    "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF",
    "a risk-averse sk-learn user; the task-1234567890123456789012 ran", "sk-ant-short",
    "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/model.gguf",
    "data:font/woff2;base64,d09GMgABAAAAAAQ4AA0AAAAACHQAAAPhAAEAAAAAAAAAAAAAAAAAAAAAGhYbHhwqBmAAHBEICoQIgzc",
    "/static/app/v1/Inter-Regular.woff2", "2026-11-12T10:00:00Z run-2026-11-00042 n=120",
])
def test_what_the_archive_publishes_everywhere_is_not_a_credential(check, text):
    assert check.scan_text(text, "archive.db") is None


def test_a_key_in_a_runs_explicitly_set_stops_the_publication_though_no_variable_holds_it(archive, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    ph.write_run(archive, ph.protocol(archive, OPEN), "open-1", "2026-11-02")
    run_file = archive.run_dir("open-1") / "run.json"
    run = json.loads(run_file.read_text(encoding="utf-8"))
    key, kind = KEYS["anthropic"]
    run["explicitly_set"] = {"max_tokens": 256, "extra_headers": {"x-api-key": key}}
    run_file.write_text(json.dumps(run), encoding="utf-8")
    with pytest.raises(BoundaryError) as refused:
        publish_all(archive, build_time="2026-12-04T00:00:00Z")
    message = str(refused.value)
    assert f"contains {kind} (a credential, recognised by its shape); refusing to publish" in message
    assert key not in message and "\n" not in message
    assert not archive.public.exists() or not any(archive.public.rglob("*.db")), "nothing was published"


def test_a_key_as_a_submitter_written_behind_the_intakes_back_stops_the_publication(archive, monkeypatch):
    """The intake refuses such a point (tests/test_intake_public_boundary.py); one appended to the private
    record by other means is still refused by publication."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    measurement = ph.write_run(archive, ph.protocol(archive, OPEN), "open-1", "2026-11-02")
    key, kind = KEYS["anthropic"]
    point = dict(measurement, run_id="cp-x", subject_model_id="other-model-1", returned_model_id="other-model-1")
    records.append(archive, "comparison_point", {"date": "2026-11-12", "protocol_id": OPEN,
                                                 "model_id": "other-model-1", "submitted_by": f"lab {key}",
                                                 "measurement": point})
    with pytest.raises(BoundaryError, match=rf"contains {kind} \(a credential, recognised by its shape\)"):
        publish_all(archive, build_time="2026-12-04T00:00:00Z")


SPELLINGS = {
    "percent-escaped": lambda home: urllib.parse.quote(home, safe=""),
    "doubled-slashes": lambda home: home.replace("/", "//"),
    "dot-segments": lambda home: home.replace("/", "/./"),
    "backslashes": lambda home: home.replace("/", "\\"),
    "json-escaped-slashes": lambda home: home.replace("/", "\\/"),
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_the_archive_home_is_refused_however_its_path_is_spelled(check, tmp_path, spelling):
    home = str(tmp_path / "home")
    spelled = SPELLINGS[spelling](home) + SPELLINGS[spelling]("/evals")
    message = check.scan_text(f"lab, results in {spelled}", "comparison_points.csv")
    assert message == (f"comparison_points.csv: contains the archive home's absolute path ({home}); "
                       "refusing to publish"), spelled


@pytest.mark.parametrize("text", ["https://example.org//a/./b%2Fc", "C:\\Users\\lab\\evals", "%2Fopt%2Fevals"])
def test_other_paths_and_addresses_are_published(check, text):
    assert check.scan_text(text, "x.csv") is None


@pytest.mark.parametrize("written, shown", [
    ("€\u200b12.50", "€12.50"),            # a zero-width space between the sign and the figure
    ("€\u206012.50", "€12.50"),            # a word joiner
    ("12,50\ufeff€", "12,50€"),            # a byte-order mark
    ("€\u00a012.50", "€ 12.50"),           # a no-break space
    ("12€50", "12€50"),                    # the sign as the decimal mark
    ("1.12EUR", "1.12EUR"),                # the code glued to the amount
    ("1.12euros", "1.12euros"),
    ("0,16€", "0,16€"),                    # the sign glued after the amount (pinned: a pattern that needs a space fails)
])
def test_an_amount_with_cents_is_refused_however_it_is_written(check, written, shown):
    message = check.scan_text(f"budget_refused: {written} left in the general pool", "coverage.csv")
    assert message == f"coverage.csv: contains a euro amount with cents ({shown!r}); refusing to publish"


def test_a_key_left_in_a_deleted_database_row_is_refused_by_its_shape(check, tmp_path):
    key, kind = KEYS["github-classic"]
    root = tmp_path / "db"
    root.mkdir()
    db = sqlite3.connect(root / "archive.db")
    db.execute("pragma secure_delete = off")
    db.execute("create table coverage (detail text)")
    db.execute("insert into coverage values (?)", (f"token {key}",))
    db.commit()
    db.execute("delete from coverage")
    db.commit()
    db.close()
    with pytest.raises(BoundaryError, match=rf"^archive.db \(raw bytes\): contains {kind} "):
        SealedTextCheck([], []).check_tree(root, workers=1, also=check)
