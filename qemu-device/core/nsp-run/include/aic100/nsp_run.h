// SPDX-License-Identifier: GPL-2.0-or-later
// The card's NSP interpreter for host programs that run NSP code outside a
// card: the benchmarks and aic100-compile --run. It is the tools' only way
// into the device core (all else they share with the card is its ABI, in
// abi/): the interpreter's own classes (Core, Workers, Semaphores, the
// kernels' buffers) stay behind it, free to change without the tools
// noticing.
#pragma once

#include <aic100/nsp.h>
#include <aic100/sem.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aic100::nsp_run {

// How a program ended on one core.
struct Result {
	bool halted = false;   // at HALT; else a fault
	uint64_t executed = 0; // instructions completed
	std::string fault;     // why, when it did not halt
};

// Runs `program` from instruction 0 on one core over `window` (r1 = 0,
// r2 = 1, semaphores all 0) until HALT or a fault, on the calling thread.
// Nothing else moves the semaphores: a SEMWAIT that does not hold at once
// waits for ever. `packed`: the regions MMI8P may read its B from (as a
// workload's .aic.packed declares them, sorted by offset).
Result run(std::span<const nsp::Instr> program, std::span<uint8_t> window,
	   std::span<const nsp::PackedRegion> packed = {});

// Where an activation's host threads spent their time (Activation's
// profiling): per core, the time in each instruction and how often it
// completed; per host thread, its wall time and its sleeps.
struct Profile {
	struct Core {
		unsigned thread = 0;         // the host thread that ran it
		std::vector<uint64_t> ns;    // per instruction; a SEMWAIT's blocked time too
		std::vector<uint64_t> count; // per instruction: times it completed
	};
	struct Thread {
		uint64_t wall_ns = 0;
		// On a host CPU: for the rest of wall_ns it slept or was preempted.
		uint64_t cpu_ns = 0;
		// Asleep with all its cores blocked (a thread shared by cores):
		// also in those cores' SEMWAIT ns.
		uint64_t idle_ns = 0;
	};
	std::vector<Core> cores;
	std::vector<Thread> threads;
};

// One activation as the card runs it: the workload's program on its NSPs,
// on host threads shared as on the card, over `window`, with the DBC's
// semaphores, whose host side the caller plays.
class Activation {
public:
	Activation();
	~Activation(); // stop()
	Activation(const Activation &) = delete;
	Activation &operator=(const Activation &) = delete;

	// Starts meta.nsp_count cores (or `nsps` if non-zero), the semaphores
	// all 0. `window` must outlive stop(); the workload's segments are not
	// loaded (nsp::load_segments()). False if already running, for more
	// than nsp::kMaxNsps cores, or if the threads could not be created.
	bool start(const nsp::Workload &w, std::span<uint8_t> window, unsigned nsps = 0);
	// Stops and joins the cores. Idempotent.
	void stop();
	// Whether the next start() profiles its cores (off by default: the
	// interpreter then reads no clock per instruction). Before start() or
	// after stop(): false (nothing changed) while threads are there.
	bool set_profiling(bool on);
	// The last profiled start()'s profile, complete after stop().
	Profile profile() const;
	unsigned threads() const; // host threads of the last start()
	bool faulted() const;     // a core faulted (the others were stopped)
	std::string fault() const;
	uint64_t iterations() const; // MARK instructions executed

	// INIT, INC or DEC on semaphore `index`; false for a wait op or an
	// index of kCount or more.
	bool apply(unsigned index, sem::Op op, uint16_t value);
	// Blocks until the wait op on semaphore `index` holds (true), or
	// until a core faults or `give_up` returns true (false). `give_up` is
	// polled at least every 10 ms.
	bool wait(unsigned index, sem::Op op, uint16_t value, const std::function<bool()> &give_up = {});

private:
	struct State;
	std::unique_ptr<State> s_;
};

// The kernels behind MMI8, MMF32, IM2COL and MAXPOOLI8 called directly on
// host memory, with no window and no checks: what the benchmarks time
// against other libraries. Every code path gives the same results, bit for
// bit (docs/nsp.md).
class Kernels {
public:
	// The code paths this CPU runs, plainest first; the interpreter uses
	// the last.
	static std::vector<std::string> paths();
	// On code path `path` (a name from paths()); the interpreter's if
	// empty or unknown.
	explicit Kernels(std::string_view path = {});
	~Kernels();
	Kernels(const Kernels &) = delete;
	Kernels &operator=(const Kernels &) = delete;
	const std::string &path() const { return path_; }

	// C[m×n] = A[m×k] × B[k×n], row-major: MMI8 (int32 accumulation,
	// wrapping) and MMF32.
	void gemm_i8(int32_t *c, const int8_t *a, const int8_t *b, uint32_t m, uint32_t n, uint32_t k);
	void gemm_f32(float *c, const float *a, const float *b, uint32_t m, uint32_t n, uint32_t k);

	// Output rows row0 .. row0+rows-1 of a K×K window moved by `stride`
	// over an H×W×C int8 NHWC tensor padded by `pad` (nsp::Geom): IM2COL's
	// matrix and MAXPOOLI8's output.
	static void im2col_i8(int8_t *dst, const int8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
			      uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows);
	static void maxpool_i8(int8_t *dst, const int8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
			       uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows);

private:
	struct State; // the code path and the GEMMs' packing buffers
	std::unique_ptr<State> s_;
	std::string path_;
};

} // namespace aic100::nsp_run
