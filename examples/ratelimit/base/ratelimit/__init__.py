"""Request handling for a small service."""
