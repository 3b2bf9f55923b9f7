// SPDX-License-Identifier: GPL-2.0-or-later
// Runs a program container (docs/qpc.md) on a card through the qaic driver
// the way the open UMD does: the constants by LOAD_CONSTANTS_EX and
// LOAD_CONSTANTS_PAYLOAD, network.elf by LOAD_ELF, ACTIVATE with both; one
// BO per DMA buffer of the network descriptor and pipeline slot, with one
// slice per metadata DMA request on it (its semaphore operations as they
// are, device address ddr_base + devOffset); then per inference EXECUTE_BO
// of a slot's BOs in request order and WAIT_BO of its outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "datapath.h"
#include "nnc_client.h"
#include "pipeline.h"
#include "program.h"

namespace qaic {

class QpcPipeline {
public:
	QpcPipeline(const Device &dev, const aic100::qpc::Program &p, unsigned depth = 4);
	~QpcPipeline();
	QpcPipeline(const QpcPipeline &) = delete;
	QpcPipeline &operator=(const QpcPipeline &) = delete;

	// Loads, activates, creates and attaches the BOs. Empty, or why not.
	std::string setup();
	// `count` inferences; the inputs of inference i are make_input(i), the
	// network descriptor's inputs one after the other; check(i, outputs)
	// gets its outputs likewise and says what is wrong (empty: right).
	RunResult run(uint64_t count, const std::function<std::vector<uint8_t>(uint64_t)> &make_input,
		      const std::function<std::string(uint64_t, std::span<const uint8_t>)> &check);
	// How long run() waits for one output (ms; default 35000).
	void set_wait_timeout(uint32_t ms) { wait_ms_ = ms ? ms : 1; }

	uint32_t dbc() const { return act_.dbc_id; }
	const ActivateResult &activation() const { return act_; }

private:
	struct Buffer {
		uint32_t num;
		bool in;
		uint64_t size;
	};
	const Device &dev_;
	const aic100::qpc::Program &p_;
	unsigned depth_;
	uint32_t wait_ms_ = 35000;
	Nnc nnc_;
	uint32_t elf_id_ = 0, constants_id_ = 0;
	ActivateResult act_;
	bool active_ = false;
	std::vector<Buffer> order_;          // DMA buffers by their first request
	std::vector<std::vector<Bo>> slots_; // per slot, per entry of order_
};

} // namespace qaic
