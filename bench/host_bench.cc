// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-host-bench: the host-side baselines of bench/run, measured on the
// host that runs the guest, in the same run:
//  * memcpy at the bulk DMA benchmark's sizes (4 KiB .. 64 MiB), the best
//    of several windows: the limit of a copy from host memory to host
//    memory, which is what the card's DMA does under QEMU;
//  * GEMM at M x N x K: OpenBLAS (one thread) against the NSP interpreter's
//    kernels and its MMF32/MMI8 instructions. Debian's OpenBLAS has no int8
//    GEMM: int8 is compared against sgemm on the same values as floats
//    (exact while K * 127 * 128 < 2^24), conversions not timed;
//  * the example workloads (matmul_i8, matmul_f32, mlp_f32) computed with
//    OpenBLAS on one thread: inferences per second of that thread's CPU
//    time (the card's figure is wall time in the guest; the host is shared,
//    and CPU time is what a free core would do).
// Every result is checked: copies compared, GEMMs against a reference loop,
// the examples against their own reference. Exit status 1 if one is wrong.
//   aic100-host-bench [--quick] [--gemm M N K] [--json FILE]
#include <aic100/nsp.h>
#include <aic100/nsp_kernels.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <functional>
#include <random>
#include <string>
#include <time.h>
#include <vector>

#include "gemm_operands.h"
#include "workloads.h"

namespace nsp = aic100::nsp;
namespace kernels = aic100::nsp::kernels;
namespace wl = aic100::workloads;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double cpu_seconds()
{
	timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Best of several runs in thread CPU time: other load on the host counts
// less.
double best_seconds(const std::function<void()> &f, double budget_s)
{
	f();
	double best = 1e30;
	const double start = cpu_seconds();
	int runs = 0;
	do {
		const double t0 = cpu_seconds();
		f();
		best = std::min(best, cpu_seconds() - t0);
		runs++;
	} while (runs < 3 || cpu_seconds() - start < budget_s);
	return best;
}

std::string num(double v)
{
	char b[64];
	std::snprintf(b, sizeof(b), "%.6g", v);
	return std::isfinite(v) ? b : "null";
}

bool failed = false;
void fail(const std::string &what)
{
	std::fprintf(stderr, "aic100-host-bench: %s\n", what.c_str());
	failed = true;
}

std::string memcpy_rates(bool quick)
{
	std::printf("== host memcpy (MB/s, one thread, best of 8 windows of wall time; sizes as the bulk DMA "
		    "benchmark's)\n");
	std::string rows;
	for (uint64_t size = 4096; size <= (64ull << 20); size *= 4) {
		const double budget = quick ? 0.2 : 0.6;
		std::vector<uint8_t> a(size), b(size, 0);
		for (uint64_t i = 0; i < size; i++)
			a[i] = uint8_t(i * 131 + (i >> 12));
		// The best of eight windows: the limit is what the host can do
		// when the other load leaves it a core, not an average over the
		// moments it does not.
		uint64_t n = 0;
		double rate = 0;
		for (int w = 0; w < 8; w++) {
			uint64_t k = 0;
			const auto t = Clock::now();
			while (since(t) < budget / 8 || !k) {
				a[n++ % size]++; // each copy has something new to move
				std::memcpy(b.data(), a.data(), size);
				k++;
			}
			rate = std::max(rate, double(k) * double(size) / since(t) / 1e6);
		}
		const bool same = a == b;
		if (!same)
			fail("memcpy of " + std::to_string(size) + " bytes: the copy differs");
		std::printf("%10llu %10.1f\n", static_cast<unsigned long long>(size), rate);
		rows += std::string(rows.empty() ? "" : ", ") + "{\"size\": " + std::to_string(size) +
			", \"MBps\": " + num(rate) + "}";
	}
	return "[" + rows + "]";
}

std::string gemm(unsigned m, unsigned n, unsigned k, double budget)
{
	const double ops = 2.0 * m * n * k;
	std::printf("\n== GEMM %ux%ux%u, one thread, best of %.1f s of CPU each (GOP/s = 2*M*N*K / time)\n", m, n, k,
		    budget);
	const GemmOperands operands(m, n, k);
	const auto &[af, bf, ai, bi] = operands;
	std::vector<float> cf(size_t(m) * n);
	std::vector<int32_t> ci(size_t(m) * n);

	// The references: plain loops in double and in int64.
	std::vector<double> want_f(size_t(m) * n);
	std::vector<int32_t> want_i(size_t(m) * n);
	for (unsigned i = 0; i < m; i++)
		for (unsigned j = 0; j < n; j++) {
			double s = 0;
			int64_t t = 0;
			for (unsigned p = 0; p < k; p++) {
				s += double(af[i * k + p]) * bf[p * n + j];
				t += int64_t(ai[i * k + p]) * bi[p * n + j];
			}
			want_f[i * n + j] = s;
			want_i[i * n + j] = int32_t(t);
		}
	auto check_f = [&](const float *c, const char *what) {
		for (size_t i = 0; i < want_f.size(); i++)
			if (std::abs(c[i] - want_f[i]) > 1e-4 * (1 + std::abs(want_f[i]))) {
				fail(std::string(what) + ": wrong result at " + std::to_string(i));
				return;
			}
	};
	auto check_i = [&](const int32_t *c, const char *what) {
		if (!std::equal(want_i.begin(), want_i.end(), c))
			fail(std::string(what) + ": wrong result");
	};

	std::string rows;
	auto report = [&](const char *key, const char *what, double s) {
		std::printf("  %-40s %8.2f GOP/s\n", what, ops / s / 1e9);
		rows += std::string(rows.empty() ? "" : ", ") + "\"" + key + "\": " + num(ops / s / 1e9);
	};

	// fp32
	const double blas_f = best_seconds([&] {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, af.data(), int(k),
			    bf.data(), int(n), 0.0f, cf.data(), int(n));
	}, budget);
	check_f(cf.data(), "OpenBLAS sgemm");
	report("openblas_sgemm_GOPs", "OpenBLAS sgemm (fp32)", blas_f);
	kernels::Scratch scratch;
	const kernels::Isa isa = kernels::best_isa();
	std::fill(cf.begin(), cf.end(), 0.0f);
	const double kern_f = best_seconds([&] {
		kernels::gemm_f32(reinterpret_cast<uint8_t *>(cf.data()), reinterpret_cast<const uint8_t *>(af.data()),
				  reinterpret_cast<const uint8_t *>(bf.data()), m, n, k, scratch, nullptr, isa);
	}, budget);
	check_f(cf.data(), "NSP gemm_f32 kernel");
	report("nsp_gemm_f32_GOPs", (std::string("NSP gemm_f32 kernel (") + kernels::isa_name(isa) + ")").c_str(),
	       kern_f);

	// int8, against sgemm on the same values
	std::vector<float> aif(ai.begin(), ai.end()), bif(bi.begin(), bi.end());
	const double blas_i = best_seconds([&] {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, aif.data(), int(k),
			    bif.data(), int(n), 0.0f, cf.data(), int(n));
	}, budget);
	for (size_t i = 0; i < ci.size(); i++)
		ci[i] = int32_t(std::lround(cf[i]));
	if (double(k) * 127 * 128 < double(1 << 24))
		check_i(ci.data(), "OpenBLAS sgemm on int8 values");
	report("openblas_sgemm_on_int8_GOPs", "OpenBLAS sgemm on the int8 values", blas_i);
	std::fill(ci.begin(), ci.end(), 0);
	const double kern_i = best_seconds([&] {
		kernels::gemm_i8(reinterpret_cast<uint8_t *>(ci.data()), reinterpret_cast<const uint8_t *>(ai.data()),
				 reinterpret_cast<const uint8_t *>(bi.data()), m, n, k, scratch, nullptr, isa);
	}, budget);
	check_i(ci.data(), "NSP gemm_i8 kernel");
	report("nsp_gemm_i8_GOPs", (std::string("NSP gemm_i8 kernel (") + kernels::isa_name(isa) + ")").c_str(), kern_i);

	// The instructions, through the interpreter, outputs checked.
	const uint64_t a_off = 0, b_off = uint64_t(m) * k * 4, c_off = b_off + uint64_t(k) * n * 4;
	aic100::Semaphores sems;
	nsp::Counters ctr;
	double mm_f = 0, mm_i = 0;
	for (nsp::Op op : {nsp::Op::MmF32, nsp::Op::MmI8}) {
		const bool f32 = op == nsp::Op::MmF32;
		std::vector<uint8_t> window(c_off + uint64_t(m) * n * 4);
		std::memcpy(&window[a_off], f32 ? static_cast<const void *>(af.data()) : ai.data(),
			    f32 ? af.size() * 4 : ai.size());
		std::memcpy(&window[b_off], f32 ? static_cast<const void *>(bf.data()) : bi.data(),
			    f32 ? bf.size() * 4 : bi.size());
		const std::vector<nsp::Instr> prog = {
			{uint8_t(nsp::Op::Li), 3, 0, 0, 0, c_off},
			{uint8_t(nsp::Op::Li), 4, 0, 0, 0, a_off},
			{uint8_t(nsp::Op::Li), 5, 0, 0, 0, b_off},
			{uint8_t(op), 3, 4, 5, 0, nsp::pack_mnk(m, n, k)},
			{uint8_t(nsp::Op::Halt), 0, 0, 0, 0, 0},
		};
		const double s = best_seconds([&] {
			nsp::Core core(prog, 0, window, sems, ctr);
			core.run([] { return false; });
		}, budget);
		if (f32) {
			std::vector<float> c(size_t(m) * n);
			std::memcpy(c.data(), &window[c_off], c.size() * 4);
			check_f(c.data(), "MMF32 instruction");
			mm_f = s;
			report("nsp_mmf32_GOPs", "MMF32 instruction (interpreter)", s);
		} else {
			std::vector<int32_t> c(size_t(m) * n);
			std::memcpy(c.data(), &window[c_off], c.size() * 4);
			check_i(c.data(), "MMI8 instruction");
			mm_i = s;
			report("nsp_mmi8_GOPs", "MMI8 instruction (interpreter)", s);
		}
	}
	std::printf("  ratios to OpenBLAS: MMF32 %.2f, gemm_f32 %.2f, MMI8 %.2f (to sgemm on int8 values), gemm_i8 "
		    "%.2f\n",
		    blas_f / mm_f, blas_f / kern_f, blas_i / mm_i, blas_i / kern_i);
	return "{\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) + ", \"k\": " + std::to_string(k) +
	       ", " + rows + "}";
}

// One example's function with OpenBLAS: out = f(in). The weights are the
// example's own (its files).
using Infer = std::function<void(const uint8_t *in, uint8_t *out)>;

std::vector<float> floats(const std::vector<uint8_t> &b)
{
	std::vector<float> v(b.size() / 4);
	std::memcpy(v.data(), b.data(), v.size() * 4);
	return v;
}

Infer openblas_example(const wl::Example &e)
{
	auto file = [&](const std::string &buf) { return e.files.at(e.layout.name + "." + buf + ".bin"); };
	if (e.layout.name == "matmul_i8") {
		constexpr int M = 64, K = 256, N = 128;
		const auto w = file("b");
		auto bw = std::make_shared<std::vector<float>>(w.begin(), w.end());
		for (size_t i = 0; i < w.size(); i++)
			(*bw)[i] = float(int8_t(w[i]));
		auto a = std::make_shared<std::vector<float>>(M * K);
		auto c = std::make_shared<std::vector<float>>(M * N);
		return [=](const uint8_t *in, uint8_t *out) {
			for (int i = 0; i < M * K; i++)
				(*a)[i] = float(int8_t(in[i]));
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a->data(), K, bw->data(), N,
				    0.0f, c->data(), N);
			for (int i = 0; i < M * N; i++) {
				const int32_t v = int32_t(std::lround((*c)[i]));
				std::memcpy(out + 4 * i, &v, 4);
			}
		};
	}
	if (e.layout.name == "matmul_f32") {
		constexpr int M = 32, K = 128, N = 64;
		auto bw = std::make_shared<std::vector<float>>(floats(file("b")));
		return [=](const uint8_t *in, uint8_t *out) {
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f,
				    reinterpret_cast<const float *>(in), K, bw->data(), N, 0.0f,
				    reinterpret_cast<float *>(out), N);
		};
	}
	if (e.layout.name == "mlp_f32") {
		constexpr int B = 16, DI = 128, H = 256, DO = 32;
		auto w1 = std::make_shared<std::vector<float>>(floats(file("w1")));
		auto b1 = std::make_shared<std::vector<float>>(floats(file("b1")));
		auto w2 = std::make_shared<std::vector<float>>(floats(file("w2")));
		auto b2 = std::make_shared<std::vector<float>>(floats(file("b2")));
		auto h = std::make_shared<std::vector<float>>(B * H);
		return [=](const uint8_t *in, uint8_t *out) {
			auto *y = reinterpret_cast<float *>(out);
			for (int i = 0; i < B; i++) {
				std::copy(b1->begin(), b1->end(), h->begin() + i * H);
				std::copy(b2->begin(), b2->end(), y + i * DO);
			}
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, H, DI, 1.0f,
				    reinterpret_cast<const float *>(in), DI, w1->data(), H, 1.0f, h->data(), H);
			for (float &v : *h)
				v = std::max(v, 0.0f);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, DO, H, 1.0f, h->data(), H, w2->data(),
				    DO, 1.0f, y, DO);
		};
	}
	return {};
}

std::string examples(bool quick)
{
	std::printf("\n== the example workloads with OpenBLAS, one thread (inferences per second of CPU time; outputs "
		    "checked)\n");
	std::string rows;
	for (const char *name : {"matmul_i8", "matmul_f32", "mlp_f32"}) {
		const wl::Example *e = wl::find(name);
		const Infer f = e ? openblas_example(*e) : Infer{};
		if (!f) {
			fail(std::string("no OpenBLAS version of ") + name);
			continue;
		}
		constexpr unsigned kInputs = 4;
		std::vector<std::vector<uint8_t>> in, want;
		for (unsigned s = 0; s < kInputs; s++) {
			in.push_back(e->make_input(s + 1));
			want.push_back(e->reference(in.back()));
		}
		std::vector<uint8_t> out(want[0].size());
		uint64_t n = 0, wrong = 0;
		std::string why;
		const double budget = quick ? 0.3 : 1.0;
		// Thread CPU time of the inferences alone (the checks are not
		// counted): what one host thread does, whatever else loads the
		// host.
		double busy = 0;
		const auto t = Clock::now();
		while (since(t) < budget || n < kInputs) {
			const double t0 = cpu_seconds();
			f(in[n % kInputs].data(), out.data());
			busy += cpu_seconds() - t0;
			std::string w;
			if (!wl::matches(*e, out, want[n % kInputs], w) && !wrong++)
				why = w;
			n++;
		}
		const double rate = n / busy;
		if (wrong)
			fail(std::string(name) + " with OpenBLAS: " + std::to_string(wrong) + " wrong outputs, first: " + why);
		std::printf("%-11s %10.1f inf/s, %llu of %llu outputs right\n", name, rate,
			    static_cast<unsigned long long>(n - wrong), static_cast<unsigned long long>(n));
		rows += std::string(rows.empty() ? "" : ", ") + "{\"name\": \"" + name +
			"\", \"openblas_inf_per_s\": " + num(rate) + "}";
	}
	return "[" + rows + "]";
}

} // namespace

int main(int argc, char **argv)
{
	bool quick = false;
	unsigned m = 256, n = 256, k = 256;
	std::string json_path;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "--quick") {
			quick = true;
		} else if (a == "--json" && i + 1 < argc) {
			json_path = argv[++i];
		} else if (a == "--gemm" && i + 3 < argc) {
			m = unsigned(std::atoi(argv[++i]));
			n = unsigned(std::atoi(argv[++i]));
			k = unsigned(std::atoi(argv[++i]));
		} else {
			std::fprintf(stderr, "usage: aic100-host-bench [--quick] [--gemm M N K] [--json FILE]\n");
			return 2;
		}
	}
	if (!m || !n || !k || m >= nsp::kMaxDim || n >= nsp::kMaxDim || k >= nsp::kMaxDim) {
		std::fprintf(stderr, "aic100-host-bench: --gemm: each of M N K in 1..%u\n", unsigned(nsp::kMaxDim) - 1);
		return 2;
	}
	// One thread, whatever OPENBLAS_NUM_THREADS says.
	openblas_set_num_threads(1);
	const std::string mc = memcpy_rates(quick);
	const std::string g = gemm(m, n, k, quick ? 0.3 : 1.0);
	const std::string ex = examples(quick);
	if (!json_path.empty()) {
		std::ofstream f(json_path);
		f << "{\"memcpy\": " << mc << ", \"gemm\": " << g << ", \"examples\": " << ex
		  << ", \"outputs_ok\": " << (failed ? "false" : "true") << "}\n";
		if (!f) {
			std::fprintf(stderr, "aic100-host-bench: cannot write %s\n", json_path.c_str());
			return 1;
		}
	}
	return failed ? 1 : 0;
}
