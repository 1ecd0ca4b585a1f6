"""`llmarchive publish`, `llmarchive release` and `llmarchive serve` from the command line."""
import json

import pytest
import yaml

from llmarchive.cli import main
from publish import PublishError
from llmarchive.archive import REPO_ROOT as REPO
from publish.pipeline.release import LICENCE_FILES, assemble
from tests import publish_helpers as ph

BUILD = "2026-12-03T00:00:00Z"


@pytest.fixture(scope="module")
def publish_template(publish_template):
    """The shared template, populated with runs and records once for this module (``archive`` copies it)."""
    ph.populate(publish_template)
    return publish_template


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "spec.md"
    path.write_text("# the specification (test copy)\n", encoding="utf-8")
    return path


def test_publish_command_builds_public_and_prints_every_file(archive, capsys):
    assert main(["--home", str(archive.home), "publish", "--build-time", BUILD]) == 0
    out = capsys.readouterr().out
    for name in ("stability.csv", "outcomes.csv", "coverage.csv", "open-lane/2026.jsonl", "croissant.json",
                 "archive.db", "index.html", "status.json"):
        assert name in out and (archive.public / name).exists()
    assert BUILD in out


def test_publish_command_reports_bad_input_as_an_error(archive, capsys):
    (archive.run_dir("c-2026-10-rcf-wording") / "measurement.json").write_text("{not json")
    assert main(["--home", str(archive.home), "publish"]) == 2
    assert "c-2026-10-rcf-wording/measurement.json: not valid JSON" in capsys.readouterr().err


def test_publish_metadata_option_writes_the_generated_file(tmp_path):
    from publish.datasette import meta as datasette_meta

    target = tmp_path / "metadata.yml"
    assert main(["publish", "--metadata", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == datasette_meta.render()


def test_release_assembles_the_public_payload_and_nothing_private(archive, spec, tmp_path, capsys):
    out = tmp_path / "release"
    assert main(["--home", str(archive.home), "release", "1.2.3", "--out", str(out), "--spec", str(spec),
                 "--date", "2027-01-31"]) == 0
    printed = capsys.readouterr().out
    assert "What stays a human decision" in printed.replace("what stays", "What stays") and "v1.2.3" in printed
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    for name in ("data/stability.csv", "data/outcomes.csv", "data/coverage.csv", "data/open-lane/2026.jsonl",
                 "data/croissant.json", "data/archive.db", "data/index.html", "data/status.json",
                 "data/render_manifest.json", "measure/schema.py", "measure/measurement.py", "publish/boundary/sealed.py",
                 "panels/instruction.py", "metadata.yml", "docs/method.md", "CITATION.cff", ".zenodo.json", "SPEC.md",
                 "RELEASE.json", "RELEASE_CHECKLIST.md", "LICENSE", "LICENSES/README.md", "LICENSES/CC-BY-4.0.txt",
                 "LICENSES/CC-BY-SA-4.0.txt", "publish/datasette/templates/table.html",
                 "publish/datasette/plugins/archive_limits.py"):
        assert name in files, name
    for name in ("LICENSE", "LICENSES/README.md", "LICENSES/CC-BY-4.0.txt", "LICENSES/CC-BY-SA-4.0.txt"):
        assert (out / name).read_bytes() == (REPO / name).read_bytes(), name
    assert any(f.startswith("measure/vectors/") for f in files)
    forbidden = [f for f in files if f.startswith(("panels/families", "tests/", "private/", "data/private"))
                 or (f.startswith("panels/") and f not in ("panels/__init__.py", "panels/instruction.py"))
                 or "budget" in f or "spend" in f or "/.git" in f or f.startswith(".git") or "__pycache__" in f]
    assert forbidden == []
    seed = (archive.panel_seed_file).read_text()
    for path in out.rglob("*"):
        if path.is_file():
            assert seed.encode() not in path.read_bytes(), path
    citation = yaml.safe_load((out / "CITATION.cff").read_text())
    assert citation["version"] == "1.2.3" and citation["date-released"] == "2027-01-31"
    zen = json.loads((out / ".zenodo.json").read_text())
    assert zen["version"] == "1.2.3" and zen["license"] == "cc-by-4.0"
    record = json.loads((out / "RELEASE.json").read_text())
    assert record["version"] == "1.2.3" and "data/stability.csv" in record["files"]


def test_release_refuses_an_existing_folder_a_private_folder_a_bad_version_and_no_spec(archive, spec, tmp_path):
    existing = tmp_path / "exists"
    existing.mkdir()
    with pytest.raises(PublishError, match="already exists"):
        assemble(archive, "1.0.0", existing, spec=spec)
    with pytest.raises(PublishError, match="inside the private folder"):
        assemble(archive, "1.0.0", archive.private / "rel", spec=spec)
    with pytest.raises(PublishError, match="MAJOR.MINOR.PATCH"):
        assemble(archive, "v1", tmp_path / "r1", spec=spec)
    with pytest.raises(PublishError, match="copy of the specification"):
        assemble(archive, "1.0.0", tmp_path / "r2", spec=tmp_path / "missing.md")
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


AGPL_3_SHA256 = "57c8ff33c9c0cfc3ef00e650a1cc910d7ee479a8bc509f6c9209a7c2a11399d6"   # the FSF's agpl-3.0.txt


def test_the_licence_texts_are_at_the_root_and_name_what_each_covers():
    import hashlib

    from publish.words import wording

    licence = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(licence).hexdigest() == AGPL_3_SHA256
    assert licence.startswith(b"                    GNU AFFERO GENERAL PUBLIC LICENSE\n")
    by = (REPO / "LICENSES" / "CC-BY-4.0.txt").read_text(encoding="utf-8")
    by_sa = (REPO / "LICENSES" / "CC-BY-SA-4.0.txt").read_text(encoding="utf-8")
    assert "Creative Commons Attribution 4.0 International Public License" in by
    assert "Creative Commons Attribution-ShareAlike 4.0 International Public License" in by_sa
    notes = (REPO / "LICENSES" / "README.md").read_text(encoding="utf-8")
    for part, (name, url) in wording.LICENCES.items():
        assert name in notes and url.rstrip("/") in notes, part
    for legalcode in ("https://creativecommons.org/licenses/by/4.0/legalcode",
                      "https://creativecommons.org/licenses/by-sa/4.0/legalcode"):
        assert legalcode in notes
    assert set(LICENCE_FILES) == {"LICENSE", "LICENSES/README.md", "LICENSES/CC-BY-4.0.txt",
                                  "LICENSES/CC-BY-SA-4.0.txt"}


@pytest.mark.parametrize("missing", LICENCE_FILES)
def test_release_refuses_naming_a_missing_licence_file(archive, spec, tmp_path, missing):
    from publish.pipeline.release import CODE_FILES

    repo = tmp_path / "repo"
    for name in CODE_FILES:
        if name != missing:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_bytes((REPO / name).read_bytes())
    out = tmp_path / "release"
    with pytest.raises(PublishError, match=f"licence file {missing}, which is missing"):
        assemble(archive, "1.0.0", out, spec=spec, repo=repo)
    assert not out.exists()


def test_citation_files_at_the_root_are_valid_and_carry_the_licences():
    from llmarchive.archive import REPO_ROOT as REPO

    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["authors"] and citation["title"]
    assert set(citation["license"]) == {"CC-BY-4.0", "CC-BY-SA-4.0", "AGPL-3.0-only"}
    zen = json.loads((REPO / ".zenodo.json").read_text())
    assert zen["upload_type"] == "dataset" and zen["creators"] and zen["license"] == "cc-by-4.0"
    assert "AGPL-3.0" in zen["notes"] and "CC-BY-SA-4.0" in zen["notes"]


def test_serve_prints_a_read_only_datasette_command(archive, capsys):
    assert main(["--home", str(archive.home), "serve", "--print-command"]) == 2
    assert "run `llmarchive publish` first" in capsys.readouterr().err
    main(["--home", str(archive.home), "publish", "--build-time", BUILD])
    capsys.readouterr()
    assert main(["--home", str(archive.home), "serve", "--print-command", "--port", "8123"]) == 0
    command = capsys.readouterr().out
    assert "-m datasette serve -i" in command and "archive.db" in command and "--port 8123" in command
    assert "--setting sql_time_limit_ms 1000" in command and "--setting max_returned_rows 1000" in command
    assert "--host 127.0.0.1" in command and "metadata.yml" in command and "--static site:" in command


def test_an_edited_protocol_file_stops_publication_with_a_clear_error(archive, capsys):
    file = archive.protocol_file("sunk_cost_fallacy__order__v0")
    protocol = json.loads(file.read_text())
    protocol["panel"][0]["versions"]["A"] += " (edited)"
    file.write_text(json.dumps(protocol))
    assert main(["--home", str(archive.home), "publish"]) == 2
    err = capsys.readouterr().err
    assert "sunk_cost_fallacy__order__v0" in err and "panel_sha256 does not match" in err
    assert "(edited)" not in err
