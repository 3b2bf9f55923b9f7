# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/ort_baseline.py against the card's reference: the ONNX model it
builds from `aic100-compile --export` is the same int8 network. Runs in the
Debian 13 root of scripts/ort-root when that root has been made (bench/run
makes it); skipped otherwise, saying so."""

import glob
import json
import os
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("AIC100_CACHE", Path.home() / ".cache" / "aic100-virt"))
COMPILE = TOP / "build" / "cmake" / "tools" / "aic100-compile"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the ONNX Runtime root needs root (chroot)"),
    pytest.mark.skipif(not glob.glob(str(CACHE / "ort-root" / "trixie-ort-*" / ".complete")),
                       reason="no ONNX Runtime root: scripts/ort-root makes it"),
    pytest.mark.skipif(not COMPILE.exists(), reason="no aic100-compile: make build"),
]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    d = tmp_path_factory.mktemp("ort")
    net = d / "resnet50-32"
    subprocess.run([str(COMPILE), "--resolution", "32", "--export", str(net)], check=True,
                   capture_output=True, timeout=120)
    p = subprocess.run([str(TOP / "scripts" / "ort-root"), "--bind", str(d), "--bind", str(TOP / "bench"), "--",
                        "python3", str(TOP / "bench" / "ort_baseline.py"), str(net), "--threads", "1",
                        "--count", "4", "--json", str(d / "ort.json")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads((d / "ort.json").read_text()), p.stdout + p.stderr


def test_each_layer_is_within_one_of_the_card(baseline):
    result, _ = baseline
    assert result["layer_by_layer"]["max_diff"] <= 1
    assert result["layer_by_layer"]["values"] > 0


def test_the_whole_network_picks_the_cards_class(baseline):
    result, out = baseline
    for o in result["runs"][0]["outputs"]:
        assert o["top1_equal"], out
    assert result["runs"][0]["inf_per_s"] > 0


def test_no_schema_noise_reaches_the_output(baseline):
    _, out = baseline
    assert "Schema error" not in out
