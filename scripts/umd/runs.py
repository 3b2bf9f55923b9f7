#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The qaic-runner runs of scripts/umd-test: which QPCs, with which inputs,
and whether the outputs the UMD wrote are our references.

  runs.py prepare --qpc-tool T --workloads W --examples E --test-data D
                  --networks N --runs R
      one directory per run under R: `qpc` (the QPC's directory), the input
      files in the order of the QPC's inputs (in.N.bin), the expected output
      of each output tensor (expected.NAME.bin) and `compare` ("exact" or
      "f32 TOLERANCE")
  runs.py check --runs R --out O --inferences N
      compares O/NAME/TENSOR-inf-I.bin (what qaic-runner's
      --write-output-dir writes; a '/' in the name becomes '_') with the
      expected outputs; one line per run

Every QPC the open UMD will run gets a run: the examples (aic100-qpc
--examples, references from aic100-workloads), the compiled networks
(aic100-qpc --networks, with the reference pairs next to each: input.K.bin,
output.K.bin) and whatever aic100-qpc --umd-test-data writes. A test-data
QPC is checked against the reference pairs next to it or, when it is byte
for byte an example's QPC, against that example's references; a QPC with
neither is an error. The exception is a test-data QPC that the UMD refuses
to run by design (--inspect says so: the API test
AdversarialInvalidPPPTransform needs one, docs/umd-compat.md, section 5):
it gets no run, and its program must have a runnable copy among the
networks, which does.
"""
import argparse
import json
import pathlib
import re
import struct
import subprocess
import sys


def fail(msg):
    print(f"runs.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def inspect_text(tool, qpc):
    res = subprocess.run([tool, "--inspect", str(qpc)], capture_output=True, text=True)
    if res.returncode != 0:
        fail(f"aic100-qpc --inspect {qpc}: {res.stderr.strip()}")
    return res.stdout


def umd_refusal(text):
    """Why the open UMD refuses to run the QPC --inspect described, or None."""
    m = re.search(r"^open UMD: loads this program but refuses to run it \((.*)\)$", text, re.M)
    return m.group(1) if m else None


def program_name(text, qpc):
    m = re.search(r'^network\.elf \(\.aic\.meta\): name "([^"]*)"', text, re.M)
    if not m:
        fail(f"{qpc}: aic100-qpc --inspect shows no program name")
    return m.group(1)


def inspect(tool, qpc):
    """Input and output tensors of a QPC, in order: [(name, bytes)] each."""
    text = inspect_text(tool, qpc)
    tensors = {"input": [], "output": []}
    sizes = {}
    for line in text.splitlines():
        m = re.match(r"\s+(input|output)\s+(\S+)\s+\S+\[.*\].*DMA buffer (\d+) ", line)
        if m:
            tensors[m.group(1)].append((m.group(2), int(m.group(3))))
            continue
        m = re.match(r"\s+DMA buffer (\d+): (\d+) bytes (in|out)", line)
        if m:
            sizes[int(m.group(1))] = int(m.group(2))
    if not tensors["input"] or not tensors["output"]:
        fail(f"{qpc}: aic100-qpc --inspect shows no inputs or outputs")
    try:
        return ([(n, sizes[b]) for n, b in tensors["input"]], [(n, sizes[b]) for n, b in tensors["output"]])
    except KeyError as e:
        fail(f"{qpc}: a tensor names DMA buffer {e}, which the network descriptor lacks")


def split(data, tensors, what):
    """`data` cut into one piece per tensor, in order; its size must be theirs."""
    total = sum(size for _, size in tensors)
    if len(data) != total:
        fail(f"{what}: {len(data)} bytes, the tensors take {total}")
    pieces, at = [], 0
    for name, size in tensors:
        pieces.append((name, data[at:at + size]))
        at += size
    return pieces


def write_run(runs, name, qpc_dir, inputs, outputs, compare):
    d = runs / name
    d.mkdir(parents=True)
    (d / "qpc").write_text(str(qpc_dir) + "\n")
    for i, (_, data) in enumerate(inputs):
        (d / f"in.{i}.bin").write_bytes(data)
    for tname, data in outputs:
        (d / f"expected.{tname}.bin").write_bytes(data)
    (d / "compare").write_text(compare + "\n")


def prepare(args):
    runs = pathlib.Path(args.runs)
    if runs.exists() and any(runs.iterdir()):
        fail(f"{runs} is not empty")
    runs.mkdir(parents=True, exist_ok=True)
    wl = pathlib.Path(args.workloads)
    meta = {w["name"]: w for w in json.loads((wl / "workloads.json").read_text())["workloads"]}
    examples = {}
    for qpc in sorted(pathlib.Path(args.examples).glob("*/programqpc.bin")):
        name = qpc.parent.name
        if name not in meta:
            fail(f"{qpc}: no workload {name} in {wl / 'workloads.json'}")
        w = meta[name]
        ins, outs = inspect(args.qpc_tool, qpc)
        inputs = split((wl / w["sample_input"]).read_bytes(), ins, f"{name}'s sample input")
        outputs = split((wl / w["sample_output"]).read_bytes(), outs, f"{name}'s sample output")
        compare = "exact" if w["compare"] == "exact" else f"f32 {w['tolerance']}"
        examples[qpc.read_bytes()] = (inputs, outputs, compare, name)
        write_run(runs, f"example-{name}", qpc.parent, inputs, outputs, compare)
    if not examples:
        fail(f"no QPCs under {args.examples}")
    def pair_runs(qpc, tag):
        pairs = sorted(qpc.parent.glob("input.*.bin"))
        if not pairs:
            return False
        ins, outs = inspect(args.qpc_tool, qpc)
        for inp in pairs:
            k = inp.name[len("input."):-len(".bin")]
            out = qpc.parent / f"output.{k}.bin"
            if not out.exists():
                fail(f"{inp} has no {out.name}")
            write_run(runs, f"{tag}-{k}", qpc.parent, split(inp.read_bytes(), ins, str(inp)),
                      split(out.read_bytes(), outs, str(out)), "exact")
        return True

    runnable = {}
    for qpc in sorted(pathlib.Path(args.networks).glob("*/programqpc.bin")):
        text = inspect_text(args.qpc_tool, qpc)
        if umd_refusal(text):
            fail(f"{qpc}: a network's runnable copy is one the open UMD refuses to run ({umd_refusal(text)})")
        if not pair_runs(qpc, f"network-{qpc.parent.name}"):
            fail(f"{qpc}: no reference pairs (input.K.bin, output.K.bin) next to it")
        runnable[program_name(text, qpc)] = qpc.parent
    test_data = pathlib.Path(args.test_data)
    found = sorted(test_data.rglob("programqpc.bin"))
    if not found:
        fail(f"no QPCs under {test_data}")
    for qpc in found:
        rel = qpc.parent.relative_to(test_data)
        tag = "test-data-" + str(rel).replace("/", "-")
        text = inspect_text(args.qpc_tool, qpc)
        why = umd_refusal(text)
        if why:
            name = program_name(text, qpc)
            if name not in runnable:
                fail(f"{qpc}: the open UMD refuses to run it ({why}) and {args.networks} has no runnable "
                     f"copy of its program {name}")
            print(f"not run: {rel} (the open UMD refuses to run it: {why}); its program runs from "
                  f"{runnable[name]}")
            continue
        if pair_runs(qpc, tag):
            continue
        if qpc.read_bytes() in examples:
            inputs, outputs, compare, _ = examples[qpc.read_bytes()]
            write_run(runs, tag, qpc.parent, inputs, outputs, compare)
        else:
            fail(f"{qpc}: no reference pairs (input.K.bin, output.K.bin) next to it, and not an example's QPC")


def floats(b):
    return struct.unpack(f"<{len(b) // 4}f", b)


def check(args):
    runs, out = pathlib.Path(args.runs), pathlib.Path(args.out)
    bad = 0
    for d in sorted(p for p in runs.iterdir() if p.is_dir()):
        mode = (d / "compare").read_text().split()
        problems = []
        rc_file = out / d.name / "rc"
        rc = rc_file.read_text().strip() if rc_file.exists() else "missing"
        if rc != "0":
            problems.append(f"qaic-runner exit status {rc}")
        for exp in sorted(d.glob("expected.*.bin")):
            tname = exp.name[len("expected."):-len(".bin")]
            want = exp.read_bytes()
            for i in range(args.inferences):
                got_file = out / d.name / f"{tname.replace('/', '_')}-inf-{i}.bin"
                if not got_file.exists():
                    problems.append(f"{got_file.name} missing")
                    continue
                got = got_file.read_bytes()
                if len(got) != len(want):
                    problems.append(f"{got_file.name}: {len(got)} bytes, expected {len(want)}")
                elif mode[0] == "exact":
                    if got != want:
                        at = next(j for j in range(len(got)) if got[j] != want[j])
                        problems.append(f"{got_file.name}: first difference at byte {at}")
                else:
                    tol = float(mode[1])
                    for j, (g, w) in enumerate(zip(floats(got), floats(want))):
                        if not abs(g - w) <= tol * (1 + abs(w)):
                            problems.append(f"{got_file.name}: element {j} is {g}, expected {w}")
                            break
        if problems:
            bad += 1
            print(f"FAIL {d.name}: " + "; ".join(problems[:4]))
        else:
            print(f"ok   {d.name} ({args.inferences} inferences, outputs {' '.join(mode)})")
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    for opt in ("--qpc-tool", "--workloads", "--examples", "--test-data", "--networks", "--runs"):
        a.add_argument(opt, required=True)
    c = sub.add_parser("check")
    c.add_argument("--runs", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--inferences", type=int, required=True)
    args = p.parse_args()
    if args.cmd == "prepare":
        prepare(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
