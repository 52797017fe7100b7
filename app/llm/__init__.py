"""Language-model adapters behind :class:`checks.protocols.LLMClient`."""
