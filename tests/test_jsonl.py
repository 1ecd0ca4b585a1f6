"""The one JSONL reader (measure/jsonl.py): each policy on real files, the caps at their edges, the digest.

Three readers used to read JSONL lines with three error policies; now one
reader reads every line and the policy is a named value: :data:`STRICT`
(a chained log: the first bad line stops the reading, a torn last line was
never reported written), :data:`COLLECT` (an outsider's file: every problem
is kept and the reading goes on, so the sender hears them all at once) and
:data:`REFUSE` (what is published or verified: the first problem refuses the
file, a torn last line included).  The last test keeps the callers on it,
so a loop of a module's own cannot come back.
"""
import ast
import hashlib
import io
from pathlib import Path

import pytest

from measure import jsonl
from measure.jsonl import COLLECT, REFUSE, STRICT, JsonlError, JsonlReader

ROOT = Path(__file__).resolve().parent.parent
LINE = b'{"a":1}\n'          # 8 bytes


def written(tmp_path: Path, data: bytes, name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def read(path: Path, policy: jsonl.Policy, **options) -> tuple[list[dict], JsonlReader]:
    reader = JsonlReader(policy, str(path), **options)
    with open(path, "rb") as fh:
        return reader.read(fh), reader


def refused(path: Path, policy: jsonl.Policy, **options) -> JsonlError:
    with pytest.raises(JsonlError) as caught:
        read(path, policy, **options)
    return caught.value


def kinds(reader: JsonlReader) -> list[tuple[int, str]]:
    return [(p.number, p.kind) for p in reader.problems]


# --------------------------------------------------------------------------
# STRICT: a chained log
# --------------------------------------------------------------------------

def test_strict_stops_at_the_first_bad_line_naming_the_file_and_the_line_and_reads_no_further(tmp_path):
    head = b'{"a":1}\n\n{"a":\n'
    path = written(tmp_path, head + b'also bad\n{"a":2}\n')
    reader = JsonlReader(STRICT, str(path))
    with open(path, "rb") as fh:
        lines = reader.lines(fh)
        assert next(lines).record == {"a": 1}
        with pytest.raises(JsonlError) as caught:
            next(lines)
        assert fh.tell() == len(head), "nothing after the bad line was read"
    assert str(caught.value).startswith(f"{path}, line 3: not valid JSON (")
    assert (caught.value.problem.number, caught.value.problem.kind) == (3, jsonl.NOT_JSON)


@pytest.mark.parametrize("bad, words", [
    (b"[1, 2]\n", "line 2: a record must be a JSON object"),
    (b'"text"\n', "line 2: a record must be a JSON object"),
    (b"{\"a\": \xff}\n", "not UTF-8 text (line 2, byte 14)"),
])
def test_strict_refuses_a_line_that_is_no_object_or_no_text_naming_file_and_line(tmp_path, bad, words):
    path = written(tmp_path, LINE + bad + LINE)
    message = str(refused(path, STRICT))
    assert message.startswith(str(path)) and words in message, message


@pytest.mark.parametrize("tail", [b'{"a":2}', b'{"a":', b"\xff\xfe"])
def test_strict_passes_over_a_torn_last_line_whatever_it_holds(tmp_path, tail):
    path = written(tmp_path, LINE + tail)
    records, reader = read(path, STRICT)
    assert records == [{"a": 1}]
    assert reader.size == len(LINE + tail), "the torn bytes were read (and counted), not kept"


def test_strict_skips_blank_lines_and_keeps_order(tmp_path):
    path = written(tmp_path, b'{"n":1}\n\n   \n{"n":2}\r\n{"n":3}\n')
    assert read(path, STRICT)[0] == [{"n": 1}, {"n": 2}, {"n": 3}]


# --------------------------------------------------------------------------
# COLLECT: an outsider's file
# --------------------------------------------------------------------------

def test_collect_keeps_every_problem_in_file_order_and_goes_on_to_the_end(tmp_path):
    long_line = b'{"long":"' + b"x" * 100 + b'"}\n'
    data = (b'{"ok":1}\n'                          # 1
            b"not json\n"                          # 2
            b"[1, 2]\n"                            # 3
            b'{"deep":{"a":{"b":1}}}\n'            # 4 (three levels; two allowed)
            + long_line +                          # 5 (110 bytes; 64 allowed)
            b'{"ok":2}\n'                          # 6
            b'{"cut":')                            # 7 (the file ends inside it)
    path = written(tmp_path, data)
    records, reader = read(path, COLLECT, max_depth=2, max_line_bytes=64)
    assert records == [{"ok": 1}, {"ok": 2}]
    assert kinds(reader) == [(2, jsonl.NOT_JSON), (3, jsonl.NOT_OBJECT), (4, jsonl.OVER_DEPTH),
                             (5, jsonl.TOO_LONG), (7, jsonl.CUT_OFF)]
    assert reader.stopped is None and reader.size == len(data)
    said = [reader.message(p) for p in reader.problems]
    assert said[0].startswith("line 2 is not JSON (")
    assert said[1] == "line 3 is not a JSON object"
    assert said[2] == "line 4.deep is nested more than 2 levels deep (not read further)"
    assert said[3] == f"line 5 is {len(long_line)} bytes; one line may be at most 64 bytes"
    assert said[4].startswith("line 7 is cut off: the file ends in the middle of a record")


def test_collect_reads_a_torn_last_line_that_holds_a_whole_record(tmp_path):
    path = written(tmp_path, LINE + b'{"a":2}')
    records, reader = read(path, COLLECT)
    assert records == [{"a": 1}, {"a": 2}] and reader.problems == []


def test_collect_keeps_a_line_too_deep_for_the_parser_and_goes_on(tmp_path):
    deep = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    path = written(tmp_path, deep + LINE)
    records, reader = read(path, COLLECT)
    assert records == [{"a": 1}] and kinds(reader) == [(1, jsonl.TOO_DEEP)]


def test_collect_stops_at_bytes_that_are_not_utf8_and_reads_no_further(tmp_path):
    first, bad = b'{"ok":1}\n', b"bad \xff line\n"
    path = written(tmp_path, first + bad + b'{"ok":2}\n')
    records, reader = read(path, COLLECT)
    assert records == [{"ok": 1}]
    assert kinds(reader) == [(2, jsonl.NOT_UTF8)] and reader.stopped.kind == jsonl.NOT_UTF8
    assert reader.stopped.offset == len(first) + 4, "the offending byte's offset in the file"
    assert reader.size == len(first + bad)
    assert reader.message(reader.stopped) == "the file is not UTF-8 text (byte 13, line 2)"


def test_collect_stops_at_a_file_too_big_and_at_too_many_records(tmp_path):
    path = written(tmp_path, LINE * 4)
    records, reader = read(path, COLLECT, max_bytes=20)
    assert records == [{"a": 1}] * 2 and kinds(reader) == [(3, jsonl.TOO_BIG)] and reader.size == 24
    records, reader = read(path, COLLECT, max_records=2)
    assert records == [{"a": 1}] * 2 and kinds(reader) == [(3, jsonl.TOO_MANY)] and reader.size == 24
    assert reader.message(reader.stopped) == "the file holds more than 2 records"


# --------------------------------------------------------------------------
# REFUSE: a file to publish or to verify
# --------------------------------------------------------------------------

def test_refuse_refuses_a_torn_last_line_naming_the_file_even_when_it_holds_a_whole_record(tmp_path):
    path = written(tmp_path, LINE + b'{"a":2}', "trials.jsonl")
    error = refused(path, REFUSE)
    assert str(error) == f"{path}, line 2: the last line has no newline (truncated?)"
    assert error.problem.kind == jsonl.TORN
    # The same bytes as a chained log: the torn line was never reported written, so it is passed over.
    assert read(path, STRICT)[0] == [{"a": 1}]


def test_refuse_names_the_file_and_the_line_of_a_cut_off_or_bad_line(tmp_path):
    cut = written(tmp_path, LINE + b'{"a":', "cut.jsonl")
    message = str(refused(cut, REFUSE))
    assert message.startswith(f"{cut}, line 2: not valid JSON (") and "ends in the middle of this line" in message
    bad = written(tmp_path, LINE + b"nope\n" + LINE, "bad.jsonl")
    error = refused(bad, REFUSE)
    assert str(error).startswith(f"{bad}, line 2: not valid JSON (") and error.problem.kind == jsonl.NOT_JSON


def test_refuse_with_a_dropped_torn_tail_reads_like_a_chained_log(tmp_path):
    path = written(tmp_path, LINE + b'{"a":')
    assert read(path, REFUSE, torn_tail=jsonl.DROP)[0] == [{"a": 1}]


# --------------------------------------------------------------------------
# caps at their edges: the limit passes, one more is refused
# --------------------------------------------------------------------------

def test_max_bytes_lets_a_file_of_exactly_the_limit_through_and_refuses_one_byte_more(tmp_path):
    path = written(tmp_path, LINE * 3)                   # 24 bytes
    assert len(read(path, REFUSE, max_bytes=24)[0]) == 3
    error = refused(path, REFUSE, max_bytes=23)
    assert error.problem.kind == jsonl.TOO_BIG and str(error) == f"{path}: more than 23 bytes"


def test_max_line_bytes_caps_a_lines_bytes_before_its_newline(tmp_path):
    line = b'{"a":"' + b"x" * 20 + b'"}'                   # 28 bytes, then its newline
    path = written(tmp_path, line + b"\n" + LINE)
    assert len(read(path, REFUSE, max_line_bytes=28)[0]) == 2
    error = refused(path, REFUSE, max_line_bytes=27)
    assert error.problem.kind == jsonl.TOO_LONG and error.problem.number == 1
    assert str(error) == f"{path}, line 1 is 29 bytes; a line may be at most 27 bytes"
    # The same for a last line without its newline (read, under COLLECT).
    torn = written(tmp_path, LINE + line, "torn.jsonl")
    assert kinds(read(torn, COLLECT, max_line_bytes=28)[1]) == []
    assert kinds(read(torn, COLLECT, max_line_bytes=27)[1]) == [(2, jsonl.TOO_LONG)]


def test_max_records_lets_exactly_the_limit_through_and_blank_lines_do_not_count(tmp_path):
    path = written(tmp_path, LINE + b"\n\n" + LINE + b"\n")
    assert len(read(path, REFUSE, max_records=2)[0]) == 2
    more = written(tmp_path, LINE * 3, "more.jsonl")
    error = refused(more, REFUSE, max_records=2)
    assert error.problem.kind == jsonl.TOO_MANY and error.problem.number == 3


def test_max_depth_lets_exactly_the_limit_through_and_counts_no_bracket_inside_a_string(tmp_path):
    path = written(tmp_path, b'{"a":{"b":[1]}}\n')                # three levels
    assert read(path, REFUSE, max_depth=3)[0] == [{"a": {"b": [1]}}]
    error = refused(path, REFUSE, max_depth=2)
    assert error.problem.kind == jsonl.OVER_DEPTH and error.problem.key == "a"
    assert str(error) == f"{path}, line 1.a is nested more than 2 levels deep"
    strings = written(tmp_path, b'{"a":"[[[[{{{{","b":"\\"[[[["}\n', "strings.jsonl")
    assert read(strings, REFUSE, max_depth=1)[0] == [{"a": "[[[[{{{{", "b": '"[[[['}]


def test_a_line_too_long_that_runs_past_max_bytes_stops_the_reading_as_too_big(tmp_path):
    path = written(tmp_path, LINE + b'{"x":"' + b"y" * 100 + b'"}\n' + LINE)
    records, reader = read(path, COLLECT, max_line_bytes=10, max_bytes=50)
    assert records == [{"a": 1}] and kinds(reader) == [(2, jsonl.TOO_BIG)]


# --------------------------------------------------------------------------
# the digest sees every byte
# --------------------------------------------------------------------------

def digested(path: Path, policy: jsonl.Policy, **options) -> tuple[str, JsonlReader]:
    digest = hashlib.sha256()
    reader = JsonlReader(policy, str(path), digest=digest, **options)
    with open(path, "rb") as fh:
        try:
            reader.read(fh)
        except JsonlError:
            pass
    return digest.hexdigest(), reader


def test_the_digest_and_the_size_see_every_byte_skipped_kept_or_dropped(tmp_path):
    long_line = b'{"r":"' + b"z" * (3 * 1024 * 1024) + b'"}\n'      # skipped in several chunks
    data = LINE + long_line + b"\n" + b"not json\n" + LINE + b'{"torn":'
    path = written(tmp_path, data)
    whole = hashlib.sha256(data).hexdigest()
    for torn_tail in (jsonl.READ, jsonl.DROP):
        found, reader = digested(path, COLLECT, max_line_bytes=1024, torn_tail=torn_tail)
        assert kinds(reader)[0] == (2, jsonl.TOO_LONG)
        assert (found, reader.size) == (whole, len(data)), "the skipped line and the torn tail were digested"
    # A chained log, read whole: the dropped torn tail is digested too.
    log = written(tmp_path, LINE + long_line + LINE + b'{"torn":', "chained.jsonl")
    found, reader = digested(log, STRICT)
    assert found == hashlib.sha256(log.read_bytes()).hexdigest() and reader.size == log.stat().st_size


def test_a_reading_stopped_early_has_digested_exactly_what_it_read(tmp_path):
    head = LINE + b"not json\n"
    path = written(tmp_path, head + LINE * 3)
    found, reader = digested(path, REFUSE)
    assert found == hashlib.sha256(head).hexdigest() and reader.size == len(head)


def test_one_line_read_alone_follows_the_readers_torn_tail_rule():
    assert JsonlReader(STRICT, "x", torn_tail=jsonl.READ).parse(b'{"a":1}') == {"a": 1}
    assert JsonlReader(STRICT, "x").parse(b'{"a":1}') is None, "a chained log's torn line was never written"
    with pytest.raises(JsonlError, match="x, line 4: not valid JSON"):
        JsonlReader(STRICT, "x").parse(b"{nope\n", number=4)


# --------------------------------------------------------------------------
# the callers read through it
# --------------------------------------------------------------------------

# Each module that reads JSONL lines, and the policy it reads them with (measure/chain.py reads none: it checks the
# records a reader hands it; the chained logs are read by llmarchive/archive/jsonio.py).
READERS = {
    "measure/chain.py": None,
    "llmarchive/archive/jsonio.py": "STRICT",
    "llmarchive/comparison/submission.py": "COLLECT",
    "publish/data/sources.py": "REFUSE",
}
# Where a reading module parses JSON in a loop all the same, with why.  Nothing else.
PARSED_AGAIN_ALLOWED: dict[tuple[str, str], str] = {}
"""(file, function) -> why it may parse lines again: empty, and a new entry needs its reason."""
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _json_parses(tree: ast.AST) -> list[ast.AST]:
    """Every use of ``json.loads``/``json.load`` (or a bare ``loads``) in ``tree``: a call, or one handed to ``map``."""
    return [n for n in ast.walk(tree) if (isinstance(n, ast.Attribute) and n.attr in ("loads", "load")
                                          and isinstance(n.value, ast.Name) and n.value.id == "json")
            or (isinstance(n, ast.Name) and n.id == "loads")]


def _is_loop(node: ast.AST) -> bool:
    return isinstance(node, _LOOPS) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                                        and node.func.id == "map")


def _json_in_loops(tree: ast.Module, where: str,
                   allowed: dict[tuple[str, str], str] = PARSED_AGAIN_ALLOWED) -> list[str]:
    """``file:line function`` of every JSON parse inside a loop, a comprehension or a ``map``: a line reader."""
    function_of = {id(n): f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for n in ast.walk(f)}
    found = {(use.lineno, function_of.get(id(use), "")) for loop in ast.walk(tree) if _is_loop(loop)
             for use in _json_parses(loop)}
    return [f"{where}:{line} {name}" for line, name in sorted(found) if (where, name) not in allowed]


def _imports_json(tree: ast.Module) -> bool:
    return any((isinstance(n, ast.Import) and any(a.name == "json" for a in n.names))
               or (isinstance(n, ast.ImportFrom) and n.module == "json") for n in ast.walk(tree))


def _policies_used(tree: ast.Module) -> set[str]:
    """The names ``jsonl.X`` a module takes from measure.jsonl (``X`` a policy or the reader)."""
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "jsonl"}


def test_each_caller_reads_its_lines_through_measure_jsonl_with_its_policy_and_no_loop_of_its_own():
    for where, policy in READERS.items():
        tree = ast.parse((ROOT / where).read_text(encoding="utf-8"))
        assert _json_in_loops(tree, where) == [], f"{where}: read JSONL lines with measure.jsonl.JsonlReader"
        if policy is None:
            assert not _imports_json(tree), f"{where} reads no line: it checks the records a reader hands it"
            continue
        assert {"JsonlReader", policy} <= _policies_used(tree), f"{where} reads with measure.jsonl.{policy}"


def test_the_loop_rule_sees_a_json_loop_planted_in_a_reading_module():
    planted = ast.parse("import json\n"
                        "def read_log(path):\n"
                        "    with open(path) as fh:\n"
                        "        return [json.loads(line) for line in fh]\n"
                        "def read_tail(lines):\n"
                        "    for line in lines:\n"
                        "        yield json.loads(line)\n"
                        "def gather(lines):\n"
                        "    return [json.loads(line) for line in lines]\n"
                        "def mapped(lines):\n"
                        "    return list(map(json.loads, lines))\n")
    assert _json_in_loops(planted, "llmarchive/comparison/submission.py") == [
        "llmarchive/comparison/submission.py:4 read_log", "llmarchive/comparison/submission.py:7 read_tail",
        "llmarchive/comparison/submission.py:9 gather", "llmarchive/comparison/submission.py:11 mapped"]
    # an exception names one function of one module, not a name anywhere
    excepted = {("publish/data/sources.py", "gather"): "planted"}
    assert _json_in_loops(planted, "publish/data/sources.py", excepted) == ["publish/data/sources.py:4 read_log",
                                                                            "publish/data/sources.py:7 read_tail",
                                                                            "publish/data/sources.py:11 mapped"]


def test_a_logs_last_line_is_read_from_its_end_past_blank_lines_and_a_torn_tail():
    long = '{"n": 3, "pad": "' + "x" * 200_000 + '"}'          # longer than one chunk read backwards
    for text, last in [('{"n": 1}\n{"n": 2}\n', {"n": 2}), ('{"n": 1}\n\n  \n', {"n": 1}),
                       ('{"n": 1}\n{"n": 2', {"n": 1}), (long + "\n", {"n": 3, "pad": "x" * 200_000}),
                       ("", None), ("\n\n", None), ('{"n": 1', None), ("[1]\n", None), ("not json\n", None)]:
        stream = io.BytesIO(text.encode())
        assert jsonl.last_record(stream) == last, text[:20]
        assert jsonl.complete_size(stream) == text.rfind("\n") + 1
    stream = io.BytesIO(b'{"n": 1}\n{"n": 2}\n')
    assert jsonl.last_line(stream, end=9) == b'{"n": 1}'         # the last line of the first bytes only
    assert jsonl.record_of(b'{"a": 1}\n') == {"a": 1} and jsonl.record_of("[") is None and jsonl.record_of(b"\xff") is None
