"""The archive's own files: where things live, locks, JSON and record logs, dates, run folders, jobs, skips, cadence."""
