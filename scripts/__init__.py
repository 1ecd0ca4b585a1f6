"""What `make demo` and `make serve` run: entry points beside the CLI, outside the asset graph."""
