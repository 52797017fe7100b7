"""One review assembled from the edges: the change read from git, the adapters the court needs (embedding model,
sandbox, red agent, judges) and the court run over them — shared by the CLI and the worker."""
