# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/engine_profile.py on profiles made here in aic100-compile
--profile's format, with round numbers: the figures below are worked out by
hand."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
SCRIPT = TOP / "bench" / "engine_profile.py"


def times(gemm=0.0, move=0.0, elementwise=0.0, wait=0.0, other=0.0):
    return {"gemm": gemm, "move": move, "elementwise": elementwise, "wait": wait, "other": other}


# 10 inferences in 1 s on 2 NSPs, one thread each. Per inference the two
# threads spend 100 ms: 40 GEMM, 10 moving, 20 elementwise, 20 waiting, 10
# other; the GEMMs do 4 G MACs, 8 GOP in 40 ms: 200 GOP/s.
PROFILE = {
    "resolution": 64, "nsps": 2, "host_threads": 2, "inferences": 10, "seconds": 1.0, "inferences_per_s": 10.0,
    "threads": [
        {"thread": 0, "nsps": [0], "wall": 1.0, "cpu": 0.9, "idle": 0.0, "gemm_macs": 2_000_000_000,
         **times(0.2, 0.05, 0.1, 0.1, 0.05)},
        {"thread": 1, "nsps": [1], "wall": 1.0, "cpu": 0.9, "idle": 0.0, "gemm_macs": 2_000_000_000,
         **times(0.2, 0.05, 0.1, 0.1, 0.05)},
    ],
    "nsp_times": [{"nsp": 0, **times(0.2, 0.05, 0.1, 0.1)}, {"nsp": 1, **times(0.2, 0.05, 0.1, 0.1)}],
    "layers": [
        {"name": "conv1", "kind": "Conv", "macs": 1_000_000_000, "gemm_macs": 1_000_000_000,
         **times(0.1, 0.1, 0.1, 0.1)},
        {"name": "layer1.0.conv1", "kind": "Conv", "macs": 1_000_000_000, "gemm_macs": 1_000_000_000,
         **times(0.1, 0.0, 0.1, 0.1)},
        {"name": "layer1.0.conv2", "kind": "Conv", "macs": 2_000_000_000, "gemm_macs": 2_000_000_000,
         **times(0.2, 0.0, 0.0, 0.2)},
        {"name": "(loop)", "kind": "loop", "macs": 0, "gemm_macs": 0, **times(other=0.1)},
        {"name": "(switching)", "kind": "threads", "macs": 0, "gemm_macs": 0, **times()},
    ],
    "ops": {"MMI8": {"seconds": 0.4, "count": 30}},
    "totals": {"macs": 4_000_000_000, "gemm_macs": 4_000_000_000, **times(0.4, 0.1, 0.2, 0.2, 0.1)},
}


def run(tmp_path, *args):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(PROFILE))
    p = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "svg"), *args, str(path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_summary_shares_and_gemm_rate_against_the_ceiling(tmp_path):
    md = run(tmp_path, "--ceiling", "400")
    assert "| 64×64, 2 NSPs | 2 | 10.0 | 100.00 | 40 % | 10 % | 20 % | 20 % | 10 % | 200 | 50 % |" in md


def test_threads_and_layers_in_ms_per_inference(tmp_path):
    md = run(tmp_path)
    assert "| 0 | 0 | 100.00 | 90.00 | 0.00 | 20.00 | 5.00 | 10.00 | 10.00 | 5.00 |" in md
    # conv1: 1 G MACs, 2 GOP in 10 ms.
    assert "| conv1 | 1000.0 | 10.00 | 10.00 | 10.00 | 10.00 | 0.00 | 40.00 | 200 |" in md
    assert "| (loop) | 0.0 | 0.00 | 0.00 | 0.00 | 0.00 | 10.00 | 10.00 | – |" in md
    assert "(switching)" not in md  # no time: no row


def test_by_stage_merges_layers_by_the_first_part_of_their_name(tmp_path):
    md = run(tmp_path, "--by-stage")
    # layer1: 3 G MACs, 6 GOP in 30 ms.
    assert "| layer1 | 3000.0 | 30.00 | 0.00 | 10.00 | 30.00 | 0.00 | 70.00 | 200 |" in md


def test_svg_has_a_stacked_bar_per_layer(tmp_path):
    md = run(tmp_path)
    svg = tmp_path / "svg" / "profile-64-2nsp.svg"
    assert "![64×64, 2 NSPs](profile-64-2nsp.svg)" in md
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
    titles = [r.find(ns + "title").text for r in bars]
    # conv1 has four kinds, layer1.0.conv1 three, conv2 two, the loop one.
    assert len(bars) == 10
    assert "conv1 gemm: 10.000 ms" in titles
    # Stacked: conv1's bars touch end to end, each 10 ms wide.
    conv1 = [r for r in bars if r.find(ns + "title").text.startswith("conv1 ")]
    xs = [float(r.get("x")) for r in conv1]
    ws = [float(r.get("width")) for r in conv1]
    assert all(abs(xs[i] + ws[i] - xs[i + 1]) < 0.01 for i in range(len(xs) - 1))
    assert max(ws) - min(ws) < 0.01
