// SPDX-License-Identifier: GPL-2.0-or-later
// QSM transport: NNC messages on QAIC_CONTROL (docs/qsm.md, "Transport").
#include "aic100/qsm.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

#include "aic100/sbl.h"
#include "aic100/wire.h"

namespace aic100 {

using wire::load;

using namespace nnc;

namespace {

// CRC-32 as zlib computes it (reflected, polynomial 0xEDB88320).
uint32_t crc32(std::span<const uint8_t> a, std::span<const uint8_t> b)
{
	static const std::array<uint32_t, 256> table = [] {
		std::array<uint32_t, 256> t{};
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
			t[i] = c;
		}
		return t;
	}();
	uint32_t c = 0xFFFFFFFFu;
	for (auto part : {a, b})
		for (uint8_t x : part)
			c = table[(c ^ x) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

// Error codes of a STATUS_FROM_DEV answering a message the QSM refuses.
enum MessageError : uint32_t {
	kMalformed = 1,
	kBadCrc = 2,
	kBadType = 3,
	kTooLarge = 4,
	kBadChunk = 5,
};

} // namespace

Qsm::Qsm(HostInterface &host, Mhi &mhi, DmaBridge &dbr, Ddr &ddr, const QsmConfig &cfg)
	: host_(host), mhi_(mhi), dbr_(dbr), cfg_(cfg), ddr_(ddr), ssr_(host, mhi, *this), ras_(host, mhi),
	  telemetry_(host, mhi, ras_, [this] { return nsp_stats(); })
{
}

void Qsm::Reply::add(const void *p, size_t n)
{
	const auto *b = static_cast<const uint8_t *>(p);
	body.insert(body.end(), b, b + n);
	count++;
}

void Qsm::start(std::vector<LoadedImage> images)
{
	release_all();
	images_ = std::move(images);
	// A firmware that starts anew counts its ids from 1, as at power-on.
	next_object_id_ = next_act_id_ = 1;
	next_group_id_ = 1;
	retired_busy_ns_ = retired_iterations_ = faults_ = 0;
	ras_.reset();
	telemetry_.reset();
	running_ = true;
	host_.trace("QSM: running");
}

void Qsm::stop()
{
	release_all();
	running_ = false;
	images_.clear();
}

void Qsm::mhi_reset()
{
	// A new host session: nothing the old one owned survives.
	release_all();
	crc_active_ = false;
}

void Qsm::ul_message(unsigned ch, std::span<const uint8_t> data)
{
	if (!running_)
		return;
	switch (ch) {
	case chan::kLoopbackUl:
		mhi_.send(chan::kLoopbackDl, std::vector<uint8_t>(data.begin(), data.end()), true);
		return;
	case chan::kControlUl:
		control(data);
		return;
	case chan::kTimesyncPeriodicUl:
		timesync(data);
		return;
	case ssr::kUl:
		ssr_.ul_message(data);
		return;
	case ras::kUl:
		ras_.ul_message(data);
		return;
	case telemetry::kUl:
		telemetry_.ul_message(data);
		return;
	default:
		return; // channels AMSS does not serve swallow their data
	}
}

void Qsm::channel_stopped(unsigned ch)
{
	if (running_ && (ch == ssr::kUl || ch == ssr::kDl))
		ssr_.channel_stopped();
}

void Qsm::timesync(std::span<const uint8_t> msg)
{
	if (msg.size() != 24 || load<uint16_t>(msg, 0) != 0x55AA || msg[5] != 1) {
		host_.guest_error("QSM: malformed periodic timesync message dropped");
		return;
	}
	const uint64_t sec = load<uint64_t>(msg, 8), usec = load<uint64_t>(msg, 16);
	host_offset_us_ = static_cast<int64_t>(sec * 1000000 + usec);
	timesyncs_++;
}

// ---- framing ---------------------------------------------------------------

bool Qsm::parse(std::span<const uint8_t> msg, std::vector<Trans> &out) const
{
	const auto h = load<Header>(msg, 0);
	size_t off = kHeaderSize;
	for (uint32_t i = 0; i < h.count; i++) {
		if (msg.size() - off < sizeof(TransHdr))
			return false;
		const auto t = load<TransHdr>(msg, off);
		if (t.len < sizeof(TransHdr) || t.len > msg.size() - off)
			return false;
		out.push_back({t.type, off, t.len});
		off += t.len;
	}
	return off == msg.size();
}

void Qsm::send_reply(const Header &req, const Reply &r)
{
	Header h{};
	h.magic = kMagic;
	h.sequence_number = req.sequence_number;
	h.len = static_cast<uint32_t>(kHeaderSize + r.body.size());
	h.count = r.count;
	h.handle = req.handle;
	h.partition_id = req.partition_id;
	if (h.len > kMaxReply) {
		send_error(req, kTooLarge);
		return;
	}
	// Sized once and filled: GCC 14 sees an out-of-bounds write in
	// insert()'s growth of a 32-byte vector that cannot happen.
	std::vector<uint8_t> out(kHeaderSize + r.body.size());
	std::memcpy(out.data(), &h, sizeof(h));
	std::copy(r.body.begin(), r.body.end(), out.begin() + kHeaderSize);
	if (crc_active_) {
		h.crc32 = crc32(out, {});
		std::memcpy(out.data(), &h.crc32, 4);
	}
	mhi_.send(chan::kControlDl, std::move(out));
}

void Qsm::send_error(const Header &req, uint32_t code)
{
	char m[80];
	std::snprintf(m, sizeof(m), "NNC: message %u refused (error %u)", req.sequence_number, code);
	host_.guest_error(m);
	Reply r;
	const StatusFromDev s{{kStatusFromDev, sizeof(StatusFromDev)}, kVersionMajor, kVersionMinor, code, 0};
	r.add(&s, sizeof(s));
	send_reply(req, r);
}

void Qsm::control(std::span<const uint8_t> msg)
{
	auto j = std::make_unique<Job>();
	if (!accept_message(msg, j->h, j->ts))
		return;
	if (job_) {
		// Only a new host session gets past the channel's hold.
		host_.guest_error("NNC: message while another was being worked on; the older one dropped");
		drop_job();
	}
	j->msg.assign(msg.begin(), msg.end());
	switch (continue_held(*j)) {
	case Continuation::Answered:
		return;
	case Continuation::Stage:
		j->continuation = true;
		break;
	case Continuation::No:
		if (!begin_message(*j))
			return;
		break;
	}
	job_ = std::move(j);
	work();
}

// Checks the header, the CRC, the framing and the transaction types: false
// when the message was dropped or refused.
bool Qsm::accept_message(std::span<const uint8_t> msg, Header &h, std::vector<Trans> &ts)
{
	if (msg.size() < kHeaderSize || msg.size() > kMaxRequest) {
		host_.guest_error("NNC: message shorter than its header or over 64 KiB dropped");
		return false;
	}
	h = load<Header>(msg, 0);
	if (h.magic != kMagic || h.len != msg.size()) {
		host_.guest_error("NNC: bad magic or length; message dropped");
		return false;
	}
	messages_++;
	if (cfg_.crc && h.crc32 != 0) {
		const uint8_t zero[4] = {};
		const uint32_t want = crc32(std::span(zero), msg.subspan(4));
		if (want != h.crc32) {
			send_error(h, kBadCrc);
			return false;
		}
	}
	if (!parse(msg, ts)) {
		send_error(h, kMalformed);
		return false;
	}
	for (const Trans &t : ts) {
		switch (t.type) {
		case kPassthroughToDev:
		case kDmaXferToDev:
		case kActivateToDev:
		case kStatusToDev:
		case kTerminateToDev:
		case kValidatePartitionToDev:
			break;
		default:
			send_error(h, kBadType);
			return false;
		}
	}
	return true;
}

void Qsm::send_dma_cont(const Header &req, uint32_t chunk, uint64_t bytes)
{
	Reply r;
	const DmaXferCont c{{kDmaXferCont, sizeof(DmaXferCont)}, chunk, 0, bytes};
	r.add(&c, sizeof(c));
	send_reply(req, r);
}

// A DMA continuation of a held message: one DMA_XFER_TO_DEV naming the
// held chunk id. No when the message is not one (a new message).
Qsm::Continuation Qsm::continue_held(Job &j)
{
	const auto &ts = j.ts;
	if (ts.size() != 1 || ts[0].type != kDmaXferToDev || ts[0].len < sizeof(DmaXferToDev))
		return Continuation::No;
	const auto x = load<DmaXferToDev>(j.msg, ts[0].off);
	auto it = held_.find(j.h.handle);
	if (x.dma_chunk_id && (it == held_.end() || it->second.chunk_id != x.dma_chunk_id)) {
		send_error(j.h, kBadChunk);
		return Continuation::Answered;
	}
	if (it == held_.end() || x.dma_chunk_id != it->second.chunk_id)
		return Continuation::No;
	if (x.tag == 0 && x.count == 0) { // the host gave up
		held_.erase(it);
		send_reply(j.h, Reply{});
		return Continuation::Answered;
	}
	if (!make_room(j, it->second, kMaxHeldDma - held_by_others(j.h.handle))) {
		held_.erase(it);
		send_error(j.h, kTooLarge);
		return Continuation::Answered;
	}
	return Continuation::Stage;
}

// A new message: false when it was refused. Its DMA data is read next; then
// it runs, or is held while more of its data follows.
bool Qsm::begin_message(Job &j)
{
	for (const Trans &t : j.ts)
		if (t.type == kDmaXferToDev && t.len >= sizeof(DmaXferToDev))
			j.chunk = std::max(j.chunk, load<DmaXferToDev>(j.msg, t.off).dma_chunk_id);
	// Handles are the host's to choose: the messages held are counted too.
	if (j.chunk && !held_.count(j.h.handle) && held_.size() >= kMaxHeldMessages) {
		send_error(j.h, kTooLarge);
		return false;
	}
	// A message that runs at once leaves the user's held one in place.
	uint64_t limit = kMaxHeldDma - held_by_others(j.h.handle);
	if (auto own = held_.find(j.h.handle); !j.chunk && own != held_.end())
		limit -= std::min(limit, own->second.bytes + own->second.msg.size());
	// More data follows in DMA-only messages; only a command that says how
	// much it needs tells when it has all arrived.
	if (j.chunk && dma_needed(j.msg, j.ts) == 0) {
		send_error(j.h, kBadChunk);
		return false;
	}
	if (!make_room(j, j.data, limit)) {
		send_error(j.h, kTooLarge);
		return false;
	}
	// It replaces the user's held message, which need not wait for it.
	if (j.chunk)
		held_.erase(j.h.handle);
	return true;
}

uint64_t Qsm::held_by_others(uint32_t handle) const
{
	uint64_t n = 0;
	for (const auto &[who, held] : held_)
		n += who == handle ? 0 : held.bytes + held.msg.size();
	return std::min(n, kMaxHeldDma);
}

// Checks the DMA_XFERs of the job's message before any is read: well formed,
// and all they describe (read or not: a read that fails still counts) within
// `limit` together with what `into` holds. Counts it in `into` and reserves
// room for it; false, with nothing allocated, when it does not fit.
bool Qsm::make_room(const Job &j, Held &into, uint64_t limit) const
{
	uint64_t total = into.bytes;
	if (total > limit)
		return false;
	std::map<uint32_t, uint64_t> per_tag;
	for (const Trans &t : j.ts) {
		if (t.type != kDmaXferToDev)
			continue;
		if (t.len < sizeof(DmaXferToDev))
			return false;
		const auto x = load<DmaXferToDev>(j.msg, t.off);
		if ((t.len - sizeof(DmaXferToDev)) / sizeof(DmaPair) < x.count)
			return false;
		for (uint32_t i = 0; i < x.count; i++) {
			const auto p = load<DmaPair>(j.msg, t.off + sizeof(DmaXferToDev) + i * sizeof(DmaPair));
			if (p.size > limit - total)
				return false;
			total += p.size;
			per_tag[x.tag] += p.size;
		}
	}
	// Growth by doubling (within what the cap leaves) keeps a load sent
	// in many continuations from being copied once per message.
	for (const auto &[tag, n] : per_tag) {
		auto &buf = into.dma[tag];
		const size_t need = buf.size() + n, ceiling = need + (limit - total);
		if (buf.capacity() < need)
			buf.reserve(std::max(need, std::min(ceiling, 2 * buf.capacity())));
	}
	into.bytes = total;
	return true;
}

// Reads the job's DMA data into `into` within this pass's budget; true when
// all of it is read. A pair that cannot be read is dropped whole: the
// command that needs it sees too few bytes.
bool Qsm::stage_dma(Job &j, Held &into)
{
	for (; j.xfer < j.ts.size(); j.xfer++, j.pair = 0) {
		const Trans &t = j.ts[j.xfer];
		if (t.type != kDmaXferToDev)
			continue;
		const auto x = load<DmaXferToDev>(j.msg, t.off);
		auto &buf = into.dma[x.tag];
		for (; j.pair < x.count; j.pair++, j.pair_done = 0) {
			const auto p = load<DmaPair>(j.msg, t.off + sizeof(DmaXferToDev) + j.pair * sizeof(DmaPair));
			if (j.pair_done == 0)
				j.pair_start = buf.size();
			while (j.pair_done < p.size) {
				if (budget_.spent())
					return false;
				// Bytes outside RAM weigh more (HostInterface::dma_cost).
				const uint64_t n = host_.dma_affordable(p.addr + j.pair_done, p.size - j.pair_done,
									false, budget_.bytes);
				if (n == 0)
					return false;
				const size_t old = buf.size();
				buf.resize(old + n); // within the room make_room() reserved
				if (host_.dma_read(p.addr + j.pair_done, buf.data() + old, n) != DmaStatus::Ok) {
					buf.resize(j.pair_start);
					host_.guest_error("NNC: DMA_XFER address unreadable");
					break;
				}
				j.pair_done += n;
			}
		}
	}
	return true;
}

// All of the job's DMA data is in: the message is held for more, or runs
// (for a continuation that completes it, the held message). False when
// nothing is left to run.
bool Qsm::staged(Job &j)
{
	if (!j.continuation) {
		if (!j.chunk) {
			j.data.msg = std::move(j.msg);
			start_run(j, j.h);
			return true;
		}
		Held &held = held_[j.h.handle];
		held = std::move(j.data);
		held.msg = std::move(j.msg);
		held.chunk_id = j.chunk;
		send_dma_cont(j.h, j.chunk, held.bytes);
		return false;
	}
	auto it = held_.find(j.h.handle);
	std::vector<Trans> hts;
	parse(it->second.msg, hts);
	if (it->second.bytes < dma_needed(it->second.msg, hts)) {
		send_dma_cont(j.h, it->second.chunk_id, it->second.bytes);
		return false;
	}
	// Complete: the held message runs, answering this one.
	j.data = std::move(it->second);
	held_.erase(it);
	auto hh = load<Header>(j.data.msg, 0);
	hh.sequence_number = j.h.sequence_number;
	start_run(j, hh);
	return true;
}

// The message in j.data runs next, answered with header `h`.
void Qsm::start_run(Job &j, const Header &h)
{
	j.run_h = h;
	j.run_ts.clear();
	parse(j.data.msg, j.run_ts);
	j.running = true;
	j.ctx = Ctx{h.handle, static_cast<int32_t>(h.partition_id), j.data.msg, &j.run_ts, &j.data.dma, {},
		    &j.reply, &budget_, nullptr};
}

// Goes on with the job within this pass's budget. While it is unfinished
// QAIC_CONTROL waits, and the card asks for another pass.
void Qsm::work()
{
	Job &j = *job_;
	bool done;
	if (!j.running) {
		Held *into = &j.data;
		if (j.continuation)
			into = &held_.at(j.h.handle);
		done = stage_dma(j, *into) && (!staged(j) || run_transactions(j));
	} else {
		done = run_transactions(j);
	}
	if (done && j.running)
		send_reply(j.run_h, j.reply);
	if (done) {
		job_.reset();
		mhi_.hold_ul(chan::kControlUl, false);
		return;
	}
	mhi_.hold_ul(chan::kControlUl, true);
	host_.kick();
}

// The end of a pass of the card: the job goes on, then the next pass has
// its whole budget.
void Qsm::end_pass()
{
	if (job_)
		work();
	budget_ = Budget{};
}

// A new host session, or the QSM stops: the message being worked on is
// forgotten, with the window of an activation it was filling.
void Qsm::drop_job()
{
	if (!job_)
		return;
	if (const auto &p = job_->ctx.filling; p && p->window != Ddr::kNoAddress)
		ddr_.release(p->window);
	job_.reset();
	mhi_.hold_ul(chan::kControlUl, false);
}

// Bytes of DMA data the passthrough commands of a message consume.
uint64_t Qsm::dma_needed(std::span<const uint8_t> msg, const std::vector<Trans> &ts) const
{
	using namespace cmd;
	uint64_t need = 0;
	for (const Trans &t : ts) {
		if (t.type != kPassthroughToDev || t.len < sizeof(TransHdr) + 4)
			continue;
		const auto req = msg.subspan(t.off + sizeof(TransHdr), t.len - sizeof(TransHdr));
		switch (load<uint32_t>(req, 0)) {
		case kLoadElf:
			if (req.size() >= sizeof(LoadElfReq))
				need += load<LoadElfReq>(req, 0).data_length;
			break;
		case kLoadConstants:
			if (req.size() >= sizeof(LoadConstantsReq))
				need += load<LoadConstantsReq>(req, 0).data_length;
			break;
		case kLoadConstantsPayload:
			if (req.size() >= sizeof(LoadConstantsPayloadReq))
				need += load<LoadConstantsPayloadReq>(req, 0).data_length;
			break;
		default:
			break;
		}
	}
	return need;
}

// Runs the job's transactions from where the last pass stopped; true when
// all have run.
bool Qsm::run_transactions(Job &j)
{
	for (; j.next < j.run_ts.size(); j.next++) {
		if (budget_.spent() || !run_transaction(j, j.run_ts[j.next]))
			return false;
	}
	return true;
}

// False when the transaction goes on in a later pass.
bool Qsm::run_transaction(Job &j, const Trans &t)
{
	const Header &h = j.run_h;
	const std::span<const uint8_t> msg = j.data.msg;
	Reply &reply = j.reply;
	switch (t.type) {
	case kStatusToDev: {
		// The first STATUS of a host session settles CRC for it.
		const StatusFromDev s{{kStatusFromDev, sizeof(StatusFromDev)}, kVersionMajor, kVersionMinor, 0,
				      cfg_.crc ? kStatusFlagCrc : 0};
		reply.add(&s, sizeof(s));
		crc_active_ = cfg_.crc;
		return true;
	}
	case kPassthroughToDev:
		return command(j.ctx, msg.subspan(t.off + sizeof(TransHdr), t.len - sizeof(TransHdr)));
	case kTerminateToDev: {
		const uint32_t who = t.len >= sizeof(TerminateToDev) ? load<TerminateToDev>(msg, t.off).handle : h.handle;
		terminate(who);
		const TerminateFromDev r{{kTerminateFromDev, sizeof(TerminateFromDev)}, 0, 0};
		reply.add(&r, sizeof(r));
		return true;
	}
	case kValidatePartitionToDev: {
		const int32_t part = t.len >= sizeof(ValidatePartitionToDev)
					     ? static_cast<int32_t>(load<ValidatePartitionToDev>(msg, t.off).part_id)
					     : -1;
		const auto it = groups_.find(part);
		const ValidatePartitionFromDev r{{kValidatePartitionFromDev, sizeof(ValidatePartitionFromDev)},
						 it != groups_.end() && !it->second.orphaned ? 0u : 1u, 0};
		reply.add(&r, sizeof(r));
		return true;
	}
	default: // DMA_XFER and ACTIVATE serve the commands
		return true;
	}
}

} // namespace aic100
