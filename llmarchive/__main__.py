"""``python -m llmarchive`` runs the CLI."""
import sys

from llmarchive.cli import main

sys.exit(main())
