// SPDX-License-Identifier: GPL-2.0-or-later
// Runs an example NSP workload (tools/workloads) on a card through the qaic
// driver, the way an application would: load and activate it over NNC,
// attach an input and an output BO per pipeline slot with the workload's
// semaphore protocol on their slices, then keep `depth` inferences in
// flight: EXECUTE_BO both BOs of a slot, WAIT_BO its output, check it.
//
// Surviving a workload crash (docs/health.md, "SSR"): with our driver,
// EXECUTE_BO and WAIT_BO fail with EPIPE (RunResult::error == -EPIPE) once
// the card recovers the DBC; when the DBC is free again, recover()
// activates the loaded ELF anew and attaches the same BOs to the new DBC,
// and run() goes on. Upstream 6.12 sees nothing but WAIT_BO timing out.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "datapath.h"
#include "nnc_client.h"
#include "workloads.h"

namespace qaic {

struct RunResult {
	std::string problem;   // empty when every step worked
	int error = 0;         // the failed EXECUTE_BO/WAIT_BO's -errno (-EPIPE: the DBC is under SSR)
	uint64_t inferences = 0;
	uint64_t mismatches = 0;
	std::string first_mismatch;
	double seconds = 0;
};

// An activation whose workload only halts: a DBC with a window of DDR and no
// program, for moving data (tests, benchmarks). Deactivated and unloaded on
// destruction.
class DataChannel {
public:
	explicit DataChannel(const Device &dev, uint64_t window = 16ull << 20, uint32_t queue = 64);
	~DataChannel();
	DataChannel(const DataChannel &) = delete;
	DataChannel &operator=(const DataChannel &) = delete;

	// Empty when the activation worked, else what failed.
	const std::string &problem() const { return problem_; }
	const ActivateResult &activation() const { return act_; }
	uint32_t dbc() const { return act_.dbc_id; }
	uint64_t ddr_base() const { return act_.ddr_base; }

private:
	Nnc nnc_;
	uint32_t elf_ = 0;
	ActivateResult act_;
	std::string problem_;
};

class Pipeline {
public:
	Pipeline(const Device &dev, const aic100::workloads::Example &e, unsigned depth = 8);
	~Pipeline();
	Pipeline(const Pipeline &) = delete;
	Pipeline &operator=(const Pipeline &) = delete;

	// Loads, activates, creates and attaches the BOs. Empty, or why not.
	std::string setup();
	// `count` inferences over a few distinct inputs, each output checked
	// against the host reference when `check`. Stops at the first
	// EXECUTE_BO or WAIT_BO that fails (problem and error say which).
	RunResult run(uint64_t count, bool check = true);
	// After a crash of the workload (run() failed with -EPIPE and the card
	// has recovered the DBC): activates the ELF loaded by setup() again,
	// without loading it again, and attaches the BOs to the DBC it gets.
	// Retries for a while when the card still holds the crashed
	// activation's resources. Empty, or why not.
	std::string recover();
	// How long run() waits for one output, or for room in the queue,
	// before giving up (ms; default 35000).
	void set_wait_timeout(uint32_t ms) { wait_ms_ = ms ? ms : 1; }
	// EXECUTE_BO the input and the output of a slot one at a time rather
	// than together: a failed EXECUTE_BO then has nothing of its own
	// queued to take back. Upstream's error path takes back BOs that a
	// release of the DBC (an SSR, a reset) already took off its queue
	// (docs/upstream-bugs.md); this keeps a client out of that path.
	void set_one_bo_per_execute(bool on) { one_bo_per_execute_ = on; }
	// Outputs run() has received (and checked) since construction; may be
	// read from another thread while run() goes on, to know that the
	// workload is streaming.
	uint64_t completed() const { return completed_.load(std::memory_order_relaxed); }

	uint32_t dbc() const { return dbc_; }
	const ActivateResult &activation() const { return act_; }

private:
	std::string activate();
	std::string attach();
	int submit(unsigned slot);

	const Device &dev_;
	const aic100::workloads::Example &e_;
	unsigned depth_;
	uint32_t wait_ms_ = 35000;
	bool one_bo_per_execute_ = false;
	Nnc nnc_;
	uint32_t elf_id_ = 0;
	ActivateResult act_;
	bool active_ = false;
	uint32_t dbc_ = 0;
	std::vector<Bo> in_, out_;
	std::atomic<uint64_t> completed_{0};
};

} // namespace qaic
