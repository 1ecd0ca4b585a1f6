"""No library module is over 500 lines: a module that grows past that is split by concern.

The limit keeps each module one concern a maintainer can read in a sitting
(issue 19).  It covers every Python module of the layered packages —
``measure/``, ``panels/``, ``llmarchive/`` (its ``cli/`` and sub-packages
too), ``publish/`` and ``assets/`` — except the scenario-family data in
``panels/families/``, which is catalogue text (fifteen scenarios per
family with their templates), not logic.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("measure", "panels", "llmarchive", "publish", "assets")
EXEMPT = (Path("panels") / "families",)
MAX_LINES = 500


def module_sizes(root: Path = ROOT) -> dict[str, int]:
    """Lines of every covered module, by its path from the repository root."""
    sizes = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if any(relative.is_relative_to(folder) for folder in EXEMPT):
                continue
            sizes[relative.as_posix()] = len(path.read_text(encoding="utf-8").splitlines())
    return sizes


def test_every_library_module_is_at_most_500_lines_except_the_scenario_family_data():
    sizes = module_sizes()
    assert "publish/site/render.py" in sizes and "panels/families/base_rate_neglect.py" not in sizes
    over = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert not over, "split by concern (at most 500 lines each): " + ", ".join(
        f"{name} {lines}" for name, lines in sorted(over.items(), key=lambda kv: -kv[1]))
