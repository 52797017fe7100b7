"""Language plug-ins, on the sandbox's side: each plans its language's environment and runs its tests in the
sandbox's container with outcomes from an event stream LogoMesh reads itself (``checks/languages/`` holds their
court side). Python's plan and runner are ``sandbox/environment.py`` and ``sandbox/inside/``; Go's are here."""
