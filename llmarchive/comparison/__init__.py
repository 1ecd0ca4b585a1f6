"""Comparison points: the intake of outside runs, runs made with the outsider's route, simulated readers."""
