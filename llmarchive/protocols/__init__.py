"""Protocols on disk: the registry, admissions to lanes, the secret seed, pre-registration, the published open panels."""
