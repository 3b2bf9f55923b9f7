# SPDX-License-Identifier: GPL-2.0-or-later
"""A build that scripts/test started beside the tests (lib.sh's
start_beside): the harness knows its shell's process, the leader of a
session of its own, to stop it, and the read end of a pipe that only that
shell writes to, "STATUS SECONDS" as it ends. Reading the pipe to its end
is waiting for the build: no process id can be mistaken for another's,
and nothing polls."""
import os
import signal
import threading
import time
from pathlib import Path


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
        """Stops the build and everything it started (its own session)."""
        if self.pid and not self.ended.is_set():
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.ended.wait()
