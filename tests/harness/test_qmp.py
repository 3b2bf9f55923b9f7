# SPDX-License-Identifier: GPL-2.0-or-later
"""Fault injection from the QEMU monitor: SYS_ERR through QMP (qom-set of the
card's 'inject' property) while the guest waits for the card to recover; a
RAS event and a sensor value through QMP as the guest sees them in sysfs."""

import json
import re
import socket
import subprocess
import time

from conftest import BUILD, TOP, sanitizer_report

ROUNDS = 3


class Qmp:
    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(str(path))
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.file = self.sock.makefile("rw")
        json.loads(self.file.readline())  # greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        self.file.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        self.file.flush()
        while True:
            msg = json.loads(self.file.readline())
            if "event" not in msg:
                return msg

    def close(self):
        self.sock.close()


def test_syserr_injected_over_qmp_recovers(tmp_path):
    sock = tmp_path / "qmp.sock"
    cmd = [str(TOP / "scripts" / "vm-run"), "--qmp", str(sock), "--log", str(BUILD / "vm" / "serial-qmp.log"),
           "--timeout", "600", "--", str(TOP / "tests" / "guest" / "await-recovery"), str(ROUNDS)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    qmp = None
    out = []
    states = []
    try:
        for line in proc.stdout:
            out.append(line)
            if line.startswith("ready "):
                qmp = qmp or Qmp(sock)
                states.append(qmp.cmd("qom-get", path="/machine/peripheral/aic0", property="state")["return"])
                r = qmp.cmd("qom-set", path="/machine/peripheral/aic0", property="inject", value="syserr")
                assert "error" not in r, r
                bad = qmp.cmd("qom-set", path="/machine/peripheral/aic0", property="inject", value="nonsense")
                assert "unknown fault" in bad["error"]["desc"], bad
    finally:
        if qmp:
            qmp.close()
        proc.wait(timeout=60)
    text = "".join(out)
    assert sanitizer_report(text) is None, sanitizer_report(text)[:12000]
    assert proc.returncode == 0, text[-3000:]
    assert all(f"recovered {k}" in text for k in range(1, ROUNDS + 1)), text[-3000:]
    assert states and all(s == "ee=AMSS state=M0 stage=amss" for s in states), states


SOC_TEMP = 81234  # m°C: below the 95 °C warning threshold, so no TSENS event of its own


def test_ras_and_sensor_injected_over_qmp_reach_the_guest(tmp_path):
    sock = tmp_path / "qmp.sock"
    cmd = [str(TOP / "scripts" / "vm-run"), "--qmp", str(sock), "--log",
           str(BUILD / "vm" / "serial-qmp-health.log"), "--timeout", "600", "--",
           str(TOP / "tests" / "guest" / "await-health"), str(SOC_TEMP)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    card = "/machine/peripheral/aic0"
    qmp = None
    out = []
    ce0 = None
    try:
        for line in proc.stdout:
            out.append(line)
            if m := re.match(r"ready ce_count=(\d+)", line):
                ce0 = int(m.group(1))
                qmp = Qmp(sock)
                for value in ("ras ce source=ddr addr=0x1234000", f"sensor soc_temp={SOC_TEMP}"):
                    r = qmp.cmd("qom-set", path=card, property="inject", value=value)
                    assert "error" not in r, (value, r)
                # Refused, with the card's reason, and nothing changes.
                bad = qmp.cmd("qom-set", path=card, property="inject", value="sensor soc_temp=999999")
                assert "-40000..200000" in bad["error"]["desc"], bad
                bad = qmp.cmd("qom-set", path=card, property="inject", value="ras ce source=nowhere")
                assert "source=nowhere" in bad["error"]["desc"], bad
            elif line.startswith("temp2_input "):
                r = qmp.cmd("qom-set", path=card, property="inject", value="sensor soc_temp=auto")
                assert "error" not in r, r
    finally:
        if qmp:
            qmp.close()
        proc.wait(timeout=60)
    text = "".join(out)
    assert sanitizer_report(text) is None, sanitizer_report(text)[:12000]
    assert proc.returncode == 0, text[-3000:]
    assert ce0 is not None, text[-3000:]
    # Exactly the one CE, logged with its source and address.
    assert f"ce_count {ce0 + 1}\n" in text, text[-3000:]
    assert re.search(r"ras: qaic \S+: RAS event \d+: corrected error in DDR .*address 0x1234000", text), text[-3000:]
    assert f"temp2_input {SOC_TEMP}\n" in text, text[-3000:]
    model = re.search(r"model temp2_input (-?\d+)", text)
    assert model and int(model.group(1)) != SOC_TEMP, text[-3000:]


IDLE_DONE_TEMP = 71234  # m°C: the host's "seen it" signal to the guest


def test_idle_card_is_moved_to_m2_and_woken_by_the_hosts_mhi_stack(tmp_path):
    """The card goes idle (M1) on command; the kernel's MHI stack answers
    with M2 (mhi_pm_m1_transition) and wakes it to M0 with its next doorbell
    (qaic's periodic timesync at the latest)."""
    sock = tmp_path / "qmp.sock"
    cmd = [str(TOP / "scripts" / "vm-run"), "--qmp", str(sock), "--log",
           str(BUILD / "vm" / "serial-qmp-idle.log"), "--timeout", "600", "--",
           str(TOP / "tests" / "guest" / "await-idle"), str(IDLE_DONE_TEMP)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    card = "/machine/peripheral/aic0"
    qmp = None
    out = []
    seen = []
    try:
        for line in proc.stdout:
            out.append(line)
            if line.startswith("ready"):
                qmp = Qmp(sock)
                r = qmp.cmd("qom-set", path=card, property="inject", value="idle")
                assert "error" not in r, r
                again = qmp.cmd("qom-set", path=card, property="inject", value="idle now")
                assert "takes no arguments" in again["error"]["desc"], again
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    state = qmp.cmd("qom-get", path=card, property="state")["return"]
                    if not seen or seen[-1] != state:
                        seen.append(state)
                    if "state=M2" in "".join(seen) and state == "ee=AMSS state=M0 stage=amss":
                        break
                    time.sleep(0.002)
                r = qmp.cmd("qom-set", path=card, property="inject", value=f"sensor soc_temp={IDLE_DONE_TEMP}")
                assert "error" not in r, r
    finally:
        if qmp:
            qmp.close()
        proc.wait(timeout=60)
    text = "".join(out)
    assert sanitizer_report(text) is None, sanitizer_report(text)[:12000]
    assert proc.returncode == 0, text[-3000:]
    assert "done\n" in text, text[-3000:]
    assert "ee=AMSS state=M2 stage=amss" in seen, seen
    assert seen[-1] == "ee=AMSS state=M0 stage=amss", seen
