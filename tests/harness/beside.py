# SPDX-License-Identifier: GPL-2.0-or-later
"""A build that scripts/test started beside the tests (lib.sh's
start_beside): the harness knows its shell's process, the leader of a
session of its own, to stop it, and the read end of a pipe that only that
shell writes to, "STATUS SECONDS" as it ends. Reading the pipe to its end
is waiting for the build: no process id can be mistaken for another's,
and nothing polls."""
import os
import select
import signal
import threading
import time
from pathlib import Path


def _running_members(pgid):
    """The processes of process group `pgid` that have not exited yet."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def _wait_exited(pids, limit_s=60):
    """Returns once each of `pids` has exited (its pidfd readable), or
    after limit_s: a process stuck in the kernel is not waited for forever."""
    poll, fds = select.poll(), []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue
        poll.register(fds[-1], select.POLLIN)
    deadline = time.monotonic() + limit_s
    try:
        left = len(fds)
        while left and time.monotonic() < deadline:
            for fd, _ in poll.poll(1000 * (deadline - time.monotonic())):
                poll.unregister(fd)
                left -= 1
    finally:
        for fd in fds:
            os.close(fd)


class BesideBuild:
    def __init__(self, log: Path):
        self.log = log
        self.pid, self.status, self.took, self.ended = None, None, 0, threading.Event()

    def adopt(self, pid, fd):
        self.pid, self.began = pid, time.monotonic()
        threading.Thread(target=self._reap, args=(fd,), daemon=True).start()

    def _reap(self, fd):
        with os.fdopen(fd) as pipe:
            words = pipe.read().split()  # at EOF: the build's shell has ended
        # Nothing said: the shell was killed.
        self.status, self.took = (int(words[0]), int(words[1])) if len(words) == 2 else (-signal.SIGKILL, 0)
        self.ended.set()

    def wait(self, heartbeat_s, limit_s, tell):
        """The build's exit status, once it has ended; every heartbeat_s
        until then, tell(seconds waited, the log's last line); stopped past
        limit_s."""
        while not self.ended.wait(heartbeat_s):
            waited = time.monotonic() - self.began
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            tell(waited, (text.strip().splitlines()[-1:] or ["(no output yet)"])[0])
            if waited > limit_s:
                self.stop()
        return self.status

    def stop(self):
        """Stops the build and everything it started (its own session);
        returns once all of it has exited. The pipe's end says only that
        the shell went: the rest of the group may still be on its way out
        (a killed process exits when it next runs, later on a busy host)."""
        if self.pid and not self.ended.is_set():
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.ended.wait()
            # Killed, none of them can start another: those left are all.
            _wait_exited(_running_members(self.pid))
