"""Which model the commercial series follows: the subject-model file and the review of undeclared successors."""
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.succession.review import (BRIDGE_SOURCE, ReviewError, ReviewPaths, file_points, held_paths, holds,
                                          mark_held, resolve, review_of, reviews, unplaced_unreadable)
from llmarchive.succession.subject_models import (SubjectModels, SubjectModelsError, active_model, declared_successor,
                                                  load_subject_models, snapshots)
__all__ = ["BRIDGE_SOURCE", "ReviewError", "ReviewPaths", "SubjectModels", "SubjectModelsError", "active_model",
           "declared_successor", "file_points", "held_paths", "holds", "load_subject_models", "mark_held", "resolve",
           "review_of", "reviews", "snapshots", "unplaced_unreadable"]
# (end of the face)
