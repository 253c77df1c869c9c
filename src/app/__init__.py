"""Use cases, the composition root and the CLI."""
