"""The CLI and the Dagster definitions read one configuration (issue 46): a setting given once reaches both doors.

Before, the definitions read ``LLMARCHIVE_SUBJECT_BASE_URL`` and
``LLMARCHIVE_SUBJECT_MODELS`` and the CLI ignored both, so every paid CLI
command of a dry run needed flags the README never showed.
"""
import shutil
from pathlib import Path

from llmarchive.cli import build_parser
from llmarchive.cli._options import subject_models

ROOT = Path(__file__).resolve().parent.parent


def test_the_endpoint_and_the_subject_models_file_set_once_reach_the_cli_and_dagster(tmp_path, monkeypatch):
    from assets.definitions_builder import default_resources

    models = tmp_path / "my_models.yaml"
    shutil.copy(ROOT / "subject_models.yaml", models)
    monkeypatch.setenv("LLMARCHIVE_SUBJECT_BASE_URL", "http://127.0.0.1:8089")
    monkeypatch.setenv("LLMARCHIVE_SUBJECT_MODELS", str(models))
    subject = default_resources()["subject"]                                   # the Dagster door
    assert subject.base_url == "http://127.0.0.1:8089" and subject.subject_models_file == str(models)
    for words in (["sweep"], ["bridge", "run"], ["instrument", "subject-fingerprint"], ["watch"]):   # the CLI door
        args = build_parser().parse_args(words)
        assert args.base_url == "http://127.0.0.1:8089", words
    assert subject_models(build_parser().parse_args(["sweep"])).source == models
    args = build_parser().parse_args(["sweep", "--base-url", "http://127.0.0.1:9", "--subject-models", "other.yaml"])
    assert args.base_url == "http://127.0.0.1:9" and args.subject_models == "other.yaml", "a flag overrides"


def test_without_the_settings_both_doors_take_the_public_api_and_the_repositorys_file(monkeypatch):
    from assets.definitions_builder import default_resources

    monkeypatch.delenv("LLMARCHIVE_SUBJECT_BASE_URL", raising=False)
    monkeypatch.delenv("LLMARCHIVE_SUBJECT_MODELS", raising=False)
    subject = default_resources()["subject"]
    assert subject.base_url is None and subject.subject_models_file is None
    assert build_parser().parse_args(["sweep"]).base_url is None
    assert subject_models(build_parser().parse_args(["sweep"])).source == ROOT / "subject_models.yaml"
