#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Reproducer for docs/qemu-bugs.md, 0005: QEMU's vfio-user client aborts
when its server goes with a request unread.

A vfio-user server (this script, no device behind it) answers QEMU's
VERSION, waits until QEMU's next request has arrived, and closes the
socket without reading it, as a server that crashes or is killed does.
Linux then fails QEMU's next read with ECONNRESET (a UNIX stream socket
closed with data in its receive queue), and QEMU 11.1.3's
vfio_user_recv_hdr() sets its Error twice: qio_channel_readv_full() has
set it, error_setg_errno() asserts. Expected: an error ("failed to read
header: Connection reset by peer" or so) and realize failing, or the VM
running without the device.

Usage: vfio_user_reset_abort.py QEMU_COMMAND...
       (e.g. qemu-system-x86_64, or scripts/stock-qemu-root --print-qemu's
       lines). Exit 0: QEMU exited without a signal (fixed); 1: QEMU died of
       a signal (the bug), with its stderr; 2: the exchange did not go as
       planned."""

import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile

HDR = struct.Struct("<HHIII")  # id, command, size, flags, error
VERSION, REPLY = 1, 1


def read_message(conn):
    head = conn.recv(HDR.size, socket.MSG_WAITALL)
    if len(head) != HDR.size:
        return None, None
    size = HDR.unpack(head)[2]
    body = conn.recv(size - HDR.size, socket.MSG_WAITALL) if size > HDR.size else b""
    return HDR.unpack(head), body


def answer_version(conn, mid):
    # Shorter than QEMU's own JSON, so it fits the buffer QEMU reads it into.
    caps = json.dumps({"capabilities": {"max_msg_fds": 8, "max_data_xfer_size": 1 << 20}}).encode() + b"\0"
    payload = struct.pack("<HH", 0, 0) + caps
    conn.sendall(HDR.pack(mid, VERSION, HDR.size + len(payload), REPLY, 0) + payload)


def serve_once(listener):
    """VERSION answered, the next request left unread, the socket closed:
    returns the command left unread, or None."""
    conn, _ = listener.accept()
    with conn:
        header, body = read_message(conn)
        if not header or header[1] != VERSION:
            return None
        answer_version(conn, header[0])
        ready, _, _ = select.select([conn], [], [], 30)
        if not ready:
            return None
        return HDR.unpack(conn.recv(HDR.size, socket.MSG_PEEK | socket.MSG_WAITALL))[1]
    # leaving the with-block closes the socket, the request still queued


def main(qemu):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "card.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        cmd = [*qemu, "-machine", "q35", "-accel", "tcg", "-nodefaults", "-display", "none",
               "-device", json.dumps({"driver": "vfio-user-pci", "socket": {"path": path, "type": "unix"}})]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        unread = serve_once(listener)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            print("QEMU kept running after its server went (no abort): fixed, or the device is optional now")
            return 0
    if unread is None:
        print(f"the exchange did not go as planned; QEMU said:\n{err}")
        return 2
    print(f"server closed with QEMU's command {unread} unread; QEMU exited {proc.returncode}")
    print(err.strip())
    return 1 if proc.returncode < 0 else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
