"""Each package of ``llmarchive/`` and ``publish/`` has a face, and the rest of the tree goes through it.

A package's ``__init__`` re-exports what the others use; its modules stay free to move and split behind it.
The rule, read from the source: code outside a package imports ``from <package> import <name>`` where the
name is in the package's ``__all__`` or is one of its modules, never ``from <package>.<module> import ...``.
Tests and benchmarks are exempt: they exercise the modules themselves.
"""
import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE = [p for d in ("llmarchive", "publish", "assets", "scripts") for p in sorted((ROOT / d).rglob("*.py"))]
CODE.append(ROOT / "definitions.py")


def _packages() -> list[str]:
    out = []
    for top in ("llmarchive", "publish"):
        for d in sorted((ROOT / top).iterdir()):
            if (d / "__init__.py").exists() and d.name not in ("cli", "__pycache__"):
                out.append(f"{top}.{d.name}")
    return out


PACKAGES = _packages()


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _members(package: str) -> set[str]:
    folder = ROOT / package.replace(".", "/")
    return {f.stem for f in folder.glob("*.py") if f.stem != "__init__"} | {
        d.name for d in folder.iterdir() if (d / "__init__.py").exists()}


def _outside_imports():
    """(file, line, package, imported module, names) for each import of a package from outside it."""
    for path in CODE:
        mod = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [(node.module, [a.name for a in node.names])]
            elif isinstance(node, ast.Import):
                modules = [(a.name, []) for a in node.names]
            else:
                continue
            for imported, names in modules:
                for package in PACKAGES:
                    inside = mod == package or mod.startswith(package + ".")
                    if not inside and (imported == package or imported.startswith(package + ".")):
                        yield path.relative_to(ROOT), node.lineno, package, imported, names


def test_every_package_has_a_face_listing_what_it_exports():
    for package in PACKAGES:
        face = importlib.import_module(package)
        assert face.__doc__, f"{package}/__init__.py says what the package is"
        exported = getattr(face, "__all__", None)
        assert exported is not None, f"{package}/__init__.py declares __all__"
        missing = [name for name in exported if not hasattr(face, name) and name not in _members(package)]
        assert not missing, f"{package}.__all__ names what the face does not bind: {missing}"


def test_code_outside_a_package_imports_its_face_not_its_modules():
    deep = [f"{f}:{line}: {imported}" for f, line, package, imported, _ in _outside_imports() if imported != package]
    assert not deep, "import these through the package's face:\n" + "\n".join(deep)


def test_code_imports_only_what_a_face_declares():
    exported = {p: set(importlib.import_module(p).__all__) | _members(p) for p in PACKAGES}
    undeclared = [f"{f}:{line}: {package}.{name}" for f, line, package, imported, names in _outside_imports()
                  if imported == package for name in names if name not in exported[package]]
    assert not undeclared, "add these to the face's __all__ (or use a name it declares):\n" + "\n".join(undeclared)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_face_never_hides_one_of_its_modules(package):
    """``from <package> import <name>`` means one thing: a face binds no module's name to another object."""
    face = importlib.import_module(package)
    hidden = [name for name in _members(package)
              if hasattr(face, name) and not isinstance(getattr(face, name), type(importlib))]
    assert not hidden, f"{package}: these names are modules of the package and also other objects: {hidden}"
