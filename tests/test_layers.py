"""The one-way layers hold: ``lint-imports`` runs the contracts in ``.importlinter``.

measure ← panels ← llmarchive ← publish ← {llmarchive.cli, assets}, and no
import cycle between the modules of any package.
"""
import configparser
import pkgutil
import subprocess
import sys
from pathlib import Path

import llmarchive

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_import_contracts_are_kept():
    result = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_every_library_module_is_kept_off_the_entry_points():
    """A new module of llmarchive is covered by the contract as soon as it exists."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    listed = set(config["importlinter:contract:cli-on-top"]["source_modules"].split())
    modules = {f"llmarchive.{info.name}" for info in pkgutil.iter_modules(llmarchive.__path__)
               if info.name != "cli" and not info.name.startswith("_")}
    assert modules - listed == set(), "add these to source_modules in .importlinter"
