"""The only place PR code runs: the Docker sandbox."""
