// SPDX-License-Identifier: GPL-2.0-or-later
// The card's NSPs (docs/nsp.md): the interpreter of the virtual instruction
// set (aic100/nsp.h), and the host threads that run an activation's program
// once per NSP. The QSM loads and activates; the DMA Bridge shares the
// activation's semaphores with the programs.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "aic100/nsp.h"
#include "aic100/semaphores.h"

namespace aic100::nsp {

namespace kernels {
struct Scratch;
}

// Per activation, shared by its NSPs; read by the QSM.
struct Counters {
	std::atomic<uint64_t> busy_ns{0};    // time not spent waiting in SEMWAIT
	std::atomic<uint64_t> iterations{0}; // MARK instructions
};

// Where an activation's host threads spent their time, per instruction of
// each core: for tools that ask which part of a program is slow
// (Workers::set_profile()). Written by the worker threads, read after
// stop(). Not kept unless asked: the interpreter then reads no clock.
struct Profile {
	struct Core {
		unsigned thread = 0;         // the host thread that ran it
		std::vector<uint64_t> ns;    // per instruction: time in it (a SEMWAIT's blocked time too)
		std::vector<uint64_t> count; // per instruction: times it completed
	};
	struct Thread {
		uint64_t wall_ns = 0; // from start() to the end of its last core
		// On a host CPU: for the rest of wall_ns it slept or was preempted.
		uint64_t cpu_ns = 0;
		// Asleep with all its cores blocked (a thread shared by cores);
		// also counted in their SEMWAITs' ns, split between them.
		uint64_t idle_ns = 0;
	};
	std::vector<Core> cores;
	std::vector<Thread> threads;
};

// What one core of an activation was doing when it ended, for crash dumps.
struct CoreState {
	enum class State : uint32_t { Running = 0, Halted = 1, Fault = 2, Stopped = 3 };
	unsigned index = 0; // k of n
	State state = State::Running;
	uint64_t pc = 0;
	uint64_t executed = 0;
	// The window offset a faulting access wanted, else the address of the
	// instruction at pc (pc * 16).
	uint64_t fault_addr = 0;
	std::optional<Instr> instr; // the instruction at pc, if pc is in the program
	std::array<uint64_t, kNumRegs> regs{};
};

// One NSP running one instance of a program over a workload window.
class Core {
public:
	enum class Exit { Halted, Stopped, Fault, Blocked, Yielded };

	// NSP k of n: r1 = k, r2 = n. `program` and `window` must outlive the
	// Core.
	Core(std::span<const Instr> program, uint32_t entry, std::span<uint8_t> window, Semaphores &sems,
	     Counters &counters, unsigned k = 0, unsigned n = 1);
	Core(const Workload &w, std::span<uint8_t> window, Semaphores &sems, Counters &counters,
	     unsigned k = 0, unsigned n = 1);
	~Core();
	// The regions MMI8P may take its B from (the workload's .aic.packed,
	// sorted by offset; none by default), which must outlive the Core.
	void set_packed(std::span<const PackedRegion> regions) { packed_ = regions; }
	Core(const Core &) = delete;
	Core &operator=(const Core &) = delete;

	// Runs until HALT, a fault, or `stop` returns true. `stop` is polled at
	// least every few thousand instructions, at every taken backward branch,
	// while blocked in SEMWAIT and between the blocks of a GEMM; an
	// interrupted instruction is re-executed by the next run().
	// With a `slice` (the host thread takes turns between several cores),
	// a SEMWAIT that is not satisfied returns Blocked instead of sleeping
	// (pc stays on it: see blocked_on()), and once the slice has passed the
	// core returns Yielded at its next poll between instructions, so that
	// a core spinning on memory cannot starve the others.
	Exit run(const std::function<bool()> &stop, std::chrono::nanoseconds slice = {});
	// The condition of the SEMWAIT at pc, if that is where the core is.
	std::optional<Semaphores::Cond> blocked_on() const;
	// One instruction, for tests; false once halted or faulted. A SEMWAIT
	// that is not satisfied does not block: it leaves pc on itself.
	bool step();

	bool halted() const { return state_ == State::Halted; }
	bool faulted() const { return state_ == State::Fault; }
	const std::string &fault() const { return fault_; }
	uint64_t fault_addr() const { return fault_addr_; }
	uint64_t pc() const { return pc_; }
	uint64_t reg(unsigned i) const { return i < kNumRegs ? r_[i] : 0; }
	void set_reg(unsigned i, uint64_t v)
	{
		if (i && i < kNumRegs)
			r_[i] = v;
	}
	uint64_t executed() const { return executed_; } // instructions completed
	// Host memory the core keeps between instructions for its GEMMs
	// (packing buffers, copies of operands that overlapped C). Copies
	// larger than kScratchKept are let go when their GEMM ends.
	uint64_t scratch_bytes() const;
	static constexpr uint64_t kScratchKept = 1u << 20;
	// Per-instruction times into `p` (sized to the program) from the next
	// run() on; null: none (the default).
	void set_profile(Profile::Core *p) { prof_ = p; }
	CoreState snapshot(unsigned index) const;

private:
	enum class State { Running, Halted, Fault };
	enum class Result { Next, Jumped, Halt, Fault, Blocked, Stopped };

	Result exec(const Instr &in, const std::function<bool()> *stop);
	bool operands_ok(const Instr &in, Form form);
	Result put(unsigned i, uint64_t v);
	Result load_store(const Instr &in);
	Result sem_wait(const Instr &in, const std::function<bool()> *stop);
	Result sem_apply(const Instr &in);
	Result mark();
	Result vector_op(const Instr &in);
	Result vector_copy(const Instr &in);
	Result vector_binary(const Instr &in);
	Result vector_unary(const Instr &in);
	Result vector_reduce(const Instr &in);
	Result vector_bias(const Instr &in);
	Result im2col_maxpool(const Instr &in);
	Result requantize(const Instr &in);
	Result vector_addq(const Instr &in);
	Result gemm(const Instr &in, const std::function<bool()> *stop);
	bool declared_packed(const Instr &in, uint64_t off, const Mnk &s);
	bool reg_ok(const Instr &in, unsigned r);
	bool no_register(const Instr &in, unsigned r);
	uint8_t *range(const Instr &in, const char *what, uint64_t off, uint64_t count, uint64_t elem);
	Result fail(const Instr &in, const std::string &why);
	void ran_off_end(); // the fault of a pc past the program
	Result branch(const Instr &in, uint64_t target, const std::function<bool()> *stop);
	void flush_busy();
	int64_t charge(uint64_t at, int64_t since, Result res);

	std::span<const Instr> program_;
	std::span<const PackedRegion> packed_;
	std::span<uint8_t> window_;
	Semaphores &sems_;
	Counters &counters_;
	std::array<uint64_t, kNumRegs> r_{};
	uint64_t pc_;
	uint64_t executed_ = 0;
	State state_ = State::Running;
	std::string fault_;
	uint64_t fault_addr_ = 0;
	bool fault_addr_set_ = false;
	bool stop_requested_ = false; // a backward branch or a GEMM saw stop()
	bool sharing_ = false;         // run() with a slice: SEMWAIT does not sleep
	int64_t busy_since_ = -1;      // steady-clock ns, -1 outside run()
	std::unique_ptr<kernels::Scratch> scratch_;
	Profile::Core *prof_ = nullptr;
};

// The threads of one activation. Each NSP is a Core; the cores share
// min(NSPs, host cores) threads, core k on thread k mod threads, each
// thread running its cores in turn whenever one blocks or its slice ends:
// more threads than cores would only trade the same cores at every
// barrier, with a kernel context switch each time.
class Workers {
public:
	Workers() = default;
	~Workers();
	Workers(const Workers &) = delete;
	Workers &operator=(const Workers &) = delete;

	// Starts meta.nsp_count threads (or `nsps` if non-zero) running `w`'s
	// program. The workload is copied; `window`, `sems` and `counters` must
	// outlive stop(). The segments are not loaded: see load_segments().
	// `on_end`, if set, is called from the last thread when every core has
	// ended by itself (HALT or a fault), never after stop(); it must not
	// call start() or stop() of this object. False if already running or a
	// thread could not be created (nothing left running then).
	bool start(const Workload &w, std::span<uint8_t> window, Semaphores &sems, Counters &counters,
		   unsigned nsps = 0, std::function<void()> on_end = {});
	// At most this many threads for the next start(); 0 (the default):
	// the host's cores.
	void set_max_threads(unsigned n) { max_threads_ = n; }
	// Per-instruction times of the next start()'s cores and threads into
	// `p` (cleared and sized by start()), which must outlive stop(); null
	// (the default): none. Not while threads() is non-zero.
	void set_profile(Profile *p) { profile_ = p; }
	unsigned threads() const { return unsigned(threads_.size()); }
	// Stops every core between instructions (or between GEMM blocks), wakes
	// the ones blocked in SEMWAIT and joins them. Idempotent.
	void stop();
	bool running() const { return live_.load() > 0; }
	// A core faulted: the others were stopped; the first fault is kept
	// ("nsp K: ...") until the next start().
	bool faulted() const;
	std::string fault() const;
	// Makes core k fault between instructions, as if its hardware failed:
	// the fault reads "nsp K: injected fault: <why> at instruction <pc>" and
	// the other cores stop. False when no core k is running.
	bool inject_fault(unsigned k, const std::string &why);
	// Each core's state when it last ended (empty before the first end).
	std::vector<CoreState> states() const;

private:
	void body(unsigned t, unsigned stride);
	void size_profile(unsigned threads);
	void run_cores(std::span<const unsigned> ks, std::span<bool> ended, Profile::Thread *prof);
	void sleep_blocked(std::span<const unsigned> ks, const std::vector<std::unique_ptr<Core>> &cores,
			   std::span<const bool> ended, const std::vector<Semaphores::Cond> &waits,
			   const std::function<bool()> &stop, Profile::Thread *prof);
	void finish(unsigned k, const Core &core, Core::Exit exit);
	void record_end(unsigned k, const Core &core, Core::Exit exit);
	void note_fault(unsigned k, const char *why) noexcept;
	void fail_on_host(unsigned k, const char *why);
	void end_core(bool fault);
	void join();

	std::vector<Instr> program_;
	std::vector<PackedRegion> packed_;
	uint32_t entry_ = 0;
	unsigned n_ = 0;
	unsigned max_threads_ = 0;
	std::span<uint8_t> window_;
	Semaphores *sems_ = nullptr;
	Counters *counters_ = nullptr;
	Profile *profile_ = nullptr;
	std::function<void()> on_end_;
	std::vector<std::thread> threads_;
	std::atomic<bool> stop_{false};
	std::atomic<bool> stopped_by_owner_{false};
	std::atomic<unsigned> live_{0};
	mutable std::mutex mu_;
	std::string fault_;
	std::vector<CoreState> states_;
	unsigned inject_k_ = ~0u; // under mu_
	std::string inject_why_;
};

} // namespace aic100::nsp
