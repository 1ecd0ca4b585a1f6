"""LLM-Archive: subjects, runner, trial store, budget, instrument and CLI.

Data flows one way: panels → runner → trials → measure → measurements →
publish.  The estimator itself lives in the pure-stdlib ``measure`` package;
this package does the I/O around it.
"""
__version__ = "0.1.0"
