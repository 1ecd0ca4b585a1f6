"""The jobs of the cycle: paid runs, the sweep, bridges, the model watch, open weights, lease, coverage, status."""
