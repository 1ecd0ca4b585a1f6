"""The parsed copy of a YAML file (llmarchive.archive.yamlfile): same bytes, same document, no yaml import;
any edit parsed and validated again."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llmarchive.archive import yamlfile
from llmarchive.archive.cadence import CADENCE_FILE, CadenceError, load_cadence

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "yaml-cache"
    monkeypatch.setenv(yamlfile.CACHE_ENV, str(folder))
    return folder


def test_a_cached_cadence_is_the_document_yaml_gives_and_is_read_without_importing_yaml(cache, tmp_path):
    file = tmp_path / "cadence.yaml"
    file.write_bytes(CADENCE_FILE.read_bytes())
    first = load_cadence(file)
    assert len(list(cache.glob("*.json"))) == 1
    assert first.raw == yaml.safe_load(file.read_text(encoding="utf-8"))
    code = ("import sys; from llmarchive.archive.cadence import load_cadence; c = load_cadence(sys.argv[1]); "
            "print(int('yaml' in sys.modules), c.every('deadman_alert').total_seconds())")
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{yamlfile.CACHE_ENV: str(cache)})
    out = subprocess.run([sys.executable, "-c", code, str(file)], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", str(36 * 3600.0)]


def test_an_edited_cadence_is_parsed_and_refused_again_though_its_old_bytes_were_cached(cache, tmp_path):
    file = tmp_path / "cadence.yaml"
    file.write_bytes(CADENCE_FILE.read_bytes())
    load_cadence(file)
    file.write_text(CADENCE_FILE.read_text(encoding="utf-8").replace("deadman_alert: 36h", "deadman_alert: 2w"),
                    encoding="utf-8")
    with pytest.raises(CadenceError, match="deadman_alert"):
        load_cadence(file)


def test_a_cached_copy_is_validated_like_a_parse_a_tampered_copy_is_refused_by_the_checks(cache, tmp_path):
    file = tmp_path / "cadence.yaml"
    file.write_bytes(CADENCE_FILE.read_bytes())
    load_cadence(file)
    (kept,) = cache.glob("*.json")
    body = json.loads(kept.read_text(encoding="utf-8"))
    body["document"]["deadman_alert"] = "36 hours"
    kept.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(CadenceError, match="deadman_alert"):
        load_cadence(file)


def test_a_document_json_would_change_is_not_cached_and_a_broken_cache_is_parsed_past(cache, tmp_path):
    dated = tmp_path / "dated.yaml"
    dated.write_text("when: 2026-12-07\n1: one\n", encoding="utf-8")
    assert yamlfile.read_yaml(dated, ValueError) == yaml.safe_load(dated.read_text(encoding="utf-8"))
    assert not list(cache.glob("*.json"))
    plain = tmp_path / "plain.yaml"
    plain.write_text("a: [1, 2.5, true, null, x]\n", encoding="utf-8")
    yamlfile.read_yaml(plain, ValueError)
    (kept,) = cache.glob("*.json")
    kept.write_text("{not json", encoding="utf-8")
    assert yamlfile.read_yaml(plain, ValueError) == {"a": [1, 2.5, True, None, "x"]}
