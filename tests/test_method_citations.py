"""The code cites the project's own method document, and every citation resolves.

A citation is ``method §N`` or ``method §N.M`` (several may follow one
``method``: ``method §6.3, §6.5``).  A section exists when ``docs/method.md``
has a heading that starts with that number.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METHOD = ROOT / "docs" / "method.md"
SOURCES = ("measure", "panels", "llmarchive", "publish", "assets", "bench", "tests")
TOP_FILES = ("definitions.py", "README.md", "cadence.yaml", "subject_models.yaml", "metadata.yml", "Makefile")
CITATION = re.compile(r"method (§\s?\d+(?:\.\d+)*(?:(?:,| and| or|/)\s*§?\s?\d+(?:\.\d+)*)*)")
SECTION = re.compile(r"\d+(?:\.\d+)*")
HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)


def _files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES if (ROOT / name).exists()]
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".md", ".yml", ".yaml", ".html", ".j2", ".js", ".css"} and path.is_file():
                files.append(path)
    return files


def _sections() -> set[str]:
    return set(HEADING.findall(METHOD.read_text(encoding="utf-8")))


def cited_sections(text: str) -> list[str]:
    found = []
    for match in CITATION.finditer(text):
        found.extend(SECTION.findall(match.group(1)))
    return found


def test_method_document_has_numbered_sections_for_every_subject():
    sections = _sections()
    for number in ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13"):
        assert number in sections, f"docs/method.md has no section {number}"
    assert {"3.3", "3.4", "4.3", "6.6", "6.7", "6.8", "7.4", "9.1", "10.4"} <= sections


def test_citation_parser_reads_lists_of_sections():
    assert cited_sections("see method §6.3, §6.5 and §7") == ["6.3", "6.5", "7"]
    assert cited_sections("no citation here, SPEC-free") == []


def test_every_method_citation_in_the_code_names_an_existing_section():
    sections = _sections()
    missing = []
    count = 0
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number in cited_sections(text):
            count += 1
            if number not in sections:
                missing.append(f"{path.relative_to(ROOT)} cites method §{number}")
    assert count > 50, f"only {count} citations of docs/method.md found; the code should cite it"
    assert not missing, "citations of sections docs/method.md does not have:\n" + "\n".join(missing)


def test_code_no_longer_cites_a_document_the_repository_does_not_have():
    offenders = []
    for path in _files():
        if path.name == Path(__file__).name:
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if re.search(r"SPEC\s?§", line):
                offenders.append(f"{path.relative_to(ROOT)}:{lineno}")
    assert not offenders, "cite docs/method.md (method §n) instead of SPEC:\n" + "\n".join(offenders[:20])
