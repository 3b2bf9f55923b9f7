#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of QEMU's generic-fuzz on the aic100 card (make qemu-fuzz).

generic-fuzz reads an input as commands separated by "FUZZ"; the first byte
of each picks the operation (modulo 10), the rest are its packed, native
(x86-64) arguments. The MMIO region a write goes to is an index into the
regions the fuzzer found (modulo their count), so each seed says the same
thing to every region index 0..7: one of them is a card's BAR0 or BAR2.

Usage: make_seeds.py OUT_DIR
"""
import pathlib
import struct
import sys

OP_WRITE, OP_ADD_DMA_PATTERN, OP_CLOCK_STEP = 3, 7, 9
SEP = b"FUZZ"
REGIONS = range(8)


def write32(base, offset, value):
    # struct { u8 size; u8 base; (2 pad) u32 offset; u64 value; }, size 2 = Long
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", 2, base, offset, value)


def dma_pattern(data):
    return bytes([OP_ADD_DMA_PATTERN]) + struct.pack("<BB", 0, 1) + data


def clock_step():
    return bytes([OP_CLOCK_STEP])


def mhi_to_m0(base):
    """Contexts at 0x100000.., 32-element event ring, then M0 (scripts/qtest does the same)."""
    ops = [write32(base, 0x58, 0x100000), write32(base, 0x60, 0x101000), write32(base, 0x68, 0x102000),
           write32(base, 0x10, 1 << 16), write32(base, 0x800, 0x103000 + 31 * 16), write32(base, 0x38, 2 << 8)]
    return ops


def seed_mhi_m0():
    # What the card reads back when it fetches contexts: an event ring
    # context with rbase 0x103000, rlen 512 (a DMA pattern serves reads).
    ctx = struct.pack("<IIIQQQQ", 0, 1, 0, 0x103000, 512, 0x103000, 0x103000 + 31 * 16)
    ops = [dma_pattern(ctx)]
    for base in REGIONS:
        ops += mhi_to_m0(base) + [clock_step()]
    return SEP.join(ops)


def seed_soc_reset():
    ops = []
    for base in REGIONS:
        ops += mhi_to_m0(base) + [write32(base, 0xB0, 0x1), clock_step()]
    return SEP.join(ops)


def seed_dbc_doorbells():
    ops = [dma_pattern(bytes(range(32)))]
    for base in REGIONS:
        for dbc in range(2):
            reg = 0x20000 + dbc * 0x1000
            ops += [write32(base, reg + 0x4, 1), write32(base, reg + 0x8, 1), clock_step()]
    return SEP.join(ops)


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, make in (("mhi-m0", seed_mhi_m0), ("soc-reset", seed_soc_reset), ("dbc-doorbells", seed_dbc_doorbells)):
        (out / name).write_bytes(make())


if __name__ == "__main__":
    main()
