"""The DBOM ledger: logs, records, signed tree heads, public keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dbom_logs",
        sa.Column("log_id", sa.String(64), primary_key=True),
        sa.Column("tree_size", sa.BigInteger, nullable=False),
        sa.Column("root_hash", sa.String(64), nullable=False),
        sa.Column("frontier", sa.Text, nullable=False),
    )
    op.create_table(
        "dbom_records",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("log_id", sa.String(64), sa.ForeignKey("dbom_logs.log_id"), nullable=False),
        sa.Column("leaf_index", sa.BigInteger, nullable=False),
        sa.Column("leaf_hash", sa.String(64), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("evaluation_sha256", sa.String(64), nullable=False),
        sa.Column("raw_result", sa.Text, nullable=False),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("installation_id", sa.BigInteger, nullable=True),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("pr_number", sa.Integer, nullable=True),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("cis_score", sa.Float, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("log_id", "leaf_index", name="uq_dbom_records_log_leaf"),
    )
    op.create_index("ix_dbom_records_repo_pr", "dbom_records", ["repo", "pr_number"])
    op.create_table(
        "dbom_tree_heads",
        sa.Column("log_id", sa.String(64), sa.ForeignKey("dbom_logs.log_id"), primary_key=True),
        sa.Column("tree_size", sa.BigInteger, primary_key=True),
        sa.Column("root_hash", sa.String(64), nullable=False),
        sa.Column("timestamp_ms", sa.BigInteger, nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("signature", sa.Text, nullable=False),
    )
    op.create_table(
        "dbom_keys",
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("alg", sa.String(16), nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("dbom_keys")
    op.drop_table("dbom_tree_heads")
    op.drop_index("ix_dbom_records_repo_pr", "dbom_records")
    op.drop_table("dbom_records")
    op.drop_table("dbom_logs")
