"""Which model the commercial series follows: the subject-model file and the review of undeclared successors."""
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.succession.review import (BRIDGE_SOURCE, ReviewError, ReviewPaths, file_points, held_paths, holds,
                                          mark_held, resolve, review_of, reviews, unplaced_unreadable)
from llmarchive.succession.subject_models import (SUBJECT_BASE_URL_ENV, SUBJECT_MODELS_ENV, SubjectModels,
                                                  SubjectModelsError, active_model, declared_successor,
                                                  load_subject_models, snapshots, subject_base_url,
                                                  subject_models_file)
__all__ = ["BRIDGE_SOURCE", "ReviewError", "ReviewPaths", "SUBJECT_BASE_URL_ENV", "SUBJECT_MODELS_ENV", "SubjectModels",
           "SubjectModelsError", "active_model",
           "declared_successor", "file_points", "held_paths", "holds", "load_subject_models", "mark_held", "resolve",
           "review_of", "reviews", "snapshots", "subject_base_url", "subject_models_file", "unplaced_unreadable"]
# (end of the face)
