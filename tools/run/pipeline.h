// SPDX-License-Identifier: GPL-2.0-or-later
// Runs an example NSP workload (tools/workloads) on a card through the qaic
// driver, the way an application would: load and activate it over NNC,
// attach an input and an output BO per pipeline slot with the workload's
// semaphore protocol on their slices, then keep `depth` inferences in
// flight: EXECUTE_BO both BOs of a slot, WAIT_BO its output, check it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datapath.h"
#include "nnc_client.h"
#include "workloads.h"

namespace qaic {

struct RunResult {
	std::string problem;   // empty when every step worked
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
	// against the host reference when `check`.
	RunResult run(uint64_t count, bool check = true);

	uint32_t dbc() const { return dbc_; }
	const ActivateResult &activation() const { return act_; }

private:
	const Device &dev_;
	const aic100::workloads::Example &e_;
	unsigned depth_;
	Nnc nnc_;
	uint32_t elf_id_ = 0;
	ActivateResult act_;
	bool active_ = false;
	uint32_t dbc_ = 0;
	std::vector<Bo> in_, out_;
};

} // namespace qaic
