"""``pip install`` of this project without extras is the outsider's kit, installed with no compiler.

A fresh virtual environment (``python -m venv``) gets the project from a
copy of its sources, non-editable, without extras, with ``CC`` and ``CXX``
pointing at ``false`` — so a dependency that had to be compiled (llama.cpp)
would fail the install.  In it, with nothing of the repository on the
import path: the archive side (Dagster, Datasette, sqlite-utils,
OpenTimestamps, llama.cpp) is absent; ``comparison run`` and ``comparison
submit`` file a simulated reader's run over real HTTP; ``panels verify`` and
``verify --public`` check a folder the archive published; and every
command that needs the ``archive`` extra says so in one line and exits 2,
having written nothing.  The install's wall time and size are printed
(``pytest -s``) for the record.
"""
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import NamedTuple

import pytest

from llmarchive.cli import _extras, build_parser, lease, main
from llmarchive.comparison import ReaderServer
from panels import readers
from publish import publish_all
from tests import publish_helpers as ph

# A fresh venv and a pip install (10-30 s with a warm pip cache), then the outsider's commands in it.
SLOW = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
BUILD = "2026-12-03T00:00:00Z"
OPEN = "risky_choice_framing__wording__v0"
OPEN_RUN = "c-2026-11-rcf-wording"
INSTALL_LINE = "pip install 'llm-archive[archive]'"
# What the archive extra brings, by import name: none of it may be importable in the light install.
ARCHIVE_SIDE = ("dagster", "dagster_webserver", "datasette", "sqlite_utils", "opentimestamps", "otsclient",
                "llama_cpp")
# Every distribution the light install may hold (lower case, '-' for '_'): the five direct dependencies, what
# they pull in, pip and setuptools.  A new one is a choice to make on purpose, here and in pyproject.toml.
LIGHT_DISTRIBUTIONS = {
    "llm-archive", "pip", "setuptools",
    "httpx", "anyio", "certifi", "h11", "httpcore", "idna", "sniffio", "typing-extensions",
    "jinja2", "markupsafe",
    "pyyaml",
    "icu4py",          # ICU's confusable skeletons: a submission's names are compared as a reader sees them
    "rich", "markdown-it-py", "mdurl", "pygments",
}

# The kinds of file the packages hold; anything else in a package folder is not product.
SHIPPED_SUFFIXES = {".py", ".html", ".css", ".js", ".json", ".jsonl"}


class Light(NamedTuple):
    python: Path
    cli: Path
    env: dict
    seconds: float
    megabytes: float


def _build_inputs() -> list[str]:
    """What setuptools builds the project from: pyproject's packages and modules, its readme and licence."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tool = config["tool"]["setuptools"]
    packages = [pattern.rstrip("*") for pattern in tool["packages"]["find"]["include"]]
    modules = [f"{name}.py" for name in tool.get("py-modules", [])]
    return ["pyproject.toml", config["project"]["readme"], "LICENSE", *packages, *modules]


def _shipped(package: Path) -> set[str]:
    """The files of a package folder a build must carry, by path inside it (bytecode caches left out)."""
    return {f.relative_to(package).as_posix() for f in package.rglob("*")
            if f.is_file() and "__pycache__" not in f.parts and f.suffix in SHIPPED_SUFFIXES}


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink()) / 2 ** 20


@pytest.fixture(scope="module")
def light(tmp_path_factory) -> Light:
    """The light install in a fresh venv: timed from ``python -m venv`` to the end of ``pip install``."""
    root = tmp_path_factory.mktemp("light")
    source = root / "source"
    for name in _build_inputs():
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    venv = root / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(CC="/bin/false", CXX="/bin/false", PIP_DISABLE_PIP_VERSION_CHECK="1")
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(source)],
                             env=env, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    megabytes = _size_mb(venv)
    print(f"\nlight install: {seconds:.1f} s from `python -m venv` to the end of `pip install` (no extras), "
          f"venv {megabytes:.0f} MB")
    env.pop("CC"), env.pop("CXX")
    return Light(venv / "bin" / "python", venv / "bin" / "llmarchive", env, seconds, megabytes)


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> tuple[Path, Path]:
    """(an archive home with the twelve v0 protocols admitted, a copy of what it published) — made here."""
    template = ph.template_archive(tmp_path_factory.mktemp("template") / "home")
    paths = ph.fresh_archive(template, tmp_path_factory.mktemp("archive") / "home")
    ph.populate(paths)
    publish_all(paths, build_time=BUILD)
    outsider = tmp_path_factory.mktemp("outsider")
    shutil.copytree(paths.public, outsider / "public")
    return paths.home, outsider / "public"


def llmarchive(light: Light, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The light install's ``llmarchive``, run outside the repository with its own empty home."""
    env = {**light.env, "LLMARCHIVE_HOME": str(cwd / "home"), "NO_PROXY": "127.0.0.1"}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([str(light.cli), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@SLOW
def test_the_light_install_holds_the_outsiders_kit_and_none_of_the_archive_side(light, tmp_path):
    found = subprocess.run(
        [str(light.python), "-c", "import importlib.util, sys; "
                                  "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))",
         *ARCHIVE_SIDE], cwd=tmp_path, env=light.env, capture_output=True, text=True, check=True)
    assert found.stdout.split() == []
    listed = subprocess.run([str(light.python), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path,
                            env=light.env, capture_output=True, text=True, check=True)
    names = {line.split("==")[0].lower().replace("_", "-") for line in listed.stdout.split()}
    assert names - LIGHT_DISTRIBUTIONS == set(), "the light install pulled in more than the outsider's kit"
    # The package is the installed copy, not this repository.
    where = subprocess.run([str(light.python), "-c", "import llmarchive; print(llmarchive.__file__)"],
                           cwd=tmp_path, env=light.env, capture_output=True, text=True, check=True)
    assert "site-packages" in where.stdout and str(ROOT) not in where.stdout


@SLOW
def test_a_non_editable_install_ships_every_file_the_packages_read(light):
    # Templates, static files, the Datasette plugins and templates (handed to `datasette serve` by folder),
    # the golden vectors, the sample run: a file missing from the wheel breaks only a non-editable install.
    site_packages = next(light.python.parent.parent.glob("lib/python*/site-packages"))
    for package in [name for name in _build_inputs() if (ROOT / name).is_dir()]:
        assert _shipped(site_packages / package) == _shipped(ROOT / package), package


@SLOW
def test_comparison_run_shows_its_help_on_the_light_install(light, tmp_path):
    result = llmarchive(light, tmp_path, "comparison", "run", "--help")
    assert result.returncode == 0, result.stderr
    assert "--panel" in result.stdout and "--base-url" in result.stdout


@SLOW
def test_panels_verify_checks_a_published_panel_on_the_light_install(light, published):
    public = published[1]
    result = llmarchive(light, public.parent, "panels", "verify", f"public/panels/{OPEN}.json")
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stdout.startswith(f"OK {OPEN}: panel_sha256 ")


@SLOW
def test_verify_public_recomputes_a_published_measurement_on_the_light_install(light, published):
    public = published[1]
    result = llmarchive(light, public.parent, "verify", "--public", "public", OPEN_RUN)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert f"OK {OPEN_RUN}: " in result.stdout and "every field recomputes exactly" in result.stdout


@SLOW
def test_comparison_run_and_submit_file_a_known_answer_on_the_light_install(light, published, tmp_path):
    home, public = published
    archive = tmp_path / "archive"
    shutil.copytree(home, archive)
    panel = public / "panels" / f"{OPEN}.json"
    model = readers.simulated_model_id(readers.FRAMING_SENSITIVE)
    with ReaderServer([panel]) as server:
        ran = llmarchive(light, tmp_path, "comparison", "run", "--panel", str(panel), "--base-url", server.url,
                         "--model", model, "--out", "submission.jsonl", "--submitted-by", "a light install")
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    # Filed the day it ran (a run dates itself by the clock; `submit` would take --date, `run` has none).
    filed = llmarchive(light, tmp_path, "--home", str(archive), "comparison", "submit", "submission.jsonl",
                       "--known-answer")
    assert filed.returncode == 0, (filed.stdout, filed.stderr)
    assert model in filed.stdout


@SLOW
def test_comparison_import_without_inspect_ai_says_what_to_install_in_one_line(light, published, tmp_path):
    # The light install leaves the harness to the outsider: its importer asks for it by name, writing nothing.
    (tmp_path / "run.eval").write_bytes(b"not read: the harness that reads it is missing")
    result = llmarchive(light, tmp_path, "comparison", "import", "run.eval", "--panel",
                        str(published[1] / "panels" / f"{OPEN}.json"), "--out", "submission.jsonl")
    assert result.returncode == 2, (result.stdout, result.stderr)
    [line] = result.stderr.splitlines()
    assert "pip install inspect-ai" in line and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.eval"]


@SLOW
@pytest.mark.parametrize("argv, words", [
    (["publish"], "publish"),
    (["serve"], "serve"),
    (["prereg", "stamp"], "prereg stamp"),
    (["instrument", "fingerprint"], "instrument fingerprint"),
    (["open-weights"], "open-weights"),
    (["run", OPEN, "--subject", "reference"], "run"),
])
def test_a_command_of_the_archive_side_names_the_extra_in_one_line_and_writes_nothing(light, tmp_path, argv, words):
    result = llmarchive(light, tmp_path, *argv)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"llmarchive {words} needs the archive extra (") and line.endswith(f"): {INSTALL_LINE}")
    assert not (tmp_path / "home").exists()        # refused before it started: no home, no alarm recorded


# --------------------------------------------------------------------------- the guard itself, in-process


def test_a_command_whose_archive_module_is_missing_is_refused_before_it_starts(monkeypatch, tmp_path, capsys):
    absent = {"sqlite_utils"}
    real = _extras.importlib.util.find_spec
    monkeypatch.setattr(_extras.importlib.util, "find_spec", lambda name: None if name in absent else real(name))
    assert main(["--home", str(tmp_path / "home"), "publish"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"llmarchive publish needs the archive extra (the build of archive.db): {INSTALL_LINE}"]
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("missing, line", [
    ("llama_cpp", f"llmarchive lease needs the archive extra (the embedded reference model): {INSTALL_LINE}"),
    ("opentimestamps.core.op", f"llmarchive lease needs the archive extra (the pre-registration proofs): "
                               f"{INSTALL_LINE}"),
    ("inspect_ai.log", "llmarchive lease needs inspect-ai: pip install inspect-ai"),
])
def test_a_command_that_reaches_a_missing_extra_module_says_what_to_install_in_one_line(monkeypatch, tmp_path,
                                                                                          capsys, missing, line):
    def reaches(args):
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)

    monkeypatch.setattr(lease, "run", reaches)
    assert main(["--home", str(tmp_path), "lease"]) == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_a_missing_module_no_extra_brings_keeps_its_traceback(monkeypatch, tmp_path):
    # A module of this package gone missing is a fault: an install hint would send the reader the wrong way.
    def reaches(args):
        raise ModuleNotFoundError("No module named 'llmarchive.nothing'", name="llmarchive.nothing")

    monkeypatch.setattr(lease, "run", reaches)
    with pytest.raises(ModuleNotFoundError):
        main(["--home", str(tmp_path), "lease"])


def test_the_command_is_named_by_its_subcommands_whatever_options_come_first():
    parser = build_parser()
    assert _extras.command_words(parser, ["--home", "h", "prereg", "stamp", "M"]) == ("prereg", "stamp")
    assert _extras.command_words(parser, ["run", OPEN, "--subject", "reference"]) == ("run",)
    assert _extras.command_words(parser, ["--version"]) == ()
