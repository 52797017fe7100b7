"""LogoMesh: the GitHub App — settings, CLI, receiver, queue, worker, publishing, ledger."""
