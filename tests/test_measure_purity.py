"""measure/ stays pure standard library and does no I/O outside itself."""
import ast
import sys
from pathlib import Path

MEASURE = Path(__file__).resolve().parent.parent / "measure"
ALLOWED = set(sys.stdlib_module_names) | {"measure", "__future__"}
IO_NAMES = {"socket", "urllib", "http", "subprocess", "requests", "httpx", "ftplib", "smtplib", "shutil"}


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield "measure"
            else:
                yield node.module or ""


def test_every_measure_module_imports_only_the_standard_library():
    offenders = []
    for path in sorted(MEASURE.rglob("*.py")):
        for name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if name.split(".")[0] not in ALLOWED:
                offenders.append(f"{path.name} imports {name}")
    assert offenders == []


def test_measure_opens_no_network_and_writes_no_file():
    offenders = []
    for path in sorted(MEASURE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name in _imports(tree):
            if name.split(".")[0] in IO_NAMES:
                offenders.append(f"{path.name} imports {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in {"open", "write_text", "write_bytes", "mkdir", "unlink", "rename", "replace"}:
                    offenders.append(f"{path.name}:{node.lineno} calls {called}")
    assert offenders == []


def test_the_purity_check_catches_a_third_party_import(tmp_path):
    bad = ast.parse("import numpy\nfrom httpx import Client\n")
    assert [n for n in _imports(bad) if n.split(".")[0] not in ALLOWED] == ["numpy", "httpx"]
