"""Reads and re-signs hetnn's OpenCL binary cache entries (program_cache.cpp's format), so tests can write entries
that pass every check hetnn makes: with the cache's own secret, or with a recomputed plain checksum."""
import struct
from pathlib import Path

HEADER = struct.Struct("<8sIIQQQ")  # magic, format, reserved, key, length, mac
MASK = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & MASK


def siphash24(key: bytes, data: bytes) -> int:
    k0, k1 = struct.unpack("<QQ", key)
    v = [0x736F6D6570736575 ^ k0, 0x646F72616E646F6D ^ k1, 0x6C7967656E657261 ^ k0, 0x7465646279746573 ^ k1]

    def rnd() -> None:
        v[0] = (v[0] + v[1]) & MASK; v[1] = _rotl(v[1], 13) ^ v[0]; v[0] = _rotl(v[0], 32)  # noqa: E702
        v[2] = (v[2] + v[3]) & MASK; v[3] = _rotl(v[3], 16) ^ v[2]  # noqa: E702
        v[0] = (v[0] + v[3]) & MASK; v[3] = _rotl(v[3], 21) ^ v[0]  # noqa: E702
        v[2] = (v[2] + v[1]) & MASK; v[1] = _rotl(v[1], 17) ^ v[2]; v[2] = _rotl(v[2], 32)  # noqa: E702

    full = len(data) // 8 * 8
    words = list(struct.unpack(f"<{full // 8}Q", data[:full]))
    words.append(int.from_bytes(data[full:], "little") | ((len(data) & 0xFF) << 56))
    for m in words:
        v[3] ^= m
        rnd()
        rnd()
        v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def fnv1a(data: bytes) -> int:
    h = 1469598103934665603
    for x in data:
        h = ((h ^ x) * 1099511628211) & MASK
    return h


def sign(cache: Path, entry: bytes) -> bytes:
    """`entry` with its MAC recomputed under the cache's secret (`cache`/kernels/key)."""
    secret = (Path(cache) / "kernels" / "key").read_bytes()
    magic, fmt, reserved, key, length, _ = HEADER.unpack_from(entry)
    payload = entry[HEADER.size:]
    mac = siphash24(secret, struct.pack("<Q", key) + payload)
    return HEADER.pack(magic, fmt, reserved, key, len(payload), mac) + payload


def with_plain_checksum(entry: bytes) -> bytes:
    """`entry` with a checksum anyone can compute (FNV-1a of the payload) in the MAC's place."""
    magic, fmt, reserved, key, length, _ = HEADER.unpack_from(entry)
    payload = entry[HEADER.size:]
    return HEADER.pack(magic, fmt, reserved, key, len(payload), fnv1a(payload)) + payload
