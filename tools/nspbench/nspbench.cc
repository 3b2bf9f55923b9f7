// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-nsp-bench: throughput of the NSP interpreter's GEMM kernels
// (every code path) against naive triple loops, and of one MMI8/MMF32
// instruction through the interpreter (in a program's loop). Best of
// several runs, one thread, timed in thread CPU time so that other load on
// the host matters less.
#include <aic100/nsp.h>
#include <aic100/nsp_run.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <time.h>
#include <vector>

#include "gemm_operands.h"

namespace nsp = aic100::nsp;
namespace nsp_run = aic100::nsp_run;

namespace {

double cpu_seconds()
{
	timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double best_seconds(const std::function<void()> &f, double budget_s)
{
	f(); // warm up: packing buffers, caches
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

// The textbook loops: i, j, then a dot product over k (B read down a column).
__attribute__((noinline)) void naive_ijk_f32(float *c, const float *a, const float *b, unsigned m, unsigned n,
					     unsigned k)
{
	for (unsigned i = 0; i < m; i++)
		for (unsigned j = 0; j < n; j++) {
			float s = 0;
			for (unsigned p = 0; p < k; p++)
				s += a[i * k + p] * b[p * n + j];
			c[i * n + j] = s;
		}
}

__attribute__((noinline)) void naive_ijk_i8(int32_t *c, const int8_t *a, const int8_t *b, unsigned m, unsigned n,
					    unsigned k)
{
	for (unsigned i = 0; i < m; i++)
		for (unsigned j = 0; j < n; j++) {
			int32_t s = 0;
			for (unsigned p = 0; p < k; p++)
				s += a[i * k + p] * b[p * n + j];
			c[i * n + j] = s;
		}
}

// i, k, j: rows of B stream, the inner loop is an axpy over a row of C.
__attribute__((noinline)) void naive_ikj_f32(float *c, const float *a, const float *b, unsigned m, unsigned n,
					     unsigned k)
{
	std::fill(c, c + size_t(m) * n, 0.0f);
	for (unsigned i = 0; i < m; i++)
		for (unsigned p = 0; p < k; p++) {
			const float av = a[i * k + p];
			for (unsigned j = 0; j < n; j++)
				c[i * n + j] += av * b[p * n + j];
		}
}

// The benchmark's size and time budget.
struct Shape {
	unsigned m = 512, n = 512, k = 512;
	double budget = 1.0;

	double ops() const { return 2.0 * m * n * k; }
};

// Prints one result: GOP/s of a GEMM of `shape` that took `s` seconds.
void report(const Shape &shape, const char *what, double s)
{
	std::printf("  %-34s %8.2f GOP/s  %9.3f ms\n", what, shape.ops() / s / 1e9, s * 1e3);
}

// The naive loop, then every kernel path; 1 when a path's result differs.
int bench_i8(const Shape &sh, const GemmOperands &operands, const std::vector<std::string> &paths)
{
	const auto &[m, n, k, budget] = sh;
	const auto &ai = operands.ai, &bi = operands.bi;
	std::vector<int32_t> ci(size_t(m) * n);
	std::printf("int8 x int8 -> int32\n");
	report(sh, "naive i,j,k loop", best_seconds([&] { naive_ijk_i8(ci.data(), ai.data(), bi.data(), m, n, k); }, budget));
	const std::vector<int32_t> want_i = ci;
	for (const std::string &path : paths) {
		nsp_run::Kernels kern(path);
		std::string label = "gemm_i8 " + path;
		report(sh, label.c_str(),
		       best_seconds([&] { kern.gemm_i8(ci.data(), ai.data(), bi.data(), m, n, k); }, budget));
		if (ci != want_i) {
			std::fprintf(stderr, "gemm_i8 %s: wrong result\n", path.c_str());
			return 1;
		}
	}
	return 0;
}

// The two naive loops, then every kernel path; 1 when a path's result is
// off.
int bench_f32(const Shape &sh, const GemmOperands &operands, const std::vector<std::string> &paths)
{
	const auto &[m, n, k, budget] = sh;
	const auto &af = operands.af, &bf = operands.bf;
	std::vector<float> cf(size_t(m) * n);
	std::printf("fp32\n");
	report(sh, "naive i,j,k loop", best_seconds([&] { naive_ijk_f32(cf.data(), af.data(), bf.data(), m, n, k); }, budget));
	report(sh, "naive i,k,j loop", best_seconds([&] { naive_ikj_f32(cf.data(), af.data(), bf.data(), m, n, k); }, budget));
	const std::vector<float> want_f = cf;
	for (const std::string &path : paths) {
		nsp_run::Kernels kern(path);
		std::string label = "gemm_f32 " + path;
		report(sh, label.c_str(),
		       best_seconds([&] { kern.gemm_f32(cf.data(), af.data(), bf.data(), m, n, k); }, budget));
		for (size_t i = 0; i < cf.size(); i++)
			if (std::abs(cf[i] - want_f[i]) > 1e-3f * (1 + std::abs(want_f[i]))) {
				std::fprintf(stderr, "gemm_f32 %s: wrong result at %zu\n", path.c_str(), i);
				return 1;
			}
	}
	return 0;
}

// The same GEMMs as instructions of a program: the interpreter's cost.
// Leaves the operands in `window`.
void bench_instructions(const Shape &sh, const GemmOperands &operands, std::vector<uint8_t> &window)
{
	const auto &[m, n, k, budget] = sh;
	const uint64_t a_off = 0, b_off = uint64_t(m) * k * 4, c_off = b_off + uint64_t(k) * n * 4;
	window.resize(c_off + uint64_t(m) * n * 4);
	std::memcpy(&window[a_off], operands.af.data(), operands.af.size() * 4);
	std::memcpy(&window[b_off], operands.bf.data(), operands.bf.size() * 4);
	// MMI8P reads B's bytes as its packed layout (no larger than K·N·4).
	for (nsp::Op op : {nsp::Op::MmI8, nsp::Op::MmI8P, nsp::Op::MmF32}) {
		// In a loop, as a workload runs it: `reps` GEMMs of ~20 ms
		// together per run.
		auto program = [&](uint64_t reps) { return gemm_loop_program(op, a_off, b_off, c_off, m, n, k, reps); };
		// MMI8P's B is declared, as a workload's .aic.packed does.
		const nsp::PackedRegion b_region{b_off, nsp::packed_b_size(k, n), k, n};
		auto run = [&](const std::vector<nsp::Instr> &prog) {
			nsp_run::run(prog, window, std::span(&b_region, 1));
		};
		const double t0 = cpu_seconds();
		run(program(1));
		const uint64_t reps = std::max<uint64_t>(1, uint64_t(0.02 / std::max(cpu_seconds() - t0, 1e-7)));
		const std::vector<nsp::Instr> prog = program(reps);
		const double s = best_seconds([&] { run(prog); }, budget) / double(reps);
		report(sh,
		       op == nsp::Op::MmI8    ? "MMI8 instruction (interpreter)"
		       : op == nsp::Op::MmI8P ? "MMI8P instruction (interpreter, B packed)"
					      : "MMF32 instruction (interpreter)",
		       s);
	}
}

// Dispatch cost: a counting loop of two instructions.
void bench_dispatch(double budget, std::vector<uint8_t> &window)
{
	const uint64_t iters = 20'000'000;
	const std::vector<nsp::Instr> loop = {
		{uint8_t(nsp::Op::Li), 4, 0, 0, 0, iters},
		{uint8_t(nsp::Op::Addi), 3, 3, 0, 0, 1},
		{uint8_t(nsp::Op::Bne), 3, 4, 0, 1, 0},
		{uint8_t(nsp::Op::Halt), 0, 0, 0, 0, 0},
	};
	const double s = best_seconds([&] { nsp_run::run(loop, window); }, budget);
	std::printf("scalar instructions (ADDI/BNE loop) %8.1f M/s\n", 2.0 * double(iters) / s / 1e6);
}

} // namespace

int main(int argc, char **argv)
{
	Shape sh;
	if (argc >= 4) {
		sh.m = unsigned(std::atoi(argv[1]));
		sh.n = unsigned(std::atoi(argv[2]));
		sh.k = unsigned(std::atoi(argv[3]));
	}
	if (argc >= 5)
		sh.budget = std::atof(argv[4]);
	if (!sh.m || !sh.n || !sh.k || sh.m >= nsp::kMaxDim || sh.n >= nsp::kMaxDim || sh.k >= nsp::kMaxDim) {
		std::fprintf(stderr, "usage: aic100-nsp-bench [M N K [SECONDS]]\n");
		return 2;
	}
	const GemmOperands operands(sh.m, sh.n, sh.k);
	std::printf("GEMM %ux%ux%u, one thread, best of %.1f s of CPU each (GOP/s = 2*M*N*K / time)\n", sh.m, sh.n, sh.k,
		    sh.budget);
	const std::vector<std::string> paths = nsp_run::Kernels::paths();
	if (bench_i8(sh, operands, paths) || bench_f32(sh, operands, paths))
		return 1;
	std::vector<uint8_t> window;
	bench_instructions(sh, operands, window);
	bench_dispatch(sh.budget, window);
	return 0;
}
