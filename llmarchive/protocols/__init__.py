"""Protocols on disk: the registry, admissions to lanes, the secret seed, pre-registration, the published open panels."""
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.protocols.admissions import first_admission, read_admissions
from llmarchive.protocols.open_panels import (FILE_ONLY_KEYS, OpenPanelFileError, load_panel_file, prompt_sha256,
                                              protocol_from_panel_file, read_panel_file, verify_panel_file)
from llmarchive.protocols.panel_seed import guard_seed, init_secret_seed
from llmarchive.protocols.prereg import is_preregistered
from llmarchive.protocols.registry import sweep_protocols
__all__ = ["FILE_ONLY_KEYS", "OpenPanelFileError", "first_admission", "guard_seed", "init_secret_seed",
           "is_preregistered", "load_panel_file", "prompt_sha256", "protocol_from_panel_file", "read_admissions",
           "read_panel_file", "sweep_protocols", "verify_panel_file"]
# (end of the face)
