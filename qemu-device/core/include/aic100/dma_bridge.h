// SPDX-License-Identifier: GPL-2.0-or-later
// BAR2 of the card: the DMA Bridge with its 16 DMA Bridge Channels (DBCs).
// An active DBC consumes the 64-byte request elements the host queues in its
// request FIFO (host memory), moves data between host memory and the card's
// DDR, runs the request's semaphore commands, rings device doorbells and
// writes 4-byte response elements (docs/dma-bridge.md).
//
// Its registers may be accessed from several threads at once (QEMU's vCPUs
// reach BAR2 without the BQL): read() and write() take the bridge's own
// lock, which guards the registers and what they are checked against.
// process(), activate(), deactivate() and reset() come from the host's big
// lock (QEMU's BQL), one at a time, though any of them may be called from
// inside the engine's DMA; the engine takes the register lock only to read
// or move a pointer, never across an access to host memory or an MSI (a
// DMA target may wait for every vCPU: pvpanic stopping the VM). The
// semaphores' change notifications (NSP threads) come in as a bit in the
// pending set and a kick.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "aic100/dbc.h"
#include "aic100/ddr.h"
#include "aic100/host.h"
#include "aic100/regs.h"
#include "aic100/semaphores.h"

namespace aic100 {

class DmaBridge {
public:
	DmaBridge(HostInterface &host, Ddr &ddr);

	uint64_t read(uint32_t offset, unsigned size);
	void write(uint32_t offset, uint64_t value, unsigned size);
	void reset();

	struct DbcRegs {
		uint32_t req_head = 0; // device-owned
		uint32_t req_tail = 0; // host-owned
		uint32_t rsp_head = 0; // host-owned
		uint32_t rsp_tail = 0; // device-owned
	};
	// A copy: the host may move its pointers meanwhile.
	DbcRegs dbc(unsigned i) const
	{
		const std::lock_guard<std::mutex> hold(mu_);
		return dbc_.at(i);
	}

	// The QSM hands a DBC to an activation with the FIFOs the host donated
	// (N request elements of 64 bytes, N response elements of 4 bytes); the
	// four pointers restart at 0.
	struct Queues {
		uint64_t req = 0;
		uint64_t rsp = 0;
		uint32_t n = 0;
		// The workload's window of device addresses [lo, hi): requests
		// may only touch DDR inside it.
		uint64_t lo = 0, hi = 0;
	};
	void activate(unsigned i, const Queues &q);
	// The DBC stops touching host memory before this returns.
	void deactivate(unsigned i);
	bool active(unsigned i) const { return active_.at(i); }
	const Queues &queues(unsigned i) const { return queues_.at(i); }
	Semaphores &semaphores(unsigned i) { return *sems_.at(i); }
	const Semaphores &semaphores(unsigned i) const { return *sems_.at(i); }

	// Works the requests the host queued; runs from the host's event loop.
	void process();

	// Status codes of response elements (the ABI's; DmaBridge::kOk etc.
	// name them here too).
	using Status = dbc::Status;
	using enum dbc::Status;
	// Longest linked list one request may follow.
	static constexpr uint32_t kMaxLinked = 65536;

	// Counts and the card's own view of time (HostInterface::now_ns()),
	// so that a benchmark can tell the DMA's cost from the rest of the
	// host's round trip: time spent copying each direction, the sum over
	// ended requests of start (left the request FIFO) to end, and the sum
	// over doorbells of the wait from the doorbell (the first REQTP write
	// since the last fetch) to the fetch of the next request.
	struct Stats {
		uint64_t requests = 0, bytes_in = 0, bytes_out = 0, responses = 0, errors = 0;
		uint64_t copy_ns_in = 0, copy_ns_out = 0, request_ns = 0;
		uint64_t doorbells = 0, doorbell_ns = 0;
	};
	const Stats &stats(unsigned i) const { return stats_.at(i); }

	// Bytes one process() call moves before it yields to the event loop;
	// a longer transfer goes on where it stopped in the next call. Every
	// request and linked-list descriptor read counts too, so that no guest
	// input makes one call long.
	static constexpr uint64_t kBudget = 64ull << 20;
	// What a byte of host memory outside RAM (device registers, or
	// nothing) costs of that budget: QEMU makes a register access for
	// every 1 to 8 bytes there, each one far slower than a copy, and maybe
	// a guest error. At most 64 KiB of them a pass, 16,384 accesses of 4
	// bytes (host().dma_extent() tells RAM from the rest). An MSI is such
	// a write too.
	static constexpr uint64_t kMmioWeight = HostInterface::kNotRamWeight;
	static constexpr uint64_t kMsiCost = 4 * kMmioWeight;
	// Requests one DBC works on at once (its DMA engines): they start in
	// FIFO order and their transfers overlap, so a later request may end
	// first, unless a DMA fence (sem_cmd bit 30: to-device, bit 29:
	// from-device) holds it until the earlier transfers of that direction
	// are complete. Requests with a presync start their transfers one
	// after the other.
	static constexpr unsigned kEngines = 4;
	// Bytes a transfer moves before the next overlapping one's turn.
	static constexpr uint64_t kQuantum = 64ull << 10;

private:
	// A request the DBC fetched: started (REQHP moved past it) or, the last
	// of the window only, waiting for its presync or fences.
	struct InFlight {
		uint8_t raw[64] = {};
		bool started = false;
		bool transfer_done = false;
		bool malformed = false; // a bad presync: no transfer, postsync or doorbell
		uint64_t start_ns = 0;   // when it left the request FIFO
		uint16_t status = 0;
		uint64_t done = 0;       // bytes of the bulk transfer or current descriptor moved
		uint64_t next_desc = 0;  // host address of the next linked descriptor, 0: none
		uint32_t descs = 0;      // linked descriptors followed
		bool have_desc = false;
		uint64_t desc_host = 0, desc_dev = 0, desc_len = 0;
	};
	// A DBC's fetched requests, in FIFO order.
	struct Window {
		std::array<InFlight, kEngines + 1> e{};
		unsigned n = 0;
	};
	enum class Step { Done, Blocked, Yield, Gone };

	// Runs DBC i until its FIFO is empty, everything left waits (on a
	// semaphore or a full response FIFO), or the budget is spent. True
	// when it should be re-run.
	bool run(unsigned i, uint64_t &budget);
	// Fetches and starts requests in FIFO order while engines are free.
	// `progress` is set when one started.
	Step issue(unsigned i, uint64_t &budget, bool &progress);
	bool can_start(unsigned i, const InFlight &f) const;
	void start(unsigned i, InFlight &f);
	// Ends the requests whose transfers are done, in FIFO order.
	Step complete_done(unsigned i, bool &progress, uint64_t &budget);
	Step transfer(unsigned i, InFlight &f, uint64_t &budget);
	Step transfer_linked(unsigned i, InFlight &f, uint64_t &budget);
	void complete(unsigned i, InFlight &f, uint64_t &budget);
	bool in_window(unsigned i, uint64_t addr, uint64_t len) const;
	uint16_t move(unsigned i, bool to_device, uint64_t host, uint64_t dev, uint64_t len);
	// How many of the `len` bytes at host address `host` the budget pays
	// for (kMmioWeight a byte outside RAM), taken from it. Less than `len`
	// leaves the budget at 0: the pass is over.
	uint64_t affordable(uint64_t host, uint64_t len, bool is_write, uint64_t &budget);
	// What an access made whole costs (a response element).
	uint64_t cost_of(uint64_t host, uint64_t len, bool is_write) const;
	void raise(unsigned i, uint64_t &budget);
	// The register state vCPUs share, under mu_.
	bool fifo_empty(unsigned i) const;
	bool rsp_full(unsigned i) const;
	void take_doorbell(unsigned i);
	void stop(unsigned i);
	// True when DBC i was stopped, reset or handed over since `gen`: the
	// host's DMA can reach the card's own registers, so any access to host
	// memory may have changed the DBC under the caller.
	bool gone(unsigned i, uint64_t gen) const { return gen_[i] != gen || !active_[i]; }

	HostInterface &host_;
	Ddr &ddr_;
	// Guards dbc_, active_, queues_ and doorbell_at_ against the vCPUs:
	// they change only under it, and vCPUs read them only under it. Held
	// briefly, and never across a call that may reach host memory: the
	// engine's DMA may come back to BAR2 (a read answers; the device
	// refuses the card's own writes), stop a DBC, or wait for the vCPUs.
	mutable std::mutex mu_;
	std::array<DbcRegs, regs::kNumDbc> dbc_{};
	std::array<bool, regs::kNumDbc> active_{};
	std::array<Queues, regs::kNumDbc> queues_{};
	std::array<std::unique_ptr<Semaphores>, regs::kNumDbc> sems_;
	std::array<Stats, regs::kNumDbc> stats_{};
	std::array<Window, regs::kNumDbc> window_{};
	std::array<uint64_t, regs::kNumDbc> gen_{};
	// When the doorbell not yet answered by a fetch rang (0: none).
	std::array<uint64_t, regs::kNumDbc> doorbell_at_{};
	std::atomic<uint32_t> pending_{0}; // DBCs with work to look at; NSP threads set bits
};

} // namespace aic100
