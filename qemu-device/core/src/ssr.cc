// SPDX-License-Identifier: GPL-2.0-or-later
// SSR exchange on QAIC_SSR (docs/health.md, "SSR").
#include "aic100/ssr.h"
#include "aic100/wire.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace aic100 {

using wire::load;

using namespace ssr;

namespace {

uint32_t event_of(int stage)
{
	static const uint32_t events[] = {kBeforeShutdown, kAfterShutdown, kBeforePowerUp, 0, 0, kAfterPowerUp, 0};
	return events[stage];
}

const char *stage_name(int stage)
{
	static const char *const names[] = {"BEFORE_SHUTDOWN",     "AFTER_SHUTDOWN", "BEFORE_POWER_UP",
					    "DEBUG_TRANSFER_INFO", "MEMORY_READ",    "AFTER_POWER_UP",
					    "the hold"};
	return names[stage];
}

} // namespace

Ssr::Ssr(HostInterface &host, Mhi &mhi, Owner &owner) : host_(host), mhi_(mhi), owner_(owner)
{
}

bool Ssr::host_listens() const
{
	return mhi_.channel_running(kUl) && mhi_.channel_running(kDl);
}

bool Ssr::recovering(unsigned dbc) const
{
	if (job_ && job_->dbc == dbc)
		return true;
	return std::any_of(queue_.begin(), queue_.end(), [dbc](const Job &j) { return j.dbc == dbc; });
}

void Ssr::crash(unsigned dbc, std::vector<Region> dump, bool hold)
{
	// The table, then each region at a 64-byte boundary.
	const uint64_t table_len = dump.size() * kTableEntrySize;
	uint64_t size = table_len;
	for (const Region &r : dump)
		size += (r.data.size() + 63) & ~uint64_t{63};
	Job job{dbc, std::vector<uint8_t>(size, 0), table_len, hold};
	uint64_t at = table_len;
	for (size_t i = 0; i < dump.size(); i++) {
		const Region &r = dump[i];
		const size_t e = i * kTableEntrySize;
		wire::store<uint64_t>(job.area.data(), e, 0); // save_perf: mandatory
		wire::store<uint64_t>(job.area.data(), e + 8, kDebugBase + at);
		wire::store<uint64_t>(job.area.data(), e + 16, r.data.size());
		std::memcpy(job.area.data() + e + 24, r.desc.data(), std::min(r.desc.size(), kDescSize - 1));
		std::memcpy(job.area.data() + e + 24 + kDescSize, r.filename.data(),
			    std::min(r.filename.size(), kFileNameSize - 1));
		std::memcpy(job.area.data() + at, r.data.data(), r.data.size());
		at += (r.data.size() + 63) & ~uint64_t{63};
	}
	queue_.push_back(std::move(job));
	if (!job_)
		start_next();
}

void Ssr::start_next()
{
	if (starting_)
		return; // the loop below, further up the stack, goes on
	starting_ = true;
	while (!job_ && !queue_.empty()) {
		job_ = std::move(queue_.front());
		queue_.pop_front();
		char msg[64];
		std::snprintf(msg, sizeof(msg), "SSR: DBC %u recovering", job_->dbc);
		host_.trace(msg);
		if (!host_listens()) {
			// Nobody to tell (a host without an SSR client): the card
			// recovers on its own.
			finish(false);
			continue;
		}
		enter(Stage::BeforeShutdown);
	}
	starting_ = false;
}

void Ssr::enter(Stage s)
{
	stage_ = s;
	deadline_ = host_.now_ns() + kTimeoutNs;
	bool sent = true;
	switch (s) {
	case Stage::BeforeShutdown:
	case Stage::AfterShutdown:
	case Stage::BeforePowerUp:
	case Stage::AfterPowerUp: {
		const uint32_t ev = event_of(static_cast<int>(s));
		sent = send(kEvent, std::span(reinterpret_cast<const uint8_t *>(&ev), 4));
		break;
	}
	case Stage::TransferInfo: {
		if (job_->area.empty()) {
			enter(Stage::AfterPowerUp);
			return;
		}
		uint8_t body[20] = {};
		const uint64_t addr = kDebugBase, len = job_->table_len;
		std::memcpy(body + 4, &addr, 8);
		std::memcpy(body + 12, &len, 8);
		sent = send(kDebugTransferInfo, body);
		break;
	}
	case Stage::Transfer:
		break; // the host asks
	case Stage::Held:
		host_.trace("SSR: recovery held before power-up");
		break;
	}
	if (!sent) {
		host_.guest_error("SSR: the host takes no more messages on QAIC_SSR; recovering without it");
		finish(false);
	}
}

bool Ssr::send(uint32_t cmd, std::span<const uint8_t> body)
{
	std::vector<uint8_t> m(sizeof(Header) + body.size());
	const Header h{cmd, static_cast<uint32_t>(m.size()), job_->dbc};
	std::memcpy(m.data(), &h, sizeof(h));
	if (!body.empty())
		std::memcpy(m.data() + sizeof(h), body.data(), body.size());
	return mhi_.send(kDl, std::move(m));
}

void Ssr::refuse(const char *why)
{
	char msg[160];
	std::snprintf(msg, sizeof(msg), "SSR: message refused: %s", why);
	host_.guest_error(msg);
}

void Ssr::ul_message(std::span<const uint8_t> msg)
{
	if (msg.size() < sizeof(Header))
		return refuse("shorter than its 12-byte header");
	const auto h = load<Header>(msg, 0);
	if (h.len != msg.size())
		return refuse("len disagrees with the size received");
	if (!job_)
		return refuse("no recovery under way");
	if (h.dbc_id != job_->dbc)
		return refuse("dbc_id is not the DBC under recovery");
	switch (h.cmd) {
	case kEventRsp: {
		if (msg.size() < 16)
			return refuse("SSR_EVENT_RSP shorter than 16 bytes");
		const uint32_t ev = load<uint32_t>(msg, 12);
		const uint32_t want = event_of(static_cast<int>(stage_));
		if (!want || (ev != want && ev != kNack))
			return refuse("SSR_EVENT_RSP out of order");
		// A NACK does not stop the card: the DBC is recovered either way.
		switch (stage_) {
		case Stage::BeforeShutdown:
			return enter(Stage::AfterShutdown);
		case Stage::AfterShutdown:
			return enter(Stage::BeforePowerUp);
		case Stage::BeforePowerUp:
			return enter(job_->hold ? Stage::Held : Stage::TransferInfo);
		default:
			return finish(true);
		}
	}
	case kDebugTransferInfoRsp:
		if (stage_ != Stage::TransferInfo)
			return refuse("DEBUG_TRANSFER_INFO_RSP out of order");
		if (msg.size() < 16)
			return refuse("DEBUG_TRANSFER_INFO_RSP shorter than 16 bytes");
		return enter(load<uint32_t>(msg, 12) == 0 ? Stage::Transfer : Stage::AfterPowerUp);
	case kMemoryRead:
		if (stage_ != Stage::Transfer)
			return refuse("MEMORY_READ outside a dump transfer");
		if (msg.size() < 32)
			return refuse("MEMORY_READ shorter than 32 bytes");
		return memory_read(msg);
	case kDebugTransferDone: {
		if (stage_ != Stage::Transfer)
			return refuse("DEBUG_TRANSFER_DONE outside a dump transfer");
		const uint32_t ok = 0;
		if (!send(kDebugTransferDoneRsp, std::span(reinterpret_cast<const uint8_t *>(&ok), 4))) {
			host_.guest_error("SSR: the host takes no more messages on QAIC_SSR; recovering without it");
			return finish(false);
		}
		return enter(Stage::AfterPowerUp);
	}
	default:
		return refuse("unknown command");
	}
}

void Ssr::memory_read(std::span<const uint8_t> msg)
{
	const uint64_t addr = load<uint64_t>(msg, 16), len = load<uint64_t>(msg, 24);
	const std::vector<uint8_t> &area = job_->area;
	const bool ok = len >= 1 && len <= kMaxRead && addr >= kDebugBase && addr - kDebugBase <= area.size() &&
			len <= area.size() - (addr - kDebugBase);
	// Sized once and filled (see Qsm::send_reply on GCC 14).
	std::vector<uint8_t> body(4 + (ok ? len : 0));
	if (ok) {
		const size_t off = addr - kDebugBase;
		std::copy(area.begin() + off, area.begin() + off + len, body.begin() + 4);
	} else {
		refuse("MEMORY_READ outside the dump (answered with no data)");
	}
	deadline_ = host_.now_ns() + kTimeoutNs;
	if (!send(kMemoryReadRsp, body)) {
		host_.guest_error("SSR: the host takes no more messages on QAIC_SSR; recovering without it");
		finish(false);
	}
}

void Ssr::finish(bool with_host)
{
	const unsigned dbc = job_->dbc;
	job_.reset();
	deadline_ = HostInterface::kNoDeadline;
	recoveries_++;
	if (!with_host)
		abandoned_++;
	char msg[64];
	std::snprintf(msg, sizeof(msg), "SSR: DBC %u recovered", dbc);
	host_.trace(msg);
	owner_.ssr_done(dbc);
	start_next();
}

void Ssr::channel_stopped()
{
	if (job_ && !host_listens())
		finish(false);
}

std::string Ssr::release()
{
	if (!job_ || !job_->hold)
		return "no recovery is held";
	// Held now, or asked to be and not there yet: it goes on either way.
	job_->hold = false;
	if (stage_ == Stage::Held)
		enter(Stage::TransferInfo);
	return {};
}

void Ssr::poll()
{
	if (!job_ || host_.now_ns() < deadline_)
		return;
	if (stage_ == Stage::Held) {
		// Nobody released it: the NSPs come up by themselves.
		enter(Stage::TransferInfo);
		return;
	}
	char msg[160];
	std::snprintf(msg, sizeof(msg), "SSR: no answer to %s for DBC %u within %llu s; recovering without the host",
		      stage_name(static_cast<int>(stage_)), job_->dbc,
		      static_cast<unsigned long long>(kTimeoutNs / 1000000000ull));
	host_.guest_error(msg);
	finish(false);
}

uint64_t Ssr::next_deadline() const
{
	return job_ ? deadline_ : HostInterface::kNoDeadline;
}

void Ssr::reset()
{
	queue_.clear();
	job_.reset();
	deadline_ = HostInterface::kNoDeadline;
}

} // namespace aic100
