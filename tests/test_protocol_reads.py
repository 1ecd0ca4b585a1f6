"""Reading a protocol is pure and checked once (issue 45).

A read never builds (building is ``llmarchive panels build``'s and the
``protocols`` asset's), and a process checks each protocol file's two hashes
once per distinct bytes: a second read of the same bytes skips the check, an
edit — even one that keeps the size and the modification time — is caught.
"""
import os

import pytest

from llmarchive.protocols import registry
from panels.build import all_protocol_ids

PID = "risky_choice_framing__wording__v0"


def test_reading_an_unbuilt_protocol_names_it_and_the_build_command_and_builds_nothing(paths):
    assert registry.sweep_protocols(paths) == [], "nothing admitted: nothing to sweep, and nothing to read"
    for read in (lambda: registry.load_protocol(paths, PID), lambda: registry.load_all(paths),
                 lambda: registry.list_protocols(paths)):
        with pytest.raises(registry.ProtocolNotBuilt) as refused:
            read()
        message = str(refused.value)
        assert "\n" not in message and "is not built" in message and "`llmarchive panels build`" in message
        assert all_protocol_ids()[0] in message or PID in message
    assert not paths.protocols.exists() or not list(paths.protocols.glob("*.json"))


def test_a_second_read_of_the_same_bytes_does_not_check_the_hashes_again(built, monkeypatch):
    checked: list[str] = []
    real = registry.protocol_hash

    def counted(protocol):
        checked.append(protocol["protocol_id"])
        return real(protocol)

    monkeypatch.setattr(registry, "protocol_hash", counted)
    registry.clear_memo()
    first = registry.load_all(built)
    again = registry.load_all(built)
    registry.load_protocol(built, PID)
    assert sorted(checked) == sorted(all_protocol_ids())
    assert first == again and first[0] is not again[0], "each read parses its own copy"


def test_an_edit_keeping_size_and_mtime_after_a_good_read_is_still_refused(built):
    registry.load_protocol(built, PID)            # checked and remembered
    file = built.protocol_file(PID)
    before = file.stat()
    raw = file.read_bytes()
    at = raw.index(b'"A": "') + 6
    edited = raw[:at] + (b"X" if raw[at:at + 1] != b"X" else b"Y") + raw[at + 1:]
    file.write_bytes(edited)
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert file.stat().st_size == before.st_size and file.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(registry.ProtocolFileError, match="panel_sha256 does not match"):
        registry.load_protocol(built, PID)
