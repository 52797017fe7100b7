"""Ed25519 signing keys: the active key signs, every key ever used stays listed so old records still verify.

Layout of the key directory (``LOGOMESH_SIGNING_KEY_PATH``, default ``<home>/keys/``)::

    signing.pem          the active private key (PKCS#8, mode 0600, created on first use)
    public/<key_id>.pem  the public half of every key that ever signed, including rotated ones

A key supplied as PEM in ``LOGOMESH_SIGNING_KEY`` wins over the directory (for deployments that mount
secrets); its public key is listed next to those already in the directory.
The key id is the first 16 hex characters of SHA-256 over the raw 32-byte public key.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from app.ledger.errors import SigningKeyError

ALGORITHM = "Ed25519"
PRIVATE_FILE = "signing.pem"
PUBLIC_DIR = "public"


def key_id_of(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_pem(public: Ed25519PublicKey) -> str:
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def load_public_pem(text: str) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(text.encode())
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(None, "public key is not Ed25519")
    return key


def verify_signature(public: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    try:
        public.verify(signature, message)
    except InvalidSignature:
        return False
    return True


@dataclass(frozen=True)
class SigningKey:
    private: Ed25519PrivateKey
    key_id: str

    @classmethod
    def from_private(cls, private: Ed25519PrivateKey) -> SigningKey:
        return cls(private=private, key_id=key_id_of(private.public_key()))

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    def sign(self, message: bytes) -> bytes:
        return self.private.sign(message)


def _load_private_pem(data: bytes, path: Path | None) -> SigningKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(path, f"not an unencrypted PEM private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(path, "the key is not Ed25519")
    return SigningKey.from_private(key)


def _private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write_0600(directory: Path, data: bytes) -> Path:
    fd, name = tempfile.mkstemp(dir=directory, prefix=".key-")
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return Path(name)


class KeyRing:
    """The active signing key and every public key that may appear on a record."""

    def __init__(self, active: SigningKey, directory: Path | None, public: dict[str, Ed25519PublicKey]) -> None:
        self.active = active
        self.directory = directory
        self._public = dict(public)
        self._public[active.key_id] = active.public

    @classmethod
    def load(cls, directory: Path | None, pem: str | None = None) -> KeyRing:
        """Load the key from ``pem`` or ``directory``; create it in ``directory`` on first use."""
        public: dict[str, Ed25519PublicKey] = {}
        if directory is not None and (directory / PUBLIC_DIR).is_dir():
            public = cls._read_public(directory)
        if pem:
            return cls(_load_private_pem(pem.encode(), None), directory if public else None, public)
        if directory is None:
            raise SigningKeyError(None, "neither a key nor a key directory is configured")
        active = cls._load_or_create(directory)
        ring = cls(active, directory, public)
        ring._publish(active)
        return ring

    @staticmethod
    def _read_public(directory: Path) -> dict[str, Ed25519PublicKey]:
        found: dict[str, Ed25519PublicKey] = {}
        for path in sorted((directory / PUBLIC_DIR).glob("*.pem")):
            try:
                key = load_public_pem(path.read_text(encoding="ascii"))
            except (ValueError, SigningKeyError) as exc:
                raise SigningKeyError(path, f"unreadable public key ({exc})") from exc
            found[key_id_of(key)] = key
        return found

    @staticmethod
    def _load_or_create(directory: Path) -> SigningKey:
        path = directory / PRIVATE_FILE
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not path.exists():
                tmp = _write_0600(directory, _private_pem(Ed25519PrivateKey.generate()))
                try:
                    # link() fails if another process created the key first; then both use that one
                    with contextlib.suppress(FileExistsError):
                        os.link(tmp, path)
                finally:
                    tmp.unlink()
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & 0o077:
                raise SigningKeyError(path, f"permissions {mode:04o} are too open; expected 0600")
            return _load_private_pem(path.read_bytes(), path)
        except OSError as exc:
            raise SigningKeyError(path, exc.strerror or str(exc)) from exc

    def _publish(self, key: SigningKey) -> None:
        if self.directory is None:
            return
        target = self.directory / PUBLIC_DIR / f"{key.key_id}.pem"
        if target.exists():
            return
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}")
            tmp.write_text(public_pem(key.public), encoding="ascii")
            os.replace(tmp, target)
        except OSError as exc:
            raise SigningKeyError(target, exc.strerror or str(exc)) from exc

    def rotate(self) -> SigningKey:
        """Make a fresh key the active one; the old public key stays listed."""
        if self.directory is None:
            raise SigningKeyError(None, "a key supplied via settings is rotated by replacing the setting")
        new = SigningKey.from_private(Ed25519PrivateKey.generate())
        self._publish(self.active)
        self._publish(new)
        try:
            tmp = _write_0600(self.directory, _private_pem(new.private))
            os.replace(tmp, self.directory / PRIVATE_FILE)
        except OSError as exc:
            raise SigningKeyError(self.directory / PRIVATE_FILE, exc.strerror or str(exc)) from exc
        self.active = new
        self._public[new.key_id] = new.public
        return new

    def add_public(self, key_id: str, key: Ed25519PublicKey) -> None:
        if key_id_of(key) != key_id:
            raise SigningKeyError(None, f"public key does not match its id {key_id}")
        self._public[key_id] = key

    def public_key(self, key_id: str) -> Ed25519PublicKey | None:
        return self._public.get(key_id)

    def listing(self) -> list[dict[str, str]]:
        return [
            {"key_id": kid, "alg": ALGORITHM, "public_key": public_pem(key),
             "status": "active" if kid == self.active.key_id else "retired"}
            for kid, key in sorted(self._public.items(), key=lambda kv: (kv[0] != self.active.key_id, kv[0]))
        ]
