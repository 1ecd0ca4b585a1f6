"""The archive's own files: where things live, locks, JSON and record logs, dates, run folders, jobs, skips, cadence."""
# The face: what the rest of the tree imports from this package (tests/test_faces.py holds every import to it).
from llmarchive.archive.boundary_rules import (MONEY_FIELD, amounts, credential_in, machine_paths, may_hide_path,
                                               normalised_paths, path_in, path_pattern, public_text_problem, visible)
from llmarchive.archive.cadence import Cadence, CadenceError, load_cadence
from llmarchive.archive.dates import (DateError, not_after, optional_date, parse_date, parse_month, parse_time,
                                      parse_timestamp, utc_millis, utc_month, utc_now, utc_now_millis, utc_today)
from llmarchive.archive.jobs import JobSpec, SUBJECT_FINGERPRINT
from llmarchive.archive.jsonio import (ChainedLog, RecordFileError, cut_torn_tail, fsync_dir, read_json, read_jsonl,
                                       write_json)
from llmarchive.archive.locks import file_lock, lock_file
from llmarchive.archive.log_agreement import LogState, log_disagreement, measured_trials, state_of_records
from llmarchive.archive.outputs import OutputFile
from llmarchive.archive.paths import ArchivePaths, REPO_ROOT, check_id
from llmarchive.archive.phrases import either
from llmarchive.archive.queries import (declared_model_ids, last_skip, latest_point_of_run, latest_subject_model,
                                        month_sweep_runs, open_sweep_runs, records_on, replaced_points, series_closure,
                                        shown_points, sweep_run_folder, times_recorded)
from llmarchive.archive.record_logs import KINDS
from llmarchive.archive.run_ids import (bridge_run_id, comparison_run_id, fingerprint_lock_id, fingerprint_run_id,
                                        fingerprint_session,
                                        inspect_run_id, is_sweep_of, lm_eval_run_id, manual_run_id, open_weights_run_id,
                                        retry_run_id, rotation_run_id, sweep_run_id)
from llmarchive.archive.skips import (CONDITIONS, DEFAULT_CONDITION, PRECEDENCE, UnexplainedGap, cause_for,
                                      first_condition, record_skip, skip_condition)
from llmarchive.archive.store import (MEASUREMENT_FILE, TRIALS_FILE, UNREADABLE_CONDITION, Unreadable, complete_runs,
                                      complete_runs_dated, has_run, index_disagreements, is_complete, is_sweep_run,
                                      latest_complete_run_date, load_run, measurement_run, open_runs, read_run)
from llmarchive.archive.textsafe import MODEL_ID_MAX, id_problems, json_safe, terminal
from llmarchive.archive.yamlfile import read_yaml
__all__ = ["ArchivePaths", "CONDITIONS", "Cadence", "CadenceError", "ChainedLog", "DEFAULT_CONDITION", "DateError",
           "JobSpec", "KINDS", "LogState", "MEASUREMENT_FILE", "MODEL_ID_MAX", "MONEY_FIELD", "OutputFile",
           "PRECEDENCE", "REPO_ROOT", "RecordFileError", "SUBJECT_FINGERPRINT", "TRIALS_FILE", "UNREADABLE_CONDITION",
           "UnexplainedGap", "Unreadable", "amounts", "bridge_run_id", "cause_for", "check_id", "comparison_run_id",
           "complete_runs", "complete_runs_dated", "credential_in", "cut_torn_tail", "declared_model_ids", "either",
           "file_lock", "fingerprint_lock_id", "fingerprint_run_id", "fingerprint_session", "first_condition",
           "fsync_dir", "has_run", "id_problems", "index_disagreements", "inspect_run_id", "is_complete",
           "is_sweep_of", "is_sweep_run", "json_safe", "last_skip", "latest_complete_run_date", "latest_point_of_run",
           "latest_subject_model", "lm_eval_run_id", "load_cadence", "load_run", "lock_file", "log_disagreement",
           "machine_paths", "manual_run_id", "may_hide_path", "measured_trials", "measurement_run", "month_sweep_runs",
           "normalised_paths", "not_after", "open_runs", "open_sweep_runs", "open_weights_run_id", "optional_date",
           "parse_date", "parse_month", "parse_time", "parse_timestamp", "path_in", "path_pattern",
           "public_text_problem", "read_json", "read_jsonl", "read_run", "read_yaml", "record_skip", "records_on",
           "replaced_points", "retry_run_id", "rotation_run_id", "series_closure", "shown_points", "skip_condition",
           "state_of_records", "sweep_run_folder", "sweep_run_id", "terminal", "times_recorded", "utc_millis",
           "utc_month", "utc_now", "utc_now_millis", "utc_today", "visible", "write_json"]
# (end of the face)
