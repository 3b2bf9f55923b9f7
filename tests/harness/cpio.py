# SPDX-License-Identifier: GPL-2.0-or-later
"""An initramfs as the kernel unpacks it: a gzip'ed cpio archive in the
"newc" format (the kernel's Documentation/driver-api/early-userspace/
buffer-format.rst), written here rather than by cpio(1) so that making one
needs no root (its /dev/console node) and the same inputs give the same
bytes (every time stamp 0, entries in path order)."""

import gzip
import lzma
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

MAGIC = b"070701"


class Tree:
    """Guest path -> what is there: ("file", host path, mode), ("bytes",
    data, mode), ("dir",), ("symlink", target), ("node", major, minor)."""

    def __init__(self):
        self.entries = {}

    def _put(self, path, entry):
        path = "/" + str(path).strip("/")
        parent = str(Path(path).parent)
        while parent != "/" and parent not in self.entries:
            self.entries[parent] = ("dir",)
            parent = str(Path(parent).parent)
        self.entries[path] = entry

    def add_dir(self, path):
        self._put(path, ("dir",))

    def add_file(self, path, source, mode=0o644):
        self._put(path, ("file", Path(source).resolve(), mode))

    def add_bytes(self, path, data, mode=0o644):
        self._put(path, ("bytes", data, mode))

    def add_symlink(self, path, target):
        self._put(path, ("symlink", target))

    def add_node(self, path, major, minor):
        self._put(path, ("node", major, minor))

    def add_tree(self, path, source):
        """A host file, or a folder with all it holds, at path."""
        source = Path(source)
        if not source.is_dir():
            self.add_file(path, source, mode=stat.S_IMODE(source.stat().st_mode))
            return
        self.add_dir(path)
        for p in sorted(source.rglob("*")):
            if p.is_file():
                self.add_file(f"{path}/{p.relative_to(source)}", p, mode=stat.S_IMODE(p.stat().st_mode))

    def add_module(self, path, source):
        """A kernel module, uncompressed: modprobe in the guest then needs
        no decompressor, whatever the kernel's packaging chose."""
        source = Path(source)
        if source.suffix == ".xz":
            self._put(path.removesuffix(".xz"), ("bytes", lzma.decompress(source.read_bytes()), 0o644))
        elif source.suffix == ".zst":
            data = subprocess.run(["zstd", "-dc", str(source)], capture_output=True, check=True).stdout
            self._put(path.removesuffix(".zst"), ("bytes", data, 0o644))
        else:
            self.add_file(path, source)

    def data(self, entry):
        kind = entry[0]
        if kind == "file":
            return entry[1].read_bytes()
        if kind == "bytes":
            return entry[1]
        if kind == "symlink":
            return entry[1].encode()
        return b""

    def depmod(self, release):
        """Runs depmod over the tree's modules of `release` and adds its
        indexes, so that modprobe in the guest finds them by name."""
        prefix = f"/lib/modules/{release}/"
        with tempfile.TemporaryDirectory() as tmp:
            for path, entry in self.entries.items():
                if path.startswith(prefix) and entry[0] in ("file", "bytes"):
                    out = Path(tmp + path)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(self.data(entry))
            subprocess.run(["depmod", "-b", tmp, release], check=True, capture_output=True)
            for made in sorted(Path(tmp + prefix).glob("modules.*")):
                if prefix + made.name not in self.entries:
                    self.add_bytes(prefix + made.name, made.read_bytes())

    def write(self, out):
        """The gzip'ed newc archive, to the file `out`."""
        tmp = Path(f"{out}.tmp")
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=1, mtime=0) as z:
            for ino, path in enumerate(sorted(self.entries), start=1):
                entry = self.entries[path]
                data = self.data(entry)
                z.write(_header(ino, path[1:], entry, len(data)))
                z.write(data + b"\0" * (-len(data) % 4))
            z.write(_header(0, "TRAILER!!!", ("dir",), 0, mode=0))
        shutil.move(tmp, out)


def _mode(entry):
    kind = entry[0]
    if kind == "dir":
        return stat.S_IFDIR | 0o755
    if kind == "symlink":
        return stat.S_IFLNK | 0o777
    if kind == "node":
        return stat.S_IFCHR | 0o600
    return stat.S_IFREG | entry[2]


def _header(ino, name, entry, size, mode=None):
    rdev = entry[1:3] if entry[0] == "node" else (0, 0)
    name_bytes = name.encode() + b"\0"
    fields = (ino, _mode(entry) if mode is None else mode, 0, 0, 2 if entry[0] == "dir" else 1, 0, size,
              0, 0, rdev[0], rdev[1], len(name_bytes), 0)
    head = MAGIC + b"".join(b"%08X" % f for f in fields) + name_bytes
    return head + b"\0" * (-len(head) % 4)
