"""The ledger's tables (SQLAlchemy Core). Alembic migrations in ``migrations/`` create exactly these.

- ``dbom_logs``: one row per log (an installation, or ``local``): its size, root and right-edge frontier.
  Appends lock this row, so leaf indices are handed out one at a time.
- ``dbom_records``: one row per DBOM; ``raw_result`` holds the full evaluation JSON next to its hash.
- ``dbom_tree_heads``: every signed tree head, one per tree size.
- ``dbom_keys``: every public key that ever signed, so verification works from the database alone.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

logs = Table(
    "dbom_logs", metadata,
    Column("log_id", String(64), primary_key=True),
    Column("tree_size", BigInteger, nullable=False),
    Column("root_hash", String(64), nullable=False),
    Column("frontier", Text, nullable=False),  # JSON list of hex subtree roots, largest first
)

records = Table(
    "dbom_records", metadata,
    Column("id", String(64), primary_key=True),
    Column("log_id", String(64), ForeignKey("dbom_logs.log_id"), nullable=False),
    Column("leaf_index", BigInteger, nullable=False),
    Column("leaf_hash", String(64), nullable=False),
    Column("body", Text, nullable=False),  # canonical JSON of the body (a review's or an audit's)
    Column("evaluation_sha256", String(64), nullable=False),
    Column("raw_result", Text, nullable=False),  # the full evaluation (or audit result) JSON
    Column("signature", Text, nullable=False),  # base64 Ed25519 over the domain-tagged body
    Column("key_id", String(32), nullable=False),
    Column("installation_id", BigInteger, nullable=True),
    Column("repo", String(255), nullable=False),
    Column("pr_number", Integer, nullable=True),
    Column("head_sha", String(64), nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("cis_score", Float, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("log_id", "leaf_index", name="uq_dbom_records_log_leaf"),
    Index("ix_dbom_records_repo_pr", "repo", "pr_number"),
)

tree_heads = Table(
    "dbom_tree_heads", metadata,
    Column("log_id", String(64), ForeignKey("dbom_logs.log_id"), primary_key=True),
    Column("tree_size", BigInteger, primary_key=True),
    Column("root_hash", String(64), nullable=False),
    Column("timestamp_ms", BigInteger, nullable=False),
    Column("key_id", String(32), nullable=False),
    Column("signature", Text, nullable=False),
)

keys = Table(
    "dbom_keys", metadata,
    Column("key_id", String(32), primary_key=True),
    Column("alg", String(16), nullable=False),
    Column("public_key", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
