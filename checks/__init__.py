"""The evaluation court: models, detectives, judges, Chief Justice, CIS. It performs no I/O."""
