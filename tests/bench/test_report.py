# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/report.py on a fixed bench/run folder (tests/bench/fixtures/run):
the Markdown it prints, bench.json and bench.svg. The fixture's figures are
round numbers, so every ratio below is worked out by hand."""

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
REPORT = TOP / "bench" / "report.py"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run"


def run_report(d):
    assert shutil.which("gnuplot"), "gnuplot is missing (scripts/setup installs gnuplot-nox)"
    p = subprocess.run([sys.executable, str(REPORT), str(d)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    return d


def test_gemm_table_has_each_figure_its_baseline_and_ratio(run_dir):
    md = run_report(run_dir)
    assert "NSP GEMM 256×256×256 on the host, one thread (thread CPU time, the best of at least five windows" in md
    assert "| MMF32 instruction (interpreter) | 170.0 GOP/s | OpenBLAS sgemm 200.0 GOP/s | 0.85 |" in md
    assert "| gemm_f32 kernel | 180.0 GOP/s | OpenBLAS sgemm 200.0 GOP/s | 0.9 |" in md
    assert ("| MMI8 instruction (interpreter) | 380.0 GOP/s | OpenBLAS sgemm on the int8 values "
            "(no int8 GEMM in OpenBLAS) 160.0 GOP/s | 2.38 |") in md
    assert "| gemm_i8 kernel | 400.0 GOP/s | OpenBLAS sgemm on the int8 values 160.0 GOP/s | 2.5 |" in md


def test_network_table_scales_against_one_nsp_and_openblas(run_dir):
    md = run_report(run_dir)
    assert "Network resnet50-r64 (0.34 G MACs) on N NSPs" in md
    assert "(2 on this host)" in md
    assert "| 1 (1) | 10.00 inf/s | 1 | 95.0 ms | 2 | 4.00 inf/s | 1 | 2.5 | right |" in md
    assert "| 2 (2) | 18.00 inf/s | 1.8 | 100.0 ms | 30 | 7.00 inf/s | 1.75 | 2.57 | right |" in md
    # A run without the CPU time, switches and threads (an older
    # aic100-host-bench) shows "–" and no thread count.
    assert "| 4 | 17.00 inf/s | 1.7 | – | – | 6.00 inf/s | 1.5 | 2.83 | right |" in md


def test_one_table_per_configuration_named_by_what_the_guest_saw(run_dir):
    md = run_report(run_dir)
    assert "**ours-iommu**: driver ours, kernel 6.12.117, 32 MSI vectors, IOMMU on" in md
    assert "**ours-noiommu**: driver ours, kernel 6.12.117, 1 MSI vector, IOMMU off" in md
    assert ("| bulk DMA to card, 1 MiB, end to end (524.3 µs per EXECUTE_BO + WAIT_BO) | 2000.0 MB/s | "
            "host memcpy 20000.0 MB/s | 0.1 |") in md
    assert ("| … the card's own copy (104.9 µs per DMA request on the card) | 10000.0 MB/s | "
            "host memcpy 20000.0 MB/s | 0.5 |") in md
    assert "| 4 KiB requests, 1 DBC, one at a time; " in md
    assert "EXECUTE_BO 60.0 µs" in md
    assert "| 5000 req/s | NVMe (null-co), 1 thread, 20000 req/s, 50.0 µs each per thread | 0.25 |" in md
    # Several DBCs: the aggregate against the NVMe with as many threads.
    assert "| 4 KiB requests, 4 DBCs in parallel, a thread each (in all; 2000 per DBC); " in md
    assert "| 8000 req/s | NVMe (null-co), 4 threads, 32000 req/s, 125.0 µs each per thread | 0.25 |" in md
    assert "| crashed workload back to a correct inference | SSR 10.0 ms | card reset + reload 140.0 ms | 14 (reset / SSR) |" in md
    # Side by side: a column per configuration, "–" where one has no figure.
    assert "| figure | ours-iommu | ours-noiommu |" in md
    assert ("| 4 KiB requests, 4 DBC(s) from 4 thread(s), req/s in all (× NVMe null-co, 4 thread(s)) | "
            "8000 (0.25) | – |") in md
    # A run from before the NVMe had several threads: one DBC against its one thread.
    assert ("| 4 KiB requests, 1 DBC(s) from 1 thread(s), req/s in all (× NVMe null-co, 1 thread(s)) | "
            "5000 (0.25) | 6400 (0.4) |") in md
    assert "| matmul_f32, inf/s (× OpenBLAS, 1 thread) | 500.0 (0.002) | – |" in md


def test_scaling_table_sets_the_cards_aggregate_against_the_nvmes_with_as_many_threads(run_dir):
    md = run_report(run_dir)
    assert "4 KiB requests from N submitting threads (not pinned; 2 guest CPUs)" in md
    assert "| threads | card | × 1 DBC | NVMe | × 1 thread | card / NVMe |" in md
    assert "| 1 | 5000 req/s | 1 | 20000 req/s | 1 | 0.25 |" in md
    assert "| 2 | 9000 req/s | 1.8 | 30000 req/s | 1.5 | 0.3 |" in md
    assert "| 4 | 8000 req/s | 1.6 | 32000 req/s | 1.6 | 0.25 |" in md
    # The older run has no NVMe threads: no such table for it.
    assert md.count("4 KiB requests from N submitting threads") == 1
    report = json.loads((run_dir / "bench.json").read_text())
    scaling = report["configurations"]["ours-iommu"]["scaling"]
    assert scaling["guest_cpus"] == 2 and scaling["threads_pinned"] is False
    assert [(r["submitters"], r["card_scaling"], r["nvme_scaling"]) for r in scaling["runs"]] == [
        (1, 1, 1), (2, pytest.approx(1.8), pytest.approx(1.5)), (4, pytest.approx(1.6), pytest.approx(1.6))]
    assert report["configurations"]["ours-noiommu"]["scaling"] is None


def test_a_wrong_output_anywhere_is_reported(run_dir):
    md = run_report(run_dir)
    assert "matmul_i8 (example workload, pipelined; outputs WRONG)" in md
    assert "Every output and payload checked: SOME WRONG (see the logs)." in md
    assert json.loads((run_dir / "bench.json").read_text())["outputs_ok"] is False

    (run_dir / "guest-ours-noiommu.json").unlink()
    md = run_report(run_dir)
    assert "Every output and payload checked: all right." in md
    assert json.loads((run_dir / "bench.json").read_text())["outputs_ok"] is True


def test_bench_json_has_every_figure_with_its_ratio(run_dir):
    run_report(run_dir)
    report = json.loads((run_dir / "bench.json").read_text())
    assert report["machine"]["cpus"] == "2"
    assert report["host"]["gemm"]["nsp_mmf32_GOPs"] == 170
    net = {r["nsps"]: r for r in report["networks"][0]["runs"]}
    assert net[2]["scaling_to_1_nsp"] == pytest.approx(1.8)
    assert net[4]["openblas_scaling"] == pytest.approx(1.5)
    assert net[4]["ratio_to_openblas"] == pytest.approx(17 / 6)
    figs = report["configurations"]["ours-iommu"]["figures"]
    bulk = [f for f in figs if f["what"] == "bulk DMA to card" and f["size"] == 1 << 20][0]
    assert bulk["ratio_to_memcpy"] == pytest.approx(0.1)
    assert bulk["device_ratio_to_memcpy"] == pytest.approx(0.5)
    small = [f for f in figs if f["what"] == "4 KiB requests"]
    assert [(f["dbcs"], f["ratio_to_nvme"]) for f in small] == [(1, pytest.approx(0.25)), (2, pytest.approx(0.3)),
                                                                 (4, pytest.approx(0.25))]
    assert (small[0]["submit_us"], small[0]["doorbell_us"], small[0]["device_us"]) == (60, 20, 1)
    wl = [f for f in figs if f["what"] == "example workload"]
    assert [(f["name"], f["ratio_to_openblas"]) for f in wl] == [("matmul_i8", pytest.approx(0.2)),
                                                                  ("matmul_f32", pytest.approx(0.002))]
    rec = [f for f in figs if f["what"] == "recovery"][0]
    assert rec["ratio_reset_to_ssr"] == pytest.approx(14)


def test_svg_plots_the_card_against_memcpy_and_nvme(run_dir):
    run_report(run_dir)
    svg = run_dir / "bench.svg"
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    text = svg.read_text()
    for title in ("DMA bandwidth (MB/s)", "requests (copies) per second", "host memcpy (limit)",
                  "to card, ours-iommu", "to card, card-side copy, ours-noiommu", "NVMe null-co 4 KiB, ours-iommu"):
        assert title in text, title
    # The data gnuplot read: memcpy's copies per second are MB/s / size.
    memcpy = (run_dir / "memcpy.dat").read_text().splitlines()
    assert memcpy[1].split() == ["4096", "40000", str(40000 * 1e6 / 4096)]


def test_a_host_run_without_the_network_section_still_reports(run_dir):
    host = json.loads((run_dir / "host.json").read_text())
    del host["network"]
    (run_dir / "host.json").write_text(json.dumps(host))
    md = run_report(run_dir)
    assert "Network " not in md
    assert "| gemm_f32 kernel |" in md
    assert json.loads((run_dir / "bench.json").read_text())["networks"] == []


def test_inference_table_sets_the_engine_beside_onnx_runtime_on_as_many_threads(run_dir):
    md = run_report(run_dir)
    assert "ResNet-50 int8 at 64×64 (0.34 G MACs): the card's engine" in md
    assert "against ONNX Runtime 1.21 on as many threads" in md
    # 1 NSP on 1 thread against 20 inf/s; 4 NSPs share the host's 2
    # threads, so against ONNX Runtime's 36 on 2. 2·0.34 G·10/s = 6.8
    # GOP/s of a 380 GOP/s ceiling per thread.
    assert "| card's engine, 1 NSP(s) | 1 | 10.00 | 0.50 × ONNX Runtime | 7 (2 %) | equal to the reference |" in md
    assert "| card's engine, 4 NSP(s) | 2 | 17.00 | 0.47 × ONNX Runtime |" in md
    assert "| ONNX Runtime | 2 | 36.00 | 1 | 24 | top-1 same, logits ≤ 1 apart |" in md
    # Against the engine run on the host right after that guest.
    assert "| guest (ours-iommu), aic100-run, 4 NSPs | – | 14.45 | 0.72 × the engine alone (20.00, right after) |" in md
    assert "at most 1 apart from the card's (10 of 1377256 values)" in md


def test_every_target_is_met_or_not_met(run_dir):
    md = run_report(run_dir)
    assert "| engine at 64 / ONNX Runtime, 2 thread(s) (best NSP count) | 0.50 | ≥ 1.0 | **not met** |" in md
    assert "| engine at 64: 4 NSPs / 2 NSPs on this 2-thread host | 0.94 | ≥ 1.0 | **not met** |" in md
    assert "| guest (ours-iommu) at 64: aic100-run / the engine alone, 4 NSPs | 0.72 | ≥ 0.8 | **not met** |" in md
    assert "| 4 KiB, ours-iommu: 4 DBCs from 4 threads / 1 DBC | 1.60 | ≥ 1.5 | met |" in md
    assert "| 4 KiB, ours-noiommu: one MSI, 1 DBC / QEMU's NVMe | 0.40 | ≥ 2.0 | **not met** |" in md
    targets = {t["target"]: t for t in json.loads((run_dir / "bench.json").read_text())["targets"]}
    assert targets["engine at 64: fraction of the MMI8 ceiling (reported)"]["value"] == pytest.approx(6.8 / 380)
    assert targets["4 KiB, ours-iommu: 4 DBCs from 4 threads / 1 DBC"]["met"] is True


def test_at_224_the_engine_is_held_to_issue_40s_targets():
    sys.path.insert(0, str(TOP / "bench"))
    import inference_report as ir
    engine = [{"threads": 1, "nsps": 1, "inf_per_s": 2.0, "ratio_to_ort": 0.78, "fraction_of_mmi8": 0.69},
              {"threads": 2, "nsps": 2, "inf_per_s": 3.0, "ratio_to_ort": 0.96, "fraction_of_mmi8": 0.76}]
    rows = ir.target_rows(ir._engine_targets({"resolution": 224, "engine": engine, "guest": {}}, 2))
    assert "| engine at 224 / ONNX Runtime, 1 thread(s) (best NSP count) | 0.78 | ≥ 0.8 | **not met** |" in rows
    assert "| engine at 224 / ONNX Runtime, 2 thread(s) (best NSP count) | 0.96 | ≥ 0.8 | met |" in rows
    assert "| engine at 224: fraction of the MMI8 ceiling | 76 % | ≥ 70 % | met |" in rows


def test_a_run_without_onnx_runtime_leaves_its_ratios_out(run_dir):
    (run_dir / "ort-64.json").unlink()
    md = run_report(run_dir)
    assert "against ONNX Runtime (not run) on as many threads" in md
    assert "| card's engine, 1 NSP(s) | 1 | 10.00 | – × ONNX Runtime |" in md
    assert "engine at 64 / ONNX Runtime" not in md


def test_a_guest_without_the_engine_right_after_it_is_held_to_the_host_bench(run_dir):
    f = run_dir / "inference-ours-iommu.txt"
    f.write_text("".join(l for l in f.read_text().splitlines(True) if not l.startswith("engine alone")))
    md = run_report(run_dir)
    assert "| guest (ours-iommu), aic100-run, 4 NSPs | – | 14.45 | 0.85 × the engine alone (17.00) |" in md
    assert "| guest (ours-iommu) at 64: aic100-run / the engine alone, 4 NSPs | 0.85 | ≥ 0.8 | met |" in md
