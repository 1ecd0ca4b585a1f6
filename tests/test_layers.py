"""The house's shape holds: ``lint-imports`` runs the contracts in ``.importlinter``, and llmarchive is rooms only.

measure ← panels ← llmarchive ← publish ← assets ← scripts (with llmarchive.cli,
the command line, the one part of llmarchive that may use publish); inside
llmarchive every package stands on its floor of one ``layers`` contract, and
no import cycle joins the modules of any package.  A new module joins by
being put in its package's folder: nothing lists modules by name.  No
function runs over 80 lines outside the named exceptions, and one module
(llmarchive/archive/run_ids.py) builds and splits every run id.
"""
import ast
import configparser
import importlib
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


def _floors(contract: str = "llmarchive-floors") -> list[list[str]]:
    layers = _contracts()[f"importlinter:contract:{contract}"]["layers"].split("\n")
    return [re.split(r"\s*[|:]\s*", line.strip()) for line in layers if line.strip()]


def test_import_contracts_are_kept():
    result = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in result.stdout


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


PUBLISH_GROUND = ("errors", "workers")
"""The only loose modules of publish/: the errors and the process pool every package stands on."""


def test_every_package_of_publish_stands_on_a_floor_and_has_a_face():
    import publish

    found = {info.name: info.ispkg for info in pkgutil.iter_modules(publish.__path__)}
    loose = sorted(name for name, ispkg in found.items() if not ispkg and name not in PUBLISH_GROUND)
    assert loose == [], f"put these modules in the publish package of their concern: {loose}"
    placed = {name for floor in _floors("publish-floors") for name in floor}
    assert set(found) - placed == set(), "give these packages a floor in .importlinter (publish-floors)"
    assert placed - set(found) == set(), "the contract names packages that do not exist"
    assert len(_floors("publish-floors")) <= MAX_FLOORS
    for name, ispkg in found.items():
        if ispkg:
            face = importlib.import_module(f"publish.{name}")
            assert face.__doc__ and face.__all__, f"publish.{name} needs a face: a docstring and __all__"


# --------------------------------------------------------------------------- long functions
MAX_FUNCTION_LINES = 80
# The project's code: every package and the top-level entry files (tests/ and bench/ are not the product).
CODE_ROOTS = ("measure", "panels", "llmarchive", "publish", "assets", "scripts")
# Where a long function is allowed, each with why.  Nothing else: a long orchestration is cut along its steps.
LONG_FUNCTIONS_ALLOWED = {
    "measure/": "the frozen estimator: its files' bytes are hashed into every measurement's analysis_code_sha, so "
                "cutting measure.measurement.build would change every published measurement",
    "panels/families/": "scenario data: each family's fifteen scenarios are one literal table, not steps",
}


def _functions_over(limit: int, allowed: dict[str, str]) -> list[str]:
    files = [path for root in CODE_ROOTS for path in sorted((ROOT / root).rglob("*.py"))]
    files += sorted(ROOT.glob("*.py"))
    found = []
    for path in files:
        where = path.relative_to(ROOT).as_posix()
        if any(where.startswith(prefix) for prefix in allowed):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=where)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_runs_over_80_lines_outside_the_named_exceptions():
    long = _functions_over(MAX_FUNCTION_LINES, LONG_FUNCTIONS_ALLOWED)
    assert long == [], ("cut these into the named steps their docstrings list (or name the exception, with why, in "
                        f"LONG_FUNCTIONS_ALLOWED): {long}")


def test_the_long_function_rule_sees_a_long_function():
    # The walk is not blind: measure.measurement.build, allowed above, is longer than the limit.
    without_measure = {k: v for k, v in LONG_FUNCTIONS_ALLOWED.items() if k != "measure/"}
    assert any(entry.startswith("measure/measurement.py:") and " build " in entry
               for entry in _functions_over(MAX_FUNCTION_LINES, without_measure))


# --------------------------------------------------------------------------- one run-id owner
# Run ids name run folders and ledger runs that archives keep for ever, so one module makes every scheme and reads
# every id back (issue 26 §2); anywhere else, a run id is asked of that module, never built or split by hand.
RUN_ID_OWNER = "llmarchive/archive/run_ids.py"
RUN_ID_PREFIXES = ("sweep_", "bridge_", "ow_", "rotation_", "comparison_", "subject_fingerprint_", "inspect-", "lm-eval-")
_SPLITTING_METHODS = {"split", "rsplit", "partition", "rpartition"}


def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The module's ``NAME = value`` assignments (how a scheme's prefix hides behind a name: ``JOB = ...``)."""
    return {node.targets[0].id: node.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}


class _Strings:
    """The text a string expression is known to hold, names of constants followed through every module."""

    def __init__(self, trees: list[ast.Module]) -> None:
        self.everywhere: dict[str, list[ast.expr]] = {}
        for tree in trees:
            for name, value in _module_constants(tree).items():
                self.everywhere.setdefault(name, []).append(value)

    def value(self, node: ast.AST, local: dict[str, ast.expr], depth: int = 0) -> str | None:
        """A constant's text: a literal, a name of this module, or a name (``mod.NAME``) with one value anywhere."""
        if depth > 5:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and node.id in local:
            return self.value(local[node.id], local, depth + 1)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        values = {self.value(v, {}, depth + 1) for v in self.everywhere.get(name, [])}
        return values.pop() if len(values) == 1 else None

    def head(self, node: ast.AST, local: dict[str, ast.expr]) -> tuple[str, bool] | None:
        """(text, more): what ``node`` is known to start with, and whether something not known follows it."""
        if isinstance(node, ast.JoinedStr):
            parts = []
            for piece in node.values:
                text = piece.value if isinstance(piece, ast.Constant) else (
                    self.value(piece.value, local) if piece.format_spec is None and piece.conversion == -1 else None)
                if text is None:
                    return "".join(parts), True
                parts.append(text)
            return "".join(parts), False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self.head(node.left, local)
            if left is None or left[1]:
                return left
            right = self.head(node.right, local)
            return (left[0], True) if right is None else (left[0] + right[0], right[1])
        text = self.value(node, local)
        return None if text is None else (text, False)


def _run_id_shaped(text: str) -> bool:
    """A scheme's prefix alone (``"sweep_"``), or one followed by what is no word of a name (a month, ``{``, ``(``).

    ``"comparison_point"`` or ``f"bridge_reserve_{x}"`` are names of other things and pass.
    """
    return any(text == prefix or (text.startswith(prefix) and not (text[len(prefix)].islower()
                                                                    or text[len(prefix)] == "_"))
               for prefix in RUN_ID_PREFIXES)


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _split_then_compared(node: ast.Compare) -> bool:
    """``run_id.split("_")[0] == "sweep"``: a scheme's word compared with a piece of a split string."""
    if len(node.comparators) != 1:
        return False
    sides = (node.left, node.comparators[0])
    split = any(isinstance(s, ast.Subscript) and isinstance(s.value, ast.Call)
                and isinstance(s.value.func, ast.Attribute) and s.value.func.attr in _SPLITTING_METHODS for s in sides)
    return split and any(isinstance(s, ast.Constant) and f"{s.value}_" in RUN_ID_PREFIXES for s in sides)


def _run_id_handling(tree: ast.Module, strings: _Strings, where: str) -> list[str]:
    """Every place in ``tree`` that builds or splits a run id of a prefixed scheme, as ``file:line code``.

    Built: an f-string, a ``+`` or a literal that starts with a scheme's prefix
    (names of constants followed, so ``f"{JOB}_{day}"`` is seen).  Split: the
    same string handed to ``startswith``, ``split``, a regular expression,
    or a scheme's word compared with a piece of a split.
    """
    local, skip, found = _module_constants(tree), _docstrings(tree), []
    inside: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in inside:
            continue
        if isinstance(node, (ast.JoinedStr, ast.BinOp, ast.Constant)):
            head = strings.head(node, local)
            if head is not None and not isinstance(node, ast.Constant):
                inside.update(id(n) for n in ast.walk(node) if n is not node)
            if head is not None and _run_id_shaped(head[0]):
                found.append(f"{where}:{node.lineno} {ast.unparse(node)[:80]}")
        elif isinstance(node, ast.Compare) and _split_then_compared(node):
            found.append(f"{where}:{node.lineno} {ast.unparse(node)[:80]}")
    return found


def _code_trees() -> dict[str, ast.Module]:
    files = [path for root in CODE_ROOTS for path in sorted((ROOT / root).rglob("*.py"))] + sorted(ROOT.glob("*.py"))
    return {path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8")) for path in files}


def test_one_run_id_owner_no_module_but_run_ids_builds_or_splits_a_run_id():
    trees = _code_trees()
    strings = _Strings(list(trees.values()))
    by_hand = [hit for where, tree in trees.items() if where != RUN_ID_OWNER
               for hit in _run_id_handling(tree, strings, where)]
    assert by_hand == [], (f"a run id is made and read back by {RUN_ID_OWNER} only; call its functions (sweep_run_id, "
                           f"parse, is_sweep_of, fingerprint_session, ...) instead: {by_hand}")


def test_the_run_id_rule_sees_every_scheme_its_owner_builds_and_reads():
    # The walk is not blind: in the owner itself it finds every prefixed scheme built, and read back by its pattern.
    trees = _code_trees()
    hits = _run_id_handling(trees[RUN_ID_OWNER], _Strings(list(trees.values())), RUN_ID_OWNER)
    code = " ".join(hit.split(" ", 1)[1] for hit in hits)
    for built in ("f'sweep_{day[:7]}_", "f'bridge_{slug(old)}_to_", "f'ow_{generation_id}_",
                  "f'rotation_{day}_", "f'{COMPARISON}_{protocol_id}_", "f'{job_table.SUBJECT_FINGERPRINT}_{day}_"):
        assert built in code, (built, hits)
    for read in ("f'sweep_({_MONTH})_", "'bridge_(.+)_(old|new)'", "f'rotation_({_DAY})_", "'ow_'"):
        assert read in code, (read, hits)


PLANTED_BY_HAND = '''
import re
JOB = "subject_fingerprint"
SWEEP = "sweep_"
def made(day, pid, model):
    return f"sweep_{day[:7]}_{pid}_{model}"
def concatenated(day, pid):
    return "rotation_" + day + "_" + pid
def fingerprint(day, model, n):
    return f"{JOB}_{day}_{model}@{n}"
def is_open_weights(run_id):
    return run_id.startswith("ow_")
def is_sweep(run_id):
    return run_id.startswith(SWEEP)
def month_of(run_id, month, pid):
    return run_id.startswith(f"sweep_{month}_{pid}_")
def comparison_parts(run_id):
    return re.fullmatch(r"comparison_([a-z_]+)_(openai|anthropic)_(.+)", run_id)
def is_bridge(run_id):
    return run_id.split("_", 1)[0] == "bridge"
def innocent(record, x):
    kinds = ("comparison_point", "bridge_incomplete", "sweep_due", "subject_fingerprint_job")
    return f"bridge-{x}", f"bridge_reserve_{x}", record.get("comparison_points_withdrawn"), kinds
'''


def test_the_run_id_rule_finds_each_way_of_building_or_splitting_an_id_planted_by_hand():
    tree = ast.parse(PLANTED_BY_HAND)
    hits = _run_id_handling(tree, _Strings([tree]), "planted.py")
    lines = PLANTED_BY_HAND.splitlines()
    found = {lines[int(hit.split(":")[1].split(" ")[0]) - 1].strip() for hit in hits}
    assert found == {
        'SWEEP = "sweep_"',
        'return f"sweep_{day[:7]}_{pid}_{model}"',
        'return "rotation_" + day + "_" + pid',
        'return f"{JOB}_{day}_{model}@{n}"',
        'return run_id.startswith("ow_")',
        'return run_id.startswith(f"sweep_{month}_{pid}_")',
        'return re.fullmatch(r"comparison_([a-z_]+)_(openai|anthropic)_(.+)", run_id)',
        'return run_id.split("_", 1)[0] == "bridge"',
    }, hits
