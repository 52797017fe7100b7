"""The arq worker: a queued pull request turned into a completed check run and comment (:mod:`app.worker.jobs`),
with its start-up, per-installation fairness, the throw-away clone and publishing."""
