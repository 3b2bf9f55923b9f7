// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/sbl.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

namespace aic100 {

namespace {

// Boot-time timesync header (qts_hdr): signature, reserved, msg_type at 5.
constexpr uint16_t kTsSignature = 0x55AA;
constexpr uint8_t kTsCmdToHost = 0, kTsSyncReq = 1, kTsAckToHost = 2;
constexpr size_t kTsHeader = 8, kTsSyncLen = 24;
constexpr size_t kMaxLogLine = 511; // the host's buffers are 512 bytes, NUL included

std::vector<uint8_t> ts_header(uint8_t type)
{
	std::vector<uint8_t> h(kTsHeader, 0);
	std::memcpy(h.data(), &kTsSignature, 2);
	h[5] = type;
	return h;
}

} // namespace

Sbl::Sbl(HostInterface &host, Mhi &mhi, Owner &owner, Family family)
	: host_(host), mhi_(mhi), owner_(owner), family_(family_config(family))
{
}

void Sbl::boot(const fw::Header &sbl, std::vector<uint32_t> manifest, std::shared_ptr<const RamDump> dump)
{
	stop();
	running_ = true;
	sbl_ = sbl;
	manifest_ = std::move(manifest);
	dump_ = std::move(dump);
	history_.clear();
	new_sahara_session();

	char line[160];
	std::snprintf(line, sizeof(line), "SBL: %.*s %u.%u.%u.%u started on %s serial 0x%08x",
		      static_cast<int>(strnlen(sbl.name, sizeof(sbl.name))), sbl.name, sbl.version[0], sbl.version[1],
		      sbl.version[2], sbl.version[3], family_.name, mhi_.config().serial_number);
	log(line);
	std::string ids;
	for (uint32_t id : manifest_)
		ids += " " + image_file(family_.family, id);
	log("SBL: manifest:" + (ids.empty() ? std::string(" (empty)") : ids));
	if (dump_) {
		char l[160];
		std::snprintf(l, sizeof(l), "SBL: restarted after a firmware failure; a RAM dump of %zu regions, %llu bytes, "
			      "waits for the host", dump_->regions().size(),
			      static_cast<unsigned long long>(dump_->total_bytes()));
		log(l);
	}
}

// A new Sahara session, from HELLO: in memory-debug mode while a dump waits.
void Sbl::new_sahara_session()
{
	sahara_ = std::make_unique<SaharaTarget>(*this, manifest_, dump_.get(), family_.family);
	dump_offer_deadline_ = HostInterface::kNoDeadline;
}

void Sbl::stop()
{
	running_ = false;
	sahara_.reset();
	dump_.reset();
	dump_offer_deadline_ = HostInterface::kNoDeadline;
	images_done_ = timesync_done_ = ts_client_seen_ = awaiting_ts_client_ = false;
	log_client_seen_ = awaiting_log_client_ = false;
	ts_request_held_ = false;
	handover_deadline_ = client_start_deadline_ = HostInterface::kNoDeadline;
	log_queue_.clear();
	held_.clear();
}

void Sbl::mhi_m0()
{
	if (running_)
		log("SBL: host attached (MHI M0)");
}

void Sbl::mhi_reset()
{
	if (!running_)
		return;
	// A new host session starts the image transfer over; what was already
	// logged but not delivered is still owed to the host.
	images_done_ = timesync_done_ = ts_client_seen_ = awaiting_ts_client_ = false;
	log_client_seen_ = awaiting_log_client_ = false;
	handover_deadline_ = client_start_deadline_ = HostInterface::kNoDeadline;
	new_sahara_session();
	log(dump_ ? "SBL: MHI reset by host; the RAM dump is offered again" :
		    "SBL: MHI reset by host; image transfer restarts");
}

void Sbl::channel_started(unsigned ch)
{
	if (!running_)
		return;
	switch (ch) {
	case chan::kSaharaUl:
	case chan::kSaharaDl:
		maybe_start_sahara();
		break;
	case chan::kLoggingDl:
		log_client_seen_ = true;
		flush_log();
		// A late client: the SBL now waits for it to read what was sent,
		// or leaves if nothing is owed.
		if (std::exchange(awaiting_log_client_, false))
			maybe_hand_over();
		break;
	case chan::kTimesyncDl:
		ts_client_seen_ = true;
		awaiting_ts_client_ = false;
		send_timesync_request();
		break;
	default:
		break;
	}
}

uint64_t Sbl::channel_resetting(unsigned ch)
{
	if (ch != chan::kLoggingDl || !hold_armed_ || held_.empty())
		return 0;
	// The host is taking the channel down: everything held goes out now.
	send_held_lines("at the host's channel reset");
	return hold_ack_delay_ns_;
}

// One line per buffer the host has posted; what finds no buffer is lost with
// the channel.
void Sbl::send_held_lines(const char *when)
{
	std::deque<std::string> lines;
	lines.swap(held_);
	lines.push_front("SBL: " + std::to_string(lines.size()) + " log lines held by test injection, released " +
			 when);
	hold_armed_ = false;
	host_.trace(lines.front().c_str());
	for (const std::string &l : lines) {
		std::vector<uint8_t> msg(l.begin(), l.end());
		msg.push_back(0);
		if (!mhi_.send(chan::kLoggingDl, std::move(msg)))
			break;
	}
}

void Sbl::hold_log(uint64_t ack_delay_ns, Release release)
{
	hold_armed_ = true;
	hold_ack_delay_ns_ = ack_delay_ns;
	hold_release_ = release;
}

void Sbl::stop_holding_log()
{
	hold_armed_ = false;
	while (!held_.empty()) {
		if (log_queue_.size() < kMaxLogQueue)
			log_queue_.push_back(std::move(held_.front()));
		held_.pop_front();
	}
	flush_log();
}

void Sbl::channel_stopped(unsigned ch)
{
	if (!running_)
		return;
	if ((ch == chan::kSaharaUl || ch == chan::kSaharaDl) && !images_done_ && sahara_ &&
	    sahara_->state() != SaharaTarget::State::Failed) {
		// The host's Sahara client went away mid-transfer; a new one
		// starts from HELLO again (with the dump, if it still waits).
		new_sahara_session();
	}
	// A logging or time-sync client that goes away owes nothing any more:
	// a handover that waited for it goes ahead now, not at the end of the
	// grace period.
	if (ch == chan::kLoggingUl || ch == chan::kLoggingDl || ch == chan::kTimesyncUl || ch == chan::kTimesyncDl)
		maybe_hand_over();
}

void Sbl::maybe_start_sahara()
{
	if (!sahara_ || !mhi_.channel_running(chan::kSaharaUl) || !mhi_.channel_running(chan::kSaharaDl))
		return;
	sahara_->start();
	if (sahara_->offering_dump() && dump_offer_deadline_ == HostInterface::kNoDeadline)
		dump_offer_deadline_ = host_.now_ns() + kDumpOfferTimeoutNs;
}

void Sbl::sahara_dump_ended(bool taken)
{
	(void)taken; // the session logged how it ended
	dump_.reset();
	dump_offer_deadline_ = HostInterface::kNoDeadline;
}

void Sbl::send_timesync_request()
{
	if (!mhi_.channel_running(chan::kTimesyncDl) || timesync_done_)
		return;
	if (ts_hold_armed_) {
		// Logged now, not at the handover: a line sent as the SBL leaves
		// would meet upstream's boot-log race instead.
		if (!std::exchange(ts_request_held_, true))
			log("SBL: time sync request held by test injection, to be sent as the SBL hands over to AMSS");
		return;
	}
	mhi_.send(chan::kTimesyncDl, ts_header(kTsCmdToHost));
}

void Sbl::stop_holding_timesync()
{
	ts_hold_armed_ = false;
	if (running_ && std::exchange(ts_request_held_, false))
		send_timesync_request();
}

void Sbl::ul_message(unsigned ch, std::span<const uint8_t> data)
{
	if (!running_)
		return;
	switch (ch) {
	case chan::kSaharaUl:
		if (sahara_)
			sahara_->receive(data);
		return;
	case chan::kTimesyncUl: {
		if (data.size() != kTsSyncLen || data[5] != kTsSyncReq) {
			log("SBL: timesync: malformed message of " + std::to_string(data.size()) + " bytes ignored");
			return;
		}
		uint64_t sec, usec;
		std::memcpy(&sec, data.data() + 8, 8);
		std::memcpy(&usec, data.data() + 16, 8);
		char line[128];
		std::snprintf(line, sizeof(line), "SBL: time synchronised with the host: UTC %" PRIu64 ".%06" PRIu64,
			      sec, usec % 1000000);
		log(line);
		timesync_done_ = true;
		mhi_.send(chan::kTimesyncDl, ts_header(kTsAckToHost));
		maybe_hand_over();
		return;
	}
	default:
		return; // QAIC_LOGGING's UL side carries nothing
	}
}

void Sbl::dl_drained(unsigned ch)
{
	if (running_ && (ch == chan::kLoggingDl || ch == chan::kTimesyncDl))
		maybe_hand_over();
}

void Sbl::log(const std::string &line)
{
	std::string l = line.substr(0, kMaxLogLine);
	host_.trace(l.c_str());
	if (history_.size() < 1024)
		history_.push_back(l);
	if (hold_armed_) {
		if (held_.size() < kMaxLogQueue)
			held_.push_back(std::move(l));
		return;
	}
	if (log_queue_.size() < kMaxLogQueue)
		log_queue_.push_back(std::move(l));
	flush_log();
}

void Sbl::flush_log()
{
	while (!log_queue_.empty() && mhi_.channel_running(chan::kLoggingDl)) {
		const std::string &l = log_queue_.front();
		std::vector<uint8_t> msg(l.begin(), l.end());
		msg.push_back(0); // the host reads each buffer as a C string
		if (!mhi_.send(chan::kLoggingDl, std::move(msg)))
			return;
		log_queue_.pop_front();
	}
}

void Sbl::sahara_send(std::vector<uint8_t> packet)
{
	mhi_.send(chan::kSaharaDl, std::move(packet));
}

void Sbl::sahara_log(const std::string &line)
{
	log(line);
}

void Sbl::sahara_finished(bool ok)
{
	if (!ok)
		return; // the failure is logged; the SBL waits for a reset
	images_done_ = true;
	handover_wait_noted_ = false;
	log("SBL: all images loaded; starting AMSS");
	handover_deadline_ = host_.now_ns() + kHandoverGraceNs;
	// A family without boot-time QAIC_TIMESYNC (AIC200) has no client
	// to wait for.
	awaiting_ts_client_ = family_.boot_timesync && !ts_client_seen_ && !ts_hold_armed_ && !timesync_done_;
	// Likewise a logging client: the SBL offloads its log to a client that
	// opens QAIC_LOGGING while it runs, so it stays for a late one.
	awaiting_log_client_ = !log_client_seen_;
	client_start_deadline_ = host_.now_ns() + kClientStartGraceNs;
	maybe_hand_over();
}

void Sbl::maybe_hand_over()
{
	if (!running_ || !images_done_)
		return;
	// Owed until the host has read every line: its logging client posts
	// each buffer again once it has taken the line out (upstream 6.12 does
	// that from a work item, and tears the channel down under it if the
	// card moves on first: docs/upstream-bugs.md).
	const bool log_owed = mhi_.channel_running(chan::kLoggingDl) &&
			      (mhi_.dl_backlog(chan::kLoggingDl) || !log_queue_.empty() ||
			       mhi_.dl_unreturned(chan::kLoggingDl));
	// Time sync is owed until the host has answered and has also posted
	// again the buffer that the card's last message (the ACK) filled:
	// upstream's client does that from a work item too, and oopses if the
	// channel is torn down before it runs (docs/upstream-bugs.md).
	const bool time_owed = mhi_.channel_running(chan::kTimesyncDl) && !ts_hold_armed_ &&
			       (!timesync_done_ || mhi_.dl_backlog(chan::kTimesyncDl) ||
				mhi_.dl_unreturned(chan::kTimesyncDl));
	// Nor has the host started QAIC_TIMESYNC or QAIC_LOGGING yet, for a while.
	const bool time_unstarted = awaiting_ts_client_;
	const bool log_unstarted = awaiting_log_client_;
	const bool release_held = hold_armed_ && hold_release_ == Release::AtHandover;
	const bool owed = (log_owed && !release_held) || time_owed || time_unstarted || log_unstarted;
	if (owed && host_.now_ns() < handover_deadline_) {
		if (!handover_wait_noted_) {
			// Rare, and the first thing to look at when a host never sees AMSS.
			char line[160];
			std::snprintf(line, sizeof(line), "SBL: AMSS waits for the host:%s%s%s%s",
				      log_owed && !release_held ? " its boot-log buffers back" : "",
				      time_owed ? " its time sync" : "",
				      time_unstarted ? " its time-sync client to start" : "",
				      log_unstarted ? " its logging client to start" : "");
			host_.trace(line);
			handover_wait_noted_ = true;
		}
		return;
	}
	if (owed) {
		// The host stopped answering: say what it left undone.
		char m[240];
		std::snprintf(m, sizeof(m),
			      "SBL: starting AMSS at the end of its %u s grace period; the host still owes:%s%s "
			      "(log: %zu lines unsent, %zu buffers not posted again; %zu events waiting for "
			      "event-ring credit)",
			      static_cast<unsigned>(kHandoverGraceNs / 1'000'000'000), log_owed ? " its boot log" : "",
			      time_owed ? " time sync" : "",
			      mhi_.dl_backlog(chan::kLoggingDl) + log_queue_.size(), mhi_.dl_unreturned(chan::kLoggingDl),
			      mhi_.events_without_credit());
		host_.guest_error(m);
		if (log_owed)
			host_.trace(("SBL: boot log " + mhi_.describe_dl(chan::kLoggingDl)).c_str());
	}
		if (release_held && mhi_.channel_running(chan::kLoggingDl))
		send_held_lines("as the SBL hands over to AMSS");
	if (ts_hold_armed_ && mhi_.channel_running(chan::kTimesyncDl)) {
		ts_hold_armed_ = false;
		ts_request_held_ = false;
		host_.trace("SBL: time sync request sent as the SBL hands over to AMSS (test injection)");
		mhi_.send(chan::kTimesyncDl, ts_header(kTsCmdToHost));
	}
	std::vector<LoadedImage> images = sahara_->take_images(); // the SBL keeps none
	running_ = false;
	handover_deadline_ = client_start_deadline_ = HostInterface::kNoDeadline;
	awaiting_ts_client_ = awaiting_log_client_ = false;
	for (unsigned ch : {chan::kSaharaUl, chan::kSaharaDl, chan::kLoggingUl, chan::kLoggingDl, chan::kTimesyncUl,
			    chan::kTimesyncDl}) {
		// Held log lines wait for the host's reset of the channel.
		if (ch == chan::kLoggingDl && hold_armed_ && !held_.empty())
			continue;
		mhi_.retire_channel(ch);
	}
	owner_.sbl_handover(std::move(images));
}

void Sbl::poll()
{
	if (running_ && sahara_ && host_.now_ns() >= dump_offer_deadline_) {
		dump_offer_deadline_ = HostInterface::kNoDeadline;
		sahara_->withdraw_dump();
	}
	const bool wait_over = running_ && images_done_ && host_.now_ns() >= handover_deadline_;
	if (running_ && (awaiting_ts_client_ || awaiting_log_client_) && host_.now_ns() >= client_start_deadline_)
		client_wait_over();
	else if (wait_over)
		maybe_hand_over();
}

// The clients the SBL waited for did not come: it says so and moves on.
void Sbl::client_wait_over()
{
	const std::string grace = std::to_string(kClientStartGraceNs / 1'000'000'000) + " s of the images";
	if (std::exchange(awaiting_ts_client_, false))
		log("SBL: no time sync: the host did not start QAIC_TIMESYNC within " + grace);
	// No client takes this line; the trace and a RAM dump's sbl.log do.
	if (std::exchange(awaiting_log_client_, false))
		log("SBL: boot log not offloaded: the host did not start QAIC_LOGGING within " + grace);
	maybe_hand_over();
}

uint64_t Sbl::next_deadline() const
{
	if (!running_)
		return HostInterface::kNoDeadline;
	const uint64_t client_start =
		awaiting_ts_client_ || awaiting_log_client_ ? client_start_deadline_ : HostInterface::kNoDeadline;
	const uint64_t handover =
		images_done_ ? std::min(handover_deadline_, client_start) : HostInterface::kNoDeadline;
	return std::min(handover, dump_offer_deadline_);
}

} // namespace aic100
