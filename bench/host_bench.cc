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
//    The GEMMs are timed alike: the best of >= 5 windows of ~20 ms of
//    thread CPU time, the instructions as a program running them in a loop;
//  * ResNet-50 at 64x64 (or --resolutions) (tools/compiler) on 1, 2 and 4 NSPs (sharing
//    min(NSPs, host cores) threads, as in the card) against the same
//    network with OpenBLAS on as many threads (dgemm on the int8 values:
//    exact), wall time, the process's CPU time and context switches per
//    inference, every output against the reference;
//  * the example workloads (matmul_i8, matmul_f32, mlp_f32) computed with
//    OpenBLAS on one thread: inferences per second of that thread's CPU
//    time (the card's figure is wall time in the guest; the host is shared,
//    and CPU time is what a free core would do).
// Every result is checked: copies compared, GEMMs against a reference loop,
// the examples against their own reference. Exit status 1 if one is wrong.
//   aic100-host-bench [--quick] [--gemm M N K] [--only SECTION]... [--json FILE]
//                     [--nsps N[,N]...] [--resolutions R[,R]...]
// SECTION is memcpy, gemm, examples or networks; without --only, all four.
// --nsps: the NSP counts of the networks section (default 1,2,4);
// --resolutions: its ResNet-50 input sizes (default 64).
#include <aic100/nsp.h>
#include <aic100/nsp_run.h>
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
#include <thread>
#include <sys/resource.h>
#include <time.h>
#include <vector>

#include "gemm_operands.h"
#include "network.h"
#include "reference.h"
#include "lower.h"
#include "workloads.h"

namespace nsp = aic100::nsp;
namespace nsp_run = aic100::nsp_run;
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

std::string num(double v)
{
	char b[64];
	std::snprintf(b, sizeof(b), "%.6g", v);
	return std::isfinite(v) ? b : "null";
}

// The GEMMs: the best of at least five windows of ~20 ms of thread CPU
// time each (the time per call is the window's over its calls), the same
// for OpenBLAS, the kernels and the instructions.
constexpr double kGemmWindow = 0.02;

double best_window_seconds(const std::function<void()> &f, double budget_s)
{
	const double t0 = cpu_seconds();
	f(); // warm up: packing buffers, caches, OpenBLAS's buffers
	const uint64_t reps = std::max<uint64_t>(1, uint64_t(kGemmWindow / std::max(cpu_seconds() - t0, 1e-7)));
	double best = 1e30;
	const double start = cpu_seconds();
	int windows = 0;
	do {
		const double w0 = cpu_seconds();
		for (uint64_t i = 0; i < reps; i++)
			f();
		best = std::min(best, (cpu_seconds() - w0) / double(reps));
		windows++;
	} while (windows < 5 || cpu_seconds() - start < budget_s);
	return best;
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

// One GEMM benchmark: its operands, the product computed with plain loops
// (in double and in int64) to check every result against, the outputs,
// and the GOP/s lines with their JSON fields.
class Gemm {
public:
	Gemm(unsigned m, unsigned n, unsigned k, double budget)
		: m(m), n(n), k(k), budget(budget), operands(m, n, k), cf(size_t(m) * n), ci(size_t(m) * n),
		  want_f_(size_t(m) * n), want_i_(size_t(m) * n)
	{
		const auto &[af, bf, ai, bi] = operands;
		for (unsigned i = 0; i < m; i++)
			for (unsigned j = 0; j < n; j++) {
				double s = 0;
				int64_t t = 0;
				for (unsigned p = 0; p < k; p++) {
					s += double(af[i * k + p]) * bf[p * n + j];
					t += int64_t(ai[i * k + p]) * bi[p * n + j];
				}
				want_f_[i * n + j] = s;
				want_i_[i * n + j] = int32_t(t);
			}
	}

	void check(const float *c, const char *what) const
	{
		for (size_t i = 0; i < want_f_.size(); i++)
			if (std::abs(c[i] - want_f_[i]) > 1e-4 * (1 + std::abs(want_f_[i]))) {
				fail(std::string(what) + ": wrong result at " + std::to_string(i));
				return;
			}
	}
	void check(const int32_t *c, const char *what) const
	{
		if (!std::equal(want_i_.begin(), want_i_.end(), c))
			fail(std::string(what) + ": wrong result");
	}

	// One line: GOP/s of a GEMM that took `s` seconds.
	void report(const char *key, const char *what, double s)
	{
		const double ops = 2.0 * m * n * k;
		std::printf("  %-40s %8.2f GOP/s\n", what, ops / s / 1e9);
		rows_ += std::string(rows_.empty() ? "" : ", ") + "\"" + key + "\": " + num(ops / s / 1e9);
	}
	const std::string &rows() const { return rows_; }

	const unsigned m, n, k;
	const double budget;
	const GemmOperands operands;
	std::vector<float> cf;
	std::vector<int32_t> ci;

private:
	std::vector<double> want_f_;
	std::vector<int32_t> want_i_;
	std::string rows_;
};

// Seconds per call of OpenBLAS's sgemm of `a` by `b` into g.cf.
double sgemm_seconds(Gemm &g, const float *a, const float *b)
{
	const int m = int(g.m), n = int(g.n), k = int(g.k);
	float *cf = g.cf.data();
	return best_window_seconds([&] {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, cf, n);
	}, g.budget);
}

// Seconds per call of OpenBLAS's sgemm, fp32.
double sgemm_f32(Gemm &g)
{
	const double blas_f = sgemm_seconds(g, g.operands.af.data(), g.operands.bf.data());
	g.check(g.cf.data(), "OpenBLAS sgemm");
	g.report("openblas_sgemm_GOPs", "OpenBLAS sgemm (fp32)", blas_f);
	return blas_f;
}

// Seconds per call of the interpreter's kernel `name`, which `gemm` calls
// with `c` as its output (zeroed first, checked after).
template <typename T>
double kernel_seconds(Gemm &g, const nsp_run::Kernels &kern, std::vector<T> &c, const std::string &name,
		      const std::function<void()> &gemm)
{
	std::fill(c.begin(), c.end(), T(0));
	const double s = best_window_seconds(gemm, g.budget);
	g.check(c.data(), ("NSP " + name + " kernel").c_str());
	g.report(("nsp_" + name + "_GOPs").c_str(), ("NSP " + name + " kernel (" + kern.path() + ")").c_str(), s);
	return s;
}

// Seconds per call of sgemm on the int8 values as floats.
double sgemm_i8(Gemm &g)
{
	const auto &ai = g.operands.ai, &bi = g.operands.bi;
	std::vector<float> aif(ai.begin(), ai.end()), bif(bi.begin(), bi.end());
	const double blas_i = sgemm_seconds(g, aif.data(), bif.data());
	for (size_t i = 0; i < g.ci.size(); i++)
		g.ci[i] = int32_t(std::lround(g.cf[i]));
	if (double(g.k) * 127 * 128 < double(1 << 24))
		g.check(g.ci.data(), "OpenBLAS sgemm on int8 values");
	g.report("openblas_sgemm_on_int8_GOPs", "OpenBLAS sgemm on the int8 values", blas_i);
	return blas_i;
}

// Seconds per MMF32 or MMI8 instruction through the interpreter, `reps`
// of them (~20 ms, from the kernel's `kern_s`) in a program's loop; output
// checked.
double gemm_instruction(Gemm &g, nsp::Op op, double kern_s)
{
	const auto &[af, bf, ai, bi] = g.operands;
	const unsigned m = g.m, n = g.n, k = g.k;
	const bool f32 = op == nsp::Op::MmF32;
	const uint64_t a_off = 0, b_off = uint64_t(m) * k * 4, c_off = b_off + uint64_t(k) * n * 4;
	std::vector<uint8_t> window(c_off + uint64_t(m) * n * 4);
	std::memcpy(&window[a_off], f32 ? static_cast<const void *>(af.data()) : ai.data(),
		    f32 ? af.size() * 4 : ai.size());
	std::memcpy(&window[b_off], f32 ? static_cast<const void *>(bf.data()) : bi.data(),
		    f32 ? bf.size() * 4 : bi.size());
	const uint64_t reps = std::max<uint64_t>(1, uint64_t(kGemmWindow / kern_s));
	const std::vector<nsp::Instr> prog = gemm_loop_program(op, a_off, b_off, c_off, m, n, k, reps);
	double s = 1e30;
	const double start = cpu_seconds();
	for (int w = 0; w < 5 || cpu_seconds() - start < g.budget; w++) {
		const double w0 = cpu_seconds();
		nsp_run::run(prog, window);
		s = std::min(s, (cpu_seconds() - w0) / double(reps));
	}
	if (f32) {
		std::vector<float> c(size_t(m) * n);
		std::memcpy(c.data(), &window[c_off], c.size() * 4);
		g.check(c.data(), "MMF32 instruction");
		g.report("nsp_mmf32_GOPs", "MMF32 instruction (interpreter)", s);
	} else {
		std::vector<int32_t> c(size_t(m) * n);
		std::memcpy(c.data(), &window[c_off], c.size() * 4);
		g.check(c.data(), "MMI8 instruction");
		g.report("nsp_mmi8_GOPs", "MMI8 instruction (interpreter)", s);
	}
	return s;
}

std::string gemm(unsigned m, unsigned n, unsigned k, double budget)
{
	std::printf("\n== GEMM %ux%ux%u, one thread, thread CPU time: the best of >= 5 windows of ~20 ms (and >= %.1f s) each, OpenBLAS and NSP alike (GOP/s = 2*M*N*K / time)\n", m, n, k,
		    budget);
	Gemm g(m, n, k, budget);
	const auto &[af, bf, ai, bi] = g.operands;
	float *cf = g.cf.data();
	int32_t *ci = g.ci.data();
	const double blas_f = sgemm_f32(g);
	nsp_run::Kernels kern; // the interpreter's code path
	const double kern_f =
		kernel_seconds(g, kern, g.cf, "gemm_f32", [&] { kern.gemm_f32(cf, af.data(), bf.data(), m, n, k); });
	const double blas_i = sgemm_i8(g);
	const double kern_i =
		kernel_seconds(g, kern, g.ci, "gemm_i8", [&] { kern.gemm_i8(ci, ai.data(), bi.data(), m, n, k); });
	const double mm_f = gemm_instruction(g, nsp::Op::MmF32, kern_f);
	const double mm_i = gemm_instruction(g, nsp::Op::MmI8, kern_i);
	std::printf("  ratios to OpenBLAS: MMF32 %.2f, gemm_f32 %.2f, MMI8 %.2f (to sgemm on int8 values), gemm_i8 "
		    "%.2f\n",
		    blas_f / mm_f, blas_f / kern_f, blas_i / mm_i, blas_i / kern_i);
	return "{\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) + ", \"k\": " + std::to_string(k) +
	       ", " + g.rows() + "}";
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

// ---- a network on 1, 2 and 4 NSPs ------------------------------------------------
//
// ResNet-50 at 64×64 (tools/compiler), compiled for N NSPs and streamed
// through the interpreter's N host threads with the examples' semaphore
// protocol, against the same network computed with OpenBLAS on N threads:
// convolutions as im2col + dgemm on the int8 values (dgemm because the
// sums reach 4608·128·128 > 2^24, where sgemm's are no longer exact;
// OpenBLAS has no int8 GEMM), pooling, adds and requantization with the
// reference's own functions. Every output is compared with the plain
// reference's, byte for byte. Wall time, the best of several windows.

namespace cc = aic100::compiler;

double process_cpu_seconds()
{
	timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// The process's context switches so far (every thread): a thread that
// blocks and is woken costs one voluntary switch.
double process_switches()
{
	rusage u;
	getrusage(RUSAGE_SELF, &u);
	return double(u.ru_nvcsw) + double(u.ru_nivcsw);
}

// Windows of `per_window` inferences until `budget` seconds passed (at
// least three); the best window's rate (wall time), and the CPU time and
// context switches of the whole process (every thread) per inference in
// it. Counts the wrong ones.
struct Rate {
	double inf_per_s = 0, cpu_ms = 0, switches = 0;
};
template <class Infer>
Rate best_rate(unsigned per_window, double budget, unsigned &done, unsigned &wrong, Infer infer)
{
	Rate best;
	const auto t = Clock::now();
	for (int w = 0; w < 3 || since(t) < budget; w++) {
		const auto t0 = Clock::now();
		const double c0 = process_cpu_seconds(), s0 = process_switches();
		for (unsigned i = 0; i < per_window; i++) {
			wrong += !infer(done);
			done++;
		}
		const double rate = per_window / since(t0);
		if (rate > best.inf_per_s)
			best = {rate, (process_cpu_seconds() - c0) * 1e3 / per_window,
				(process_switches() - s0) / per_window};
	}
	return best;
}

class BlasNetwork {
public:
	explicit BlasNetwork(const cc::Network &n) : n_(n), weights_(n.layers.size())
	{
		for (size_t i = 0; i < n.layers.size(); i++)
			weights_[i].assign(n.layers[i].weights.begin(), n.layers[i].weights.end());
	}
	std::vector<int8_t> run(const std::vector<int8_t> &input)
	{
		std::vector<std::vector<int8_t>> t(n_.tensors.size());
		t[size_t(n_.input)] = input;
		for (size_t li = 0; li < n_.layers.size(); li++) {
			const cc::Layer &l = n_.layers[li];
			const cc::Shape is = n_.tensors[size_t(l.in0)], os = n_.tensors[size_t(l.out)];
			const std::vector<int8_t> &in = t[size_t(l.in0)];
			std::vector<int8_t> &out = t[size_t(l.out)];
			out.resize(os.elements());
			switch (l.kind) {
			case cc::LayerKind::Conv:
			case cc::LayerKind::FullyConnected: {
				const uint32_t k = l.kind == cc::LayerKind::Conv ? l.k : 1;
				const uint64_t rows = uint64_t(os.h) * os.w, depth = uint64_t(k) * k * is.c;
				const int8_t *a = in.data();
				if (l.kind == cc::LayerKind::Conv && (k != 1 || l.stride != 1 || l.pad != 0)) {
					col_.resize(rows * depth);
					nsp_run::Kernels::im2col_i8(col_.data(), in.data(), is.h, is.w, is.c, k, l.stride,
								    l.pad, 0, os.h);
					a = col_.data();
				}
				ad_.assign(a, a + rows * depth);
				acc_.resize(rows * os.c);
				cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(rows), int(os.c), int(depth), 1.0,
					    ad_.data(), int(depth), weights_[li].data(), int(os.c), 0.0, acc_.data(),
					    int(os.c));
				for (uint64_t i = 0; i < acc_.size(); i++) {
					const uint32_t j = uint32_t(i % os.c);
					out[i] = cc::reference::requantize(int64_t(acc_[i]), l.rq.bias[j], l.rq.mult[j],
									   l.rq.shift[j], l.rq.relu);
				}
				break;
			}
			case cc::LayerKind::MaxPool:
				nsp_run::Kernels::maxpool_i8(out.data(), in.data(), is.h, is.w, is.c, l.k, l.stride, l.pad, 0,
							     os.h);
				break;
			case cc::LayerKind::Add: {
				const std::vector<int8_t> &y = t[size_t(l.in1)];
				for (uint64_t i = 0; i < out.size(); i++)
					out[i] = cc::reference::add(in[i], y[i], l.add);
				break;
			}
			case cc::LayerKind::GlobalAvgPool:
				for (uint32_t c = 0; c < os.c; c++) {
					int64_t sum = 0;
					for (uint64_t p = 0; p < uint64_t(is.h) * is.w; p++)
						sum += in[p * is.c + c];
					out[c] = cc::reference::requantize(sum, l.rq.bias[c], l.rq.mult[c], l.rq.shift[c],
									   l.rq.relu);
				}
				break;
			}
		}
		return t[size_t(n_.output)];
	}

private:
	const cc::Network &n_;
	std::vector<std::vector<double>> weights_;
	std::vector<int8_t> col_;
	std::vector<double> ad_, acc_;
};

// Inputs and the reference's outputs for them, used in turn.
struct Pairs {
	static constexpr unsigned kCount = 2;
	std::vector<std::vector<int8_t>> in, want;
};

// What the windows of one side came to.
struct Side {
	Rate rate;
	unsigned done = 0, wrong = 0;
	unsigned threads = 0; // the NSPs': the card's host threads
	bool faulted = false;
};

// The compiled network `c` streamed through its NSPs' host threads with
// the examples' semaphore protocol; nullopt when the threads did not start.
std::optional<Side> on_nsps(const cc::Network &net, const cc::Compiled &c, unsigned nsps, const Pairs &p,
			    double budget, unsigned per_window)
{
	const nsp::Workload w = c.workload();
	std::vector<uint8_t> window = c.initial_window();
	nsp_run::Activation act;
	Side s;
	if (!act.start(w, window)) {
		fail("the NSP threads did not start");
		return std::nullopt;
	}
	s.threads = act.threads();
	using Op = aic100::sem::Op;
	s.rate = best_rate(per_window, budget, s.done, s.wrong, [&](unsigned i) {
		if (!act.wait(cc::kSemIn, Op::WaitEq, 0))
			return false;
		std::memcpy(window.data() + c.input_offset, p.in[i % Pairs::kCount].data(), c.input_bytes);
		act.apply(cc::kSemIn, Op::Inc, 1);
		if (!act.wait(cc::kSemOut, Op::WaitGe, 1))
			return false;
		const bool same = std::memcmp(window.data() + c.output_offset, p.want[i % Pairs::kCount].data(),
					      c.output_bytes) == 0;
		act.apply(cc::kSemOut, Op::Dec, 1);
		return same;
	});
	act.stop();
	s.faulted = act.faulted();
	if (act.faulted())
		fail(net.name + " on " + std::to_string(nsps) + " NSPs: " + act.fault());
	if (s.wrong)
		fail(net.name + " on " + std::to_string(nsps) + " NSPs: " + std::to_string(s.wrong) + " of " +
		     std::to_string(s.done) + " outputs differ from the reference");
	return s;
}

// The same network with OpenBLAS on `threads` threads.
Side with_openblas(const cc::Network &net, unsigned threads, const Pairs &p, double budget, unsigned per_window)
{
	openblas_set_num_threads(int(threads));
	BlasNetwork blas_net(net);
	Side s;
	s.rate = best_rate(per_window, budget, s.done, s.wrong, [&](unsigned i) {
		return blas_net.run(p.in[i % Pairs::kCount]) == p.want[i % Pairs::kCount];
	});
	openblas_set_num_threads(1);
	if (s.wrong)
		fail(net.name + " with OpenBLAS on " + std::to_string(threads) + " threads: " + std::to_string(s.wrong) +
		     " of " + std::to_string(s.done) + " outputs differ from the reference");
	return s;
}

// The line and the JSON row of one NSP count.
std::string network_row(unsigned nsps, const cc::Compiled &c, const Side &card, const Side &blas)
{
	std::printf("%u NSP(s) on %u thread(s): %7.2f inf/s, %6.1f ms CPU and %5.0f context switches each (%u "
		    "barriers per inference; %u of %u outputs right)   OpenBLAS, %u thread(s): %7.2f inf/s, %6.1f "
		    "ms CPU each (%u of %u right)\n",
		    nsps, card.threads, card.rate.inf_per_s, card.rate.cpu_ms, card.rate.switches, c.barriers,
		    card.done - card.wrong, card.done, nsps,
		    blas.rate.inf_per_s, blas.rate.cpu_ms, blas.done - blas.wrong, blas.done);
	return "{\"nsps\": " + std::to_string(nsps) + ", \"nsp_threads\": " + std::to_string(card.threads) +
	       ", \"inf_per_s\": " + num(card.rate.inf_per_s) + ", \"cpu_ms_per_inf\": " + num(card.rate.cpu_ms) +
	       ", \"switches_per_inf\": " + num(card.rate.switches) + ", \"openblas_threads\": " + std::to_string(nsps) +
	       ", \"openblas_inf_per_s\": " + num(blas.rate.inf_per_s) +
	       ", \"openblas_cpu_ms_per_inf\": " + num(blas.rate.cpu_ms) + ", \"barriers\": " +
	       std::to_string(c.barriers) + ", \"outputs_ok\": " +
	       (card.wrong || blas.wrong || card.faulted ? "false" : "true") + "}";
}

std::string network(bool quick, const std::vector<unsigned> &nsp_counts, uint32_t resolution)
{
	const unsigned host_threads = std::thread::hardware_concurrency();
	const cc::Network net = cc::resnet50(resolution);
	std::printf("\n== %s (%.2f G MACs per inference) on N NSPs (on the card's host threads) and with OpenBLAS on N "
		    "threads; this host has %u; inferences/s of wall time, best of several windows; every output "
		    "compared with the reference\n",
		    net.name.c_str(), double(net.macs()) / 1e9, host_threads);
	Pairs pairs;
	for (unsigned p = 0; p < Pairs::kCount; p++) {
		pairs.in.push_back(cc::random_input(net, p + 1));
		pairs.want.push_back(cc::reference::run(net, pairs.in.back()));
	}
	const double budget = quick ? 1.0 : 3.0;
	const unsigned per_window = quick ? 2 : 4;
	std::string rows;
	for (unsigned nsps : nsp_counts) {
		cc::Options o;
		o.nsps = nsps;
		std::string err;
		const auto c = cc::compile(net, o, err);
		if (!c) {
			fail("compiling " + net.name + " for " + std::to_string(nsps) + " NSPs: " + err);
			continue;
		}
		const auto card = on_nsps(net, *c, nsps, pairs, budget, per_window);
		if (!card)
			continue;
		const Side blas = with_openblas(net, nsps, pairs, budget, per_window);
		rows += std::string(rows.empty() ? "" : ", ") + network_row(nsps, *c, *card, blas);
	}
	return "{\"name\": \"" + net.name + "\", \"macs\": " + num(double(net.macs())) +
	       ", \"host_threads\": " + std::to_string(host_threads) + ", \"runs\": [" + rows + "]}";
}

// A comma-separated list of numbers in lo..hi into `out`.
bool parse_counts(const std::string &list, unsigned lo, unsigned hi, std::vector<unsigned> &out)
{
	out.clear();
	for (size_t at = 0; at <= list.size();) {
		const size_t end = std::min(list.find(',', at), list.size());
		const unsigned n = unsigned(std::atoi(list.substr(at, end - at).c_str()));
		if (n < lo || n > hi)
			return false;
		out.push_back(n);
		at = end + 1;
	}
	return !out.empty();
}

int usage(const std::string &why)
{
	if (!why.empty())
		std::fprintf(stderr, "aic100-host-bench: %s\n", why.c_str());
	std::fprintf(stderr, "usage: aic100-host-bench [--quick] [--gemm M N K] [--only SECTION]... "
		     "[--nsps N[,N]...] [--resolutions R[,R]...] [--json FILE]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	bool quick = false;
	unsigned m = 256, n = 256, k = 256;
	std::string json_path;
	const std::vector<std::string> sections = {"memcpy", "gemm", "examples", "networks"};
	std::vector<std::string> only;
	std::vector<unsigned> nsp_counts = {1, 2, 4}, resolutions = {64};
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
		} else if (a == "--nsps" && i + 1 < argc) {
			if (!parse_counts(argv[++i], 1, nsp::kMaxNsps, nsp_counts))
				return usage("--nsps: each count in 1.." + std::to_string(nsp::kMaxNsps));
		} else if (a == "--resolutions" && i + 1 < argc) {
			if (!parse_counts(argv[++i], 32, 1024, resolutions) ||
			    std::any_of(resolutions.begin(), resolutions.end(), [](unsigned r) { return r % 32; }))
				return usage("--resolutions: each a multiple of 32 in 32..1024");
		} else if (a == "--only" && i + 1 < argc) {
			only.emplace_back(argv[++i]);
			if (std::find(sections.begin(), sections.end(), only.back()) == sections.end()) {
				return usage("--only " + only.back() + ": no such section (memcpy, gemm, examples, "
					     "networks)");
			}
		} else {
			return usage("");
		}
	}
	if (!m || !n || !k || m >= nsp::kMaxDim || n >= nsp::kMaxDim || k >= nsp::kMaxDim) {
		std::fprintf(stderr, "aic100-host-bench: --gemm: each of M N K in 1..%u\n", unsigned(nsp::kMaxDim) - 1);
		return 2;
	}
	// One thread, whatever OPENBLAS_NUM_THREADS says.
	openblas_set_num_threads(1);
	const auto wanted = [&](const std::string &name) {
		return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
	};
	std::string json = "{";
	const auto section = [&](const std::string &name, const std::function<std::string()> &run) {
		if (wanted(name))
			json += "\"" + name + "\": " + run() + ", ";
	};
	section("memcpy", [&] { return memcpy_rates(quick); });
	section("gemm", [&] { return gemm(m, n, k, quick ? 0.3 : 1.0); });
	section("examples", [&] { return examples(quick); });
	section("networks", [&] {
		std::string list;
		for (unsigned r : resolutions)
			list += (list.empty() ? "" : ", ") + network(quick, nsp_counts, r);
		return "[" + list + "]";
	});
	if (!json_path.empty()) {
		std::ofstream f(json_path);
		f << json << "\"outputs_ok\": " << (failed ? "false" : "true") << "}\n";
		if (!f) {
			std::fprintf(stderr, "aic100-host-bench: cannot write %s\n", json_path.c_str());
			return 1;
		}
	}
	return failed ? 1 : 0;
}
