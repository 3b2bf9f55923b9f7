// SPDX-License-Identifier: GPL-2.0-or-later
// Subsystem restart (SSR) on QAIC_SSR: after a workload crashed, the QSM's
// exchange with the host that recovers its DBC (BEFORE/AFTER_SHUTDOWN,
// BEFORE/AFTER_POWER_UP) and hands over the crash dump through
// DEBUG_TRANSFER_INFO and MEMORY_READ (docs/health.md, "SSR"). One DBC at a
// time; later crashes wait their turn. What goes in the dump is the QSM's.
// The messages are the card's ABI (aic100/ssr_wire.h).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aic100/host.h"
#include "aic100/mhi.h"
#include "aic100/ssr_wire.h"

namespace aic100 {

namespace ssr {
// How long the card waits for each of the host's answers (virtual time).
inline constexpr uint64_t kTimeoutNs = 10'000'000'000ull;
} // namespace ssr

class Ssr {
public:
	class Owner {
	public:
		virtual ~Owner() = default;
		// The DBC's recovery is over (with or without the host): its
		// NSPs and the DBC itself may be given out again.
		virtual void ssr_done(unsigned dbc) = 0;
	};

	struct Region {
		std::string desc, filename; // at most 19 characters each are kept
		std::vector<uint8_t> data;  // not empty
	};

	Ssr(HostInterface &host, Mhi &mhi, Owner &owner);

	// A workload on `dbc` crashed; `dump` is what the host may download.
	// With `hold`, the recovery stops once the host acknowledged
	// BEFORE_POWER_UP, as a card whose NSPs are slow to power up would,
	// until release() or kTimeoutNs (a test's window on a DBC mid-SSR).
	void crash(unsigned dbc, std::vector<Region> dump, bool hold = false);
	// Lets a held recovery go on, or one that asked to be held and has not
	// reached the hold yet pass it; empty when done, else why not.
	std::string release();
	// A message on QAIC_SSR's host-to-card channel.
	void ul_message(std::span<const uint8_t> msg);
	// The host stopped one of the channels: a recovery under way carries on
	// without it.
	void channel_stopped();
	// Expired waits; runs from the event loop.
	void poll();
	uint64_t next_deadline() const;
	// AMSS stops or MHI resets: every recovery is dropped without calling
	// the owner (which releases everything itself).
	void reset();

	// Both QAIC_SSR channels run: a host SSR client is there.
	bool host_listens() const;
	bool busy() const { return job_.has_value(); }
	// The DBC under recovery or waiting for it.
	bool recovering(unsigned dbc) const;
	uint64_t recoveries() const { return recoveries_; }
	// Recoveries the host did not see through (timeout, channel stopped).
	uint64_t abandoned() const { return abandoned_; }

private:
	enum class Stage { BeforeShutdown, AfterShutdown, BeforePowerUp, TransferInfo, Transfer, AfterPowerUp, Held };
	struct Job {
		unsigned dbc;
		std::vector<uint8_t> area; // table, then the regions
		uint64_t table_len;
		bool hold = false;
	};

	void start_next();
	void enter(Stage s);
	bool send(uint32_t cmd, std::span<const uint8_t> body);
	void memory_read(std::span<const uint8_t> msg);
	void finish(bool with_host);
	void refuse(const char *why);

	HostInterface &host_;
	Mhi &mhi_;
	Owner &owner_;
	std::deque<Job> queue_;
	std::optional<Job> job_;
	Stage stage_ = Stage::BeforeShutdown;
	uint64_t deadline_ = HostInterface::kNoDeadline;
	uint64_t recoveries_ = 0, abandoned_ = 0;
	bool starting_ = false; // start_next() is running
};

} // namespace aic100
