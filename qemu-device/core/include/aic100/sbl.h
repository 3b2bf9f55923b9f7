// SPDX-License-Identifier: GPL-2.0-or-later
// The secondary boot loader, running once PBL accepted sbl.bin over BHI or
// BHIe: it writes its boot log on QAIC_LOGGING, takes the host's time on
// QAIC_TIMESYNC (a channel AIC200 lacks), fetches the runtime images of its
// manifest over QAIC_SAHARA and then hands over to AMSS.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "aic100/mhi.h"
#include "aic100/sahara.h"

namespace aic100 {

namespace chan {
// Channel numbers (even: host to card, odd: card to host).
inline constexpr unsigned kLoopbackUl = 0, kLoopbackDl = 1;
inline constexpr unsigned kSaharaUl = 2, kSaharaDl = 3;
inline constexpr unsigned kControlUl = 10, kControlDl = 11;
inline constexpr unsigned kLoggingUl = 12, kLoggingDl = 13;
inline constexpr unsigned kTimesyncUl = 20, kTimesyncDl = 21;
inline constexpr unsigned kTimesyncPeriodicUl = 22, kTimesyncPeriodicDl = 23;
} // namespace chan

class Sbl final : public SaharaTarget::Io {
public:
	// Called when the SBL is done: with the loaded images on success.
	class Owner {
	public:
		virtual ~Owner() = default;
		virtual void sbl_handover(std::vector<LoadedImage> images) = 0;
	};

	Sbl(HostInterface &host, Mhi &mhi, Owner &owner, Family family = Family::Aic100);

	// PBL started the SBL with this manifest (fresh boot). With `dump`, the
	// SBL runs again after a firmware failure: it offers the RAM dump over
	// Sahara before it fetches the images (docs/health.md).
	void boot(const fw::Header &sbl, std::vector<uint32_t> manifest, std::shared_ptr<const RamDump> dump = nullptr);
	// What the SBL was last started with, for a restart after a failure.
	const fw::Header &header() const { return sbl_; }
	const std::vector<uint32_t> &manifest() const { return manifest_; }
	// A RAM dump is waiting for the host (offered or not yet).
	bool dump_pending() const { return dump_ != nullptr; }
	void stop();

	// MHI events while the card runs the SBL.
	void mhi_m0();
	void mhi_reset();
	void channel_started(unsigned ch);
	// The host resets `ch` (Mhi's channel_resetting): returns how long the
	// card takes to acknowledge it.
	uint64_t channel_resetting(unsigned ch);
	void channel_stopped(unsigned ch);
	void ul_message(unsigned ch, std::span<const uint8_t> data);
	void dl_drained(unsigned ch);

	void poll();
	uint64_t next_deadline() const;

	bool running() const { return running_; }
	bool failed() const { return sahara_ && sahara_->state() == SaharaTarget::State::Failed; }
	const std::vector<std::string> &log_history() const { return history_; }

	// Test injection "bootlog hold" (docs/health.md): from now on, in this
	// boot and later ones, the SBL keeps its boot-log lines instead of
	// sending them, and sends them all at once, into the buffers the host
	// has posted, at the release point:
	//  - AtChannelReset: when the host resets QAIC_LOGGING (it does when it
	//    removes its logging client while the SBL runs); the reset is
	//    acknowledged `ack_delay_ns` later. If the SBL hands over first, it
	//    keeps the channel past its handover for this.
	//  - AtHandover: as the SBL hands over to AMSS, without waiting for the
	//    host to read them: the host's logging client is removed for the
	//    EE change while those lines are still on their way through it.
	// One release per arming.
	enum class Release { AtChannelReset, AtHandover };
	void hold_log(uint64_t ack_delay_ns, Release release = Release::AtChannelReset);
	// "bootlog normal": stop holding; what is held is sent as usual.
	void stop_holding_log();
	bool log_held() const { return hold_armed_; }
	size_t held_lines() const { return held_.size(); }

	// Test injection "timesync hold" (docs/health.md): from now on, in this
	// boot and later ones, the SBL does not ask the host for its time when
	// the host's time-sync client starts QAIC_TIMESYNC, does not wait for
	// time sync before it hands over, and sends its request as it hands
	// over to AMSS instead, into the buffer the host posted, without waiting
	// for the host to take it: the host's time-sync client is removed for
	// the EE change while that message is on its way through it. One
	// release per arming.
	void hold_timesync() { ts_hold_armed_ = true; }
	// "timesync normal": stop holding; a request held this boot goes out now.
	void stop_holding_timesync();
	bool timesync_held() const { return ts_hold_armed_; }

	// After the images are in, how long the SBL waits for a host whose
	// logging and time-sync clients are up to drain the boot log and answer
	// time sync before it starts AMSS anyway. Generous: a busy host is slow,
	// not gone, and its boot log must not be lost to it; only a host that
	// stopped reading altogether waits this long.
	static constexpr uint64_t kHandoverGraceNs = 60'000'000'000;
	// After the images are in, how long the SBL waits for the host to
	// start QAIC_LOGGING and QAIC_TIMESYNC if it has not yet: the host's
	// clients probe one after another (upstream qaic even registers them
	// only after the card began to boot: docs/upstream-bugs.md), and under
	// load the images can be in before they are up. A host without such
	// clients boots this much later. Also an upper bound on the wait, so
	// only a stalled host loses its boot log or time sync.
	static constexpr uint64_t kClientStartGraceNs = 10'000'000'000;
	// How long the SBL waits for the host to answer its memory-debug
	// HELLO before it withdraws the dump and asks for the images: a host
	// whose Sahara client knows only image transfer (upstream 6.12) never
	// answers it. Virtual time; a host that does take dumps answers in
	// milliseconds.
	static constexpr uint64_t kDumpOfferTimeoutNs = 5'000'000'000;

private:
	void sahara_send(std::vector<uint8_t> packet) override;
	void sahara_log(const std::string &line) override;
	void sahara_finished(bool ok) override;
	void sahara_dump_ended(bool taken) override;
	void new_sahara_session();

	void log(const std::string &line);
	void flush_log();
	void send_held_lines(const char *when);
	void maybe_start_sahara();
	void send_timesync_request();
	void maybe_hand_over();
	void client_wait_over();

	HostInterface &host_;
	Mhi &mhi_;
	Owner &owner_;
	const FamilyConfig &family_;
	bool running_ = false;
	fw::Header sbl_{};
	std::vector<uint32_t> manifest_;
	std::unique_ptr<SaharaTarget> sahara_;
	std::shared_ptr<const RamDump> dump_; // offered until taken or withdrawn
	uint64_t dump_offer_deadline_ = HostInterface::kNoDeadline;
	bool images_done_ = false;
	bool timesync_done_ = false;
	uint64_t handover_deadline_ = HostInterface::kNoDeadline;
	uint64_t client_start_deadline_ = HostInterface::kNoDeadline; // for late logging/time-sync clients
	bool ts_client_seen_ = false;     // the host started QAIC_TIMESYNC in this boot
	bool awaiting_ts_client_ = false; // the images are in; the SBL waits for it to
	bool log_client_seen_ = false;    // the host started QAIC_LOGGING in this boot
	bool awaiting_log_client_ = false; // the images are in; the SBL waits for it to
	bool handover_wait_noted_ = false; // the trace says once why AMSS waits
	std::deque<std::string> log_queue_; // not yet sent
	bool hold_armed_ = false;           // survives reboots until released
	bool ts_hold_armed_ = false;        // "timesync hold": survives reboots until released
	bool ts_request_held_ = false;      // kept back by that hold, this boot
	Release hold_release_ = Release::AtChannelReset;
	uint64_t hold_ack_delay_ns_ = 0;
	std::deque<std::string> held_;      // kept back by the hold, this boot
	std::vector<std::string> history_;  // everything logged this boot
	static constexpr size_t kMaxLogQueue = 256;
};

} // namespace aic100
