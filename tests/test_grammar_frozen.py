"""The decision grammars are frozen byte for byte (method §13.6).

``extractor_sha`` hashes the grammar's source files, so every run records
exactly which extraction rule scored it.  An edit to ``measure/grammar.py`` —
even one that keeps its behaviour, such as a new exception class — changes
that hash and breaks the citation chain of every measurement scored by
grammar version 1; a new rule is a new grammar version in a new file.
"""
import hashlib
from pathlib import Path

MEASURE = Path(__file__).resolve().parent.parent / "measure"
FROZEN = {
    "grammar.py": "d1ecf0c5fc49b8d715d2f49c996488e46818a2bfaf3f91befa03dee0021fb7bc",
    "grammar_v2.py": "fc06de7e28ad69b071c0a9671ec85a4271d4149b69d4d78e69b19b00578b64e7",
}


def test_the_grammar_sources_are_byte_for_byte_what_was_frozen():
    for name, digest in FROZEN.items():
        assert hashlib.sha256((MEASURE / name).read_bytes()).hexdigest() == digest, \
            f"measure/{name} changed: a new extraction rule is a new grammar version, never an edit"

