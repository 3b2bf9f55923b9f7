# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/umd/runs.py: the qaic-runner runs of scripts/umd-test. `prepare`
cuts each reference into the QPC's tensors (sizes from aic100-qpc
--inspect, here a stand-in that prints the same lines) and refuses QPCs it
cannot check; `check` passes only outputs that match their reference for
every inference and runs that exited 0."""

import os
import struct
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[3]
RUNS = TOP / "scripts" / "umd" / "runs.py"

# The lines of aic100-qpc --inspect that runs.py reads, for a QPC with
# inputs x and y (16 bytes each) and output z (16 bytes).
INSPECT = """network.elf (.aic.meta): name "t", 1 NSPs, window 0x8000, entry 0, const_offset 0x0, 1 instructions, 0 data segments
networkdesc.bin: version 9.0, name "t", 1 cores, 1 threads (1 HVX), batch 1
  input  x        FloatTy[4] scale 1 offset 0, DMA buffer 0 +0, align 4
  input  y        FloatTy[4] scale 1 offset 0, DMA buffer 1 +0, align 4
  output z        FloatTy[4] scale 1 offset 0, DMA buffer 2 +0, align 4
  DMA buffer 0: 16 bytes in
  DMA buffer 1: 16 bytes in
  DMA buffer 2: 16 bytes out
"""


def runs_py(*args):
    return subprocess.run([sys.executable, str(RUNS), *args], capture_output=True, text=True)


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


# What --inspect adds for a QPC the open UMD refuses to run.
REFUSED = "open UMD: loads this program but refuses to run it (input x has 2 transforms)\n"


def make_tree(tmp, compare="f32", tolerance=1e-5, test_data_pairs=False, same_qpc=True, network=True,
              network_pairs=True):
    tool = tmp / "fake-qpc"
    # A QPC whose bytes start with QPC-float is one the UMD refuses.
    tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{INSPECT}EOF\n"
                    f"case \"$(cat \"$2\")\" in QPC-float*) printf '%s\\n' '{REFUSED.strip()}' ;; esac\n")
    tool.chmod(0o755)
    nw = tmp / "nw" / "t"
    nw.mkdir(parents=True)
    if network:
        (nw / "programqpc.bin").write_bytes(b"QPC-t")
        if network_pairs:
            (nw / "input.0.bin").write_bytes(f32(1, 1, 1, 1) + f32(2, 2, 2, 2))
            (nw / "output.0.bin").write_bytes(f32(3, 3, 3, 3))
            (nw / "input.1.bin").write_bytes(f32(5, 5, 5, 5) + f32(2, 2, 2, 2))
            (nw / "output.1.bin").write_bytes(f32(7, 7, 7, 7))
    wl = tmp / "wl"
    wl.mkdir()
    (wl / "workloads.json").write_text(
        '{"workloads": [{"name": "add", "compare": "%s", "tolerance": %g, '
        '"sample_input": "add.input.bin", "sample_output": "add.output.bin"}]}' % (compare, tolerance))
    (wl / "add.input.bin").write_bytes(f32(1, 2, 3, 4) + f32(10, 20, 30, 40))
    (wl / "add.output.bin").write_bytes(f32(11, 22, 33, 44))
    (tmp / "ex" / "add").mkdir(parents=True)
    (tmp / "ex" / "add" / "programqpc.bin").write_bytes(b"QPC-add")
    td = tmp / "td" / "aic100" / "v2" / "4nsp" / "net"
    td.mkdir(parents=True)
    (td / "programqpc.bin").write_bytes(b"QPC-add" if same_qpc else b"QPC-other")
    if test_data_pairs:
        (td / "input.0.bin").write_bytes(f32(0, 0, 0, 0) + f32(1, 1, 1, 1))
        (td / "output.0.bin").write_bytes(f32(1, 1, 1, 1))
    return tool


def prepare(tmp, tool):
    return runs_py("prepare", "--qpc-tool", str(tool), "--workloads", str(tmp / "wl"), "--examples",
                   str(tmp / "ex"), "--test-data", str(tmp / "td"), "--networks", str(tmp / "nw"), "--runs",
                   str(tmp / "runs"))


def write_outputs(out, run, values, inferences=2, rc="0"):
    d = out / run
    d.mkdir(parents=True, exist_ok=True)
    (d / "rc").write_text(rc + "\n")
    for i in range(inferences):
        (d / f"z-inf-{i}.bin").write_bytes(f32(*values))


def check(tmp, inferences=2):
    return runs_py("check", "--runs", str(tmp / "runs"), "--out", str(tmp / "out"), "--inferences", str(inferences))


def test_prepare_cuts_inputs_per_tensor_and_reuses_an_examples_reference(tmp_path):
    tool = make_tree(tmp_path)
    res = prepare(tmp_path, tool)
    assert res.returncode == 0, res.stderr
    ex = tmp_path / "runs" / "example-add"
    assert (ex / "in.0.bin").read_bytes() == f32(1, 2, 3, 4)
    assert (ex / "in.1.bin").read_bytes() == f32(10, 20, 30, 40)
    assert (ex / "expected.z.bin").read_bytes() == f32(11, 22, 33, 44)
    assert (ex / "compare").read_text().split() == ["f32", "1e-05"]
    td = tmp_path / "runs" / "test-data-aic100-v2-4nsp-net"
    assert (td / "expected.z.bin").read_bytes() == f32(11, 22, 33, 44)
    assert (td / "qpc").read_text().strip().endswith("aic100/v2/4nsp/net")


def test_prepare_uses_reference_pairs_next_to_a_test_data_qpc(tmp_path):
    tool = make_tree(tmp_path, test_data_pairs=True, same_qpc=False)
    res = prepare(tmp_path, tool)
    assert res.returncode == 0, res.stderr
    d = tmp_path / "runs" / "test-data-aic100-v2-4nsp-net-0"
    assert (d / "in.1.bin").read_bytes() == f32(1, 1, 1, 1)
    assert (d / "compare").read_text().strip() == "exact"


def test_prepare_runs_each_networks_reference_pair(tmp_path):
    tool = make_tree(tmp_path)
    res = prepare(tmp_path, tool)
    assert res.returncode == 0, res.stderr
    for k, (x, want) in enumerate([(1, 3), (5, 7)]):
        d = tmp_path / "runs" / f"network-t-{k}"
        assert (d / "in.0.bin").read_bytes() == f32(x, x, x, x)
        assert (d / "expected.z.bin").read_bytes() == f32(want, want, want, want)
        assert (d / "compare").read_text().strip() == "exact"


def test_prepare_refuses_a_network_without_reference_pairs(tmp_path):
    tool = make_tree(tmp_path, network_pairs=False)
    res = prepare(tmp_path, tool)
    assert res.returncode == 1
    assert "nw/t/programqpc.bin: no reference pairs" in res.stderr


def test_prepare_refuses_a_network_copy_the_umd_will_not_run(tmp_path):
    tool = make_tree(tmp_path)
    (tmp_path / "nw" / "t" / "programqpc.bin").write_bytes(b"QPC-float-t")
    res = prepare(tmp_path, tool)
    assert res.returncode == 1
    assert "runnable copy is one the open UMD refuses to run (input x has 2 transforms)" in res.stderr


def test_prepare_gives_no_run_to_a_test_qpc_the_umd_refuses_but_runs_its_program(tmp_path):
    tool = make_tree(tmp_path)
    (tmp_path / "td" / "aic100" / "v2" / "4nsp" / "net" / "programqpc.bin").write_bytes(b"QPC-float-t")
    res = prepare(tmp_path, tool)
    assert res.returncode == 0, res.stderr
    assert "not run: aic100/v2/4nsp/net (the open UMD refuses to run it: input x has 2 transforms)" in res.stdout
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert runs == ["example-add", "network-t-0", "network-t-1"]


def test_prepare_refuses_a_test_qpc_the_umd_refuses_without_a_runnable_copy(tmp_path):
    tool = make_tree(tmp_path, network=False)
    (tmp_path / "td" / "aic100" / "v2" / "4nsp" / "net" / "programqpc.bin").write_bytes(b"QPC-float-t")
    res = prepare(tmp_path, tool)
    assert res.returncode == 1
    assert "has no runnable copy of its program t" in res.stderr


def test_prepare_refuses_a_qpc_without_a_reference(tmp_path):
    tool = make_tree(tmp_path, same_qpc=False)
    res = prepare(tmp_path, tool)
    assert res.returncode == 1
    assert "no reference pairs" in res.stderr


def test_prepare_refuses_a_reference_of_the_wrong_size(tmp_path):
    tool = make_tree(tmp_path)
    (tmp_path / "wl" / "add.output.bin").write_bytes(f32(1, 2, 3))
    res = prepare(tmp_path, tool)
    assert res.returncode == 1
    assert "12 bytes, the tensors take 16" in res.stderr


def test_check_passes_matching_outputs_within_the_tolerance(tmp_path):
    tool = make_tree(tmp_path)
    assert prepare(tmp_path, tool).returncode == 0
    for run in ("example-add", "test-data-aic100-v2-4nsp-net"):
        write_outputs(tmp_path / "out", run, (11, 22, 33, 44.0000001))
    write_outputs(tmp_path / "out", "network-t-0", (3, 3, 3, 3))
    write_outputs(tmp_path / "out", "network-t-1", (7, 7, 7, 7))
    res = check(tmp_path)
    assert res.returncode == 0, res.stdout
    assert res.stdout.count("ok ") == 4


def test_check_fails_an_output_beyond_the_tolerance(tmp_path):
    tool = make_tree(tmp_path, network=False)
    assert prepare(tmp_path, tool).returncode == 0
    write_outputs(tmp_path / "out", "example-add", (11, 22, 33, 44))
    write_outputs(tmp_path / "out", "test-data-aic100-v2-4nsp-net", (11, 22, 33.01, 44))
    res = check(tmp_path)
    assert res.returncode == 1
    assert "FAIL test-data-aic100-v2-4nsp-net: z-inf-0.bin: element 2" in res.stdout


def test_check_exact_fails_one_flipped_bit_in_a_later_inference(tmp_path):
    tool = make_tree(tmp_path, compare="exact", network=False)
    assert prepare(tmp_path, tool).returncode == 0
    for run in ("example-add", "test-data-aic100-v2-4nsp-net"):
        write_outputs(tmp_path / "out", run, (11, 22, 33, 44))
    last = tmp_path / "out" / "example-add" / "z-inf-1.bin"
    data = bytearray(last.read_bytes())
    data[5] ^= 1
    last.write_bytes(bytes(data))
    res = check(tmp_path)
    assert res.returncode == 1
    assert "FAIL example-add: z-inf-1.bin: first difference at byte 5" in res.stdout


def test_check_fails_a_run_that_exited_nonzero_or_wrote_too_few_inferences(tmp_path):
    tool = make_tree(tmp_path, network=False)
    assert prepare(tmp_path, tool).returncode == 0
    write_outputs(tmp_path / "out", "example-add", (11, 22, 33, 44), rc="1")
    write_outputs(tmp_path / "out", "test-data-aic100-v2-4nsp-net", (11, 22, 33, 44), inferences=1)
    res = check(tmp_path)
    assert res.returncode == 1
    assert "FAIL example-add: qaic-runner exit status 1" in res.stdout
    assert "z-inf-1.bin missing" in res.stdout
