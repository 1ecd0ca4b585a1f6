"""One error base: what the archive raises for bad input or state is an ArchiveError, shown as one line."""
import importlib
import inspect
import pkgutil

import pytest

import llmarchive
import measure
import panels
import publish
from llmarchive.cli import main
from llmarchive.archive import ArchivePaths
from llmarchive.succession import load_subject_models
from llmarchive.subjects.anthropic import AnthropicSubject
from llmarchive.subjects import SubjectError
from llmarchive.subjects.http import RetryPolicy
from llmarchive.schedule.watch import watch
from measure.errors import ArchiveError
from tests.fake_provider import Fault, FakeProvider

KEY = "fake-credential-errors-test"
ONE_ATTEMPT = RetryPolicy(max_attempts=1, base_delay_s=0.0, max_delay_s=0.0)


def _modules():
    for package in (measure, panels, llmarchive, publish):
        yield package
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):
                yield importlib.import_module(info.name)


def test_every_public_error_class_is_an_archive_error_and_keeps_its_builtin_base():
    """Private control-flow exceptions (``_Fail``, ``_Retry``) are the only ones allowed outside the base."""
    outside, no_builtin = [], []
    for module in _modules():
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__
                    and not name.startswith("_")):
                if not issubclass(value, ArchiveError):
                    outside.append(f"{module.__name__}.{name}")
                elif value is not ArchiveError and value.__mro__[1:-2] == (ArchiveError,):
                    no_builtin.append(f"{module.__name__}.{name}")
    assert outside == [], f"error classes outside ArchiveError: {outside}"
    assert len(no_builtin) < 10, f"most error classes keep a builtin base for old callers: {no_builtin}"


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with FakeProvider(require_key=KEY, models=["claude-sonnet-5"]) as server:
        yield server


def test_a_provider_error_answer_carries_its_http_status_as_a_field(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-credential-rejected")
    subject = AnthropicSubject("claude-test-1", 64, base_url=fake.base_url, retry=ONE_ATTEMPT, timeout_s=2.0)
    with pytest.raises(SubjectError) as chat:
        subject.call("x")
    assert chat.value.status == 401
    with pytest.raises(SubjectError) as listing:
        subject.list_models()
    assert listing.value.status == 401


def test_a_local_subject_error_has_no_status(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SubjectError) as err:
        AnthropicSubject("claude-x", 64, base_url="http://127.0.0.1:9")
    assert err.value.status is None


def test_models_list_that_keeps_failing_has_no_status_of_its_own(fake):
    fake.models_script.append(Fault.status(503))
    subject = AnthropicSubject("claude-test-1", 64, base_url=fake.base_url, retry=ONE_ATTEMPT, timeout_s=2.0)
    with pytest.raises(SubjectError, match="still failing") as err:
        subject.list_models()
    assert err.value.status is None


@pytest.mark.parametrize("status, condition", [(403, "provider_refused_request"),
                                               (None, "provider_unreachable")])
def test_the_model_watch_classifies_a_failed_list_by_the_status_field_not_the_wording(archive_home, status,
                                                                                     condition):
    paths = ArchivePaths.from_env().ensure()

    def refused() -> list[dict]:
        raise SubjectError("the models list could not be read (wording without a status code)", status=status)

    out = watch(paths, "2026-11-03", load_subject_models(), fetch=refused)
    skip = [r for r in out.written if r["record_type"] == "skip"][0]
    assert skip["condition"] == condition


def test_the_cli_prints_a_library_error_as_one_line_and_exits_2(archive_home, capsys):
    assert main(["panels", "show", "no_such__protocol__v0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert "no_such__protocol__v0" in err


def test_a_bad_date_is_refused_before_it_names_a_file(archive_home, capsys):
    assert main(["prereg", "manifest", "--date", "../../escape"]) == 2
    assert "--date must be YYYY-MM-DD" in capsys.readouterr().err
