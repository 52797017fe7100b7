"""LogoMesh's edges, by concern: ``cli`` (the command line), ``receiver`` (webhooks and pages), ``worker`` (the
queued review and its publication), ``review`` (assembling one review from git and the adapters), ``audit``,
``llm`` (judge providers), ``ledger`` (the signed DBOM records); shared: ``settings``, ``github``, ``queue``,
``logs`` and ``metrics``."""
