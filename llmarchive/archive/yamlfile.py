"""Reading the repository's YAML configuration files (``cadence.yaml``, ``subject_models.yaml``)."""
from pathlib import Path
from typing import Any


def read_yaml(file: Path, error: type[Exception]) -> Any:
    """The parsed document; ``error`` names the file when it is missing or not valid YAML."""
    import yaml

    try:
        return yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{file}: no such file") from None
    except yaml.YAMLError as exc:
        raise error(f"{file}: not valid YAML ({exc})") from None
