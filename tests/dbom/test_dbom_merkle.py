"""The Merkle log against RFC 6962's test vectors and a naive, slicing recomputation of the RFC's definitions."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.dbom import (
    EMPTY_ROOT,
    DbomError,
    consistency_proof,
    frontier_append,
    frontier_root,
    inclusion_proof,
    leaf_hash,
    merkle_root,
    node_hash,
    verify_consistency,
    verify_inclusion,
)

# The certificate-transparency reference test data: leaf inputs and the roots of their prefixes.
CT_LEAVES = [b"", b"\x00", b"\x10", b"\x20\x21", b"\x30\x31", b"\x40\x41\x42\x43",
             bytes(range(0x50, 0x58)), bytes(range(0x60, 0x70))]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


# --- the naive model: RFC 6962 §2.1 written as literally as possible ----------------------------------------

def naive_k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def naive_mth(d: list[bytes]) -> bytes:
    if not d:
        return hashlib.sha256(b"").digest()
    if len(d) == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = naive_k(len(d))
    return hashlib.sha256(b"\x01" + naive_mth(d[:k]) + naive_mth(d[k:])).digest()


def naive_path(m: int, d: list[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = naive_k(len(d))
    if m < k:
        return [*naive_path(m, d[:k]), naive_mth(d[k:])]
    return [*naive_path(m - k, d[k:]), naive_mth(d[:k])]


def naive_subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [naive_mth(d)]
    k = naive_k(n)
    if m <= k:
        return [*naive_subproof(m, d[:k], b), naive_mth(d[k:])]
    return [*naive_subproof(m - k, d[k:], False), naive_mth(d[:k])]


def naive_proof(m: int, d: list[bytes]) -> list[bytes]:
    return [] if m in (0, len(d)) else naive_subproof(m, d, True)


# --- vectors --------------------------------------------------------------------------------------------------

def test_domain_separation() -> None:
    assert leaf_hash(b"x") == hashlib.sha256(b"\x00x").digest()
    assert node_hash(b"a", b"b") == hashlib.sha256(b"\x01ab").digest()
    assert merkle_root([]) == EMPTY_ROOT == hashlib.sha256(b"").digest()
    # a two-leaf tree's root is not the leaf hash of the two leaves' concatenation
    left, right = leaf_hash(b"a"), leaf_hash(b"b")
    assert merkle_root([left, right]) != leaf_hash(left + right)


@pytest.mark.parametrize("size", range(1, 9))
def test_certificate_transparency_roots(size: int) -> None:
    leaves = [leaf_hash(d) for d in CT_LEAVES[:size]]
    assert merkle_root(leaves).hex() == CT_ROOTS[size - 1]


# --- properties against the naive model -----------------------------------------------------------------------

data_lists = st.lists(st.binary(max_size=8), min_size=1, max_size=70)


@settings(max_examples=120, deadline=None)
@given(data=data_lists)
def test_root_frontier_and_every_inclusion_proof(data: list[bytes]) -> None:
    leaves = [leaf_hash(d) for d in data]
    root = merkle_root(leaves)
    assert root == naive_mth(data)
    frontier: list[bytes] = []
    for size, leaf in enumerate(leaves):
        frontier = frontier_append(frontier, size, leaf)
        assert frontier_root(frontier) == naive_mth(data[: size + 1])
    n = len(leaves)
    for i in range(n):
        proof = inclusion_proof(i, leaves)
        assert proof == naive_path(i, data)
        assert verify_inclusion(i, n, leaves[i], proof, root)
        assert not verify_inclusion(i, n, leaf_hash(data[i] + b"!"), proof, root)
        if n > 1:
            assert not verify_inclusion((i + 1) % n, n, leaves[i], proof, root) or leaves[i] == leaves[(i + 1) % n]
        if proof:
            assert not verify_inclusion(i, n, leaves[i], proof[:-1], root)
            bent = [*proof[:-1], bytes([proof[-1][0] ^ 1]) + proof[-1][1:]]
            assert not verify_inclusion(i, n, leaves[i], bent, root)


@settings(max_examples=120, deadline=None)
@given(data=data_lists)
def test_every_consistency_proof(data: list[bytes]) -> None:
    leaves = [leaf_hash(d) for d in data]
    n = len(leaves)
    root = merkle_root(leaves)
    for m in range(0, n + 1):
        proof = consistency_proof(m, leaves)
        assert proof == naive_proof(m, data)
        first = merkle_root(leaves[:m])
        assert verify_consistency(m, n, first, root, proof)
        if 0 < m < n:
            # a different history of the first m leaves cannot be proved consistent
            forged = merkle_root([leaf_hash(b"forged"), *leaves[1:m]])
            assert not verify_consistency(m, n, forged, root, proof)
            assert not verify_consistency(m, n, first, node_hash(root, root), proof)
            if proof:
                assert not verify_consistency(m, n, first, root, proof[1:])


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 100, 257])
def test_many_sizes_deterministic(size: int) -> None:
    leaves = [leaf_hash(str(i).encode()) for i in range(size)]
    root = merkle_root(leaves)
    for i in {0, size // 3, size // 2, size - 1}:
        assert verify_inclusion(i, size, leaves[i], inclusion_proof(i, leaves), root)
    for m in {1, size // 2, size - 1, size}:
        assert verify_consistency(m, size, merkle_root(leaves[:m]), root, consistency_proof(m, leaves))


def test_out_of_range_requests_are_errors() -> None:
    leaves = [leaf_hash(b"a")]
    with pytest.raises(DbomError):
        inclusion_proof(1, leaves)
    with pytest.raises(DbomError):
        consistency_proof(2, leaves)
    with pytest.raises(DbomError):
        frontier_append([], 1, leaves[0])
    assert not verify_inclusion(1, 1, leaves[0], [], leaves[0])
    assert not verify_consistency(2, 1, leaves[0], leaves[0], [])


def test_every_size_up_to_80_against_the_naive_model() -> None:
    data = [i.to_bytes(2, "big") for i in range(80)]
    for n in range(1, 81):
        d = data[:n]
        leaves = [leaf_hash(x) for x in d]
        root = merkle_root(leaves)
        assert root == naive_mth(d)
        for i in range(n):
            assert inclusion_proof(i, leaves) == naive_path(i, d)
        for m in range(n + 1):
            proof = consistency_proof(m, leaves)
            assert proof == naive_proof(m, d)
            assert verify_consistency(m, n, naive_mth(d[:m]), root, proof)
