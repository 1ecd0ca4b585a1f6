"""The house's shape holds: ``lint-imports`` runs the contracts in ``.importlinter``, and llmarchive is rooms only.

measure ← panels ← llmarchive ← publish ← assets ← scripts (with llmarchive.cli,
the command line, the one part of llmarchive that may use publish); inside
llmarchive every package stands on its floor of one ``layers`` contract, and
no import cycle joins the modules of any package.  A new module joins by
being put in its package's folder: nothing lists modules by name.
"""
import configparser
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import llmarchive

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
MAX_PACKAGES = 12
MAX_FLOORS = 7


def _contracts() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return config


def _floors() -> list[list[str]]:
    layers = _contracts()["importlinter:contract:llmarchive-floors"]["layers"].split("\n")
    return [re.split(r"\s*[|:]\s*", line.strip()) for line in layers if line.strip()]


def test_import_contracts_are_kept():
    result = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def test_llmarchive_holds_packages_only_no_loose_module():
    loose = sorted(info.name for info in pkgutil.iter_modules(llmarchive.__path__)
                   if not info.ispkg and info.name not in ("__main__",))
    assert loose == [], f"put these modules in the package of their concern: {loose}"


def test_every_package_of_llmarchive_stands_on_a_floor_of_the_layers_contract():
    packages = {info.name for info in pkgutil.iter_modules(llmarchive.__path__) if info.ispkg}
    placed = {name for floor in _floors() for name in floor}
    assert packages - placed == set(), "give these packages a floor in .importlinter (llmarchive-floors)"
    assert placed - packages == set(), "the contract names packages that do not exist"
    assert len(packages) <= MAX_PACKAGES
    assert len(_floors()) + 1 <= MAX_FLOORS          # + the package's own __main__ above the command line
