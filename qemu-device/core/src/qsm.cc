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
	Header h;
	std::vector<Trans> ts;
	if (!accept_message(msg, h, ts))
		return;
	if (continue_held(msg, h, ts))
		return;
	begin_message(msg, h, ts);
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
// held chunk id. False when `msg` is not one (a new message).
bool Qsm::continue_held(std::span<const uint8_t> msg, const Header &h, const std::vector<Trans> &ts)
{
	if (ts.size() != 1 || ts[0].type != kDmaXferToDev || ts[0].len < sizeof(DmaXferToDev))
		return false;
	const auto x = load<DmaXferToDev>(msg, ts[0].off);
	auto it = held_.find(h.handle);
	if (x.dma_chunk_id && (it == held_.end() || it->second.chunk_id != x.dma_chunk_id)) {
		send_error(h, kBadChunk);
		return true;
	}
	if (it == held_.end() || x.dma_chunk_id != it->second.chunk_id)
		return false;
	Held &held = it->second;
	if (x.tag == 0 && x.count == 0) { // the host gave up
		held_.erase(it);
		send_reply(h, Reply{});
		return true;
	}
	if (!stage_dma(msg, ts[0], held.dma, held.bytes, kMaxHeldDma - held_by_others(h.handle))) {
		held_.erase(it);
		send_error(h, kTooLarge);
		return true;
	}
	std::vector<Trans> hts;
	parse(held.msg, hts);
	if (held.bytes < dma_needed(held.msg, hts)) {
		send_dma_cont(h, held.chunk_id, held.bytes);
		return true;
	}
	// Complete: run the held message, answering this one.
	Held done = std::move(held);
	held_.erase(it);
	auto hh = load<Header>(done.msg, 0);
	hh.sequence_number = h.sequence_number;
	run_message(hh, done.msg, hts, done.dma);
	return true;
}

// A new message: run now, or held while more of its DMA data follows.
void Qsm::begin_message(std::span<const uint8_t> msg, const Header &h, const std::vector<Trans> &ts)
{
	uint32_t chunk = 0;
	for (const Trans &t : ts)
		if (t.type == kDmaXferToDev && t.len >= sizeof(DmaXferToDev))
			chunk = std::max(chunk, load<DmaXferToDev>(msg, t.off).dma_chunk_id);
	// Handles are the host's to choose: the messages held are counted too.
	if (chunk && !held_.count(h.handle) && held_.size() >= kMaxHeldMessages) {
		send_error(h, kTooLarge);
		return;
	}
	std::map<uint32_t, std::vector<uint8_t>> dma;
	uint64_t bytes = 0;
	const uint64_t limit = kMaxHeldDma - held_by_others(h.handle);
	for (const Trans &t : ts) {
		if (t.type != kDmaXferToDev)
			continue;
		if (!stage_dma(msg, t, dma, bytes, limit)) {
			send_error(h, kTooLarge);
			return;
		}
	}
	if (!chunk) {
		run_message(h, msg, ts, dma);
		return;
	}
	// More data follows in DMA-only messages; only a command that says how
	// much it needs tells when it has all arrived.
	if (dma_needed(msg, ts) == 0) {
		send_error(h, kBadChunk);
		return;
	}
	Held &held = held_[h.handle];
	held = Held{};
	held.msg.assign(msg.begin(), msg.end());
	held.chunk_id = chunk;
	held.bytes = bytes;
	held.dma = std::move(dma);
	send_dma_cont(h, chunk, bytes);
}

uint64_t Qsm::held_by_others(uint32_t handle) const
{
	uint64_t n = 0;
	for (const auto &[who, held] : held_)
		n += who == handle ? 0 : held.bytes + held.msg.size();
	return std::min(n, kMaxHeldDma);
}

// Reads the data of one DMA_XFER_TO_DEV; false when it would take the bytes
// held for this message past `limit`.
bool Qsm::stage_dma(std::span<const uint8_t> msg, const Trans &t, std::map<uint32_t, std::vector<uint8_t>> &dma,
		    uint64_t &bytes, uint64_t limit)
{
	if (t.len < sizeof(DmaXferToDev))
		return false;
	const auto x = load<DmaXferToDev>(msg, t.off);
	if ((t.len - sizeof(DmaXferToDev)) / sizeof(DmaPair) < x.count)
		return false;
	auto &buf = dma[x.tag];
	for (uint32_t i = 0; i < x.count; i++) {
		const auto p = load<DmaPair>(msg, t.off + sizeof(DmaXferToDev) + i * sizeof(DmaPair));
		if (p.size > limit || bytes + p.size > limit)
			return false;
		const size_t old = buf.size();
		buf.resize(old + p.size);
		if (p.size && host_.dma_read(p.addr, buf.data() + old, p.size) != DmaStatus::Ok) {
			// The data is lost; the command that needs it sees too few bytes.
			buf.resize(old);
			host_.guest_error("NNC: DMA_XFER address unreadable");
			continue;
		}
		bytes += p.size;
	}
	return true;
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

void Qsm::run_message(const Header &h, std::span<const uint8_t> msg, const std::vector<Trans> &ts,
		      std::map<uint32_t, std::vector<uint8_t>> &dma)
{
	Reply reply;
	Ctx c{h.handle, static_cast<int32_t>(h.partition_id), msg, &ts, &dma, {}, &reply};
	for (const Trans &t : ts) {
		switch (t.type) {
		case kStatusToDev: {
			// The first STATUS of a host session settles CRC for it.
			const StatusFromDev s{{kStatusFromDev, sizeof(StatusFromDev)}, kVersionMajor, kVersionMinor, 0,
					      cfg_.crc ? kStatusFlagCrc : 0};
			reply.add(&s, sizeof(s));
			crc_active_ = cfg_.crc;
			break;
		}
		case kPassthroughToDev:
			command(c, msg.subspan(t.off + sizeof(TransHdr), t.len - sizeof(TransHdr)));
			break;
		case kTerminateToDev: {
			const uint32_t who = t.len >= sizeof(TerminateToDev) ? load<TerminateToDev>(msg, t.off).handle
									     : h.handle;
			terminate(who);
			const TerminateFromDev r{{kTerminateFromDev, sizeof(TerminateFromDev)}, 0, 0};
			reply.add(&r, sizeof(r));
			break;
		}
		case kValidatePartitionToDev: {
			const int32_t part = t.len >= sizeof(ValidatePartitionToDev)
						     ? static_cast<int32_t>(load<ValidatePartitionToDev>(msg, t.off).part_id)
						     : -1;
			const auto it = groups_.find(part);
			const ValidatePartitionFromDev r{{kValidatePartitionFromDev, sizeof(ValidatePartitionFromDev)},
							 it != groups_.end() && !it->second.orphaned ? 0u : 1u, 0};
			reply.add(&r, sizeof(r));
			break;
		}
		default: // DMA_XFER and ACTIVATE serve the commands
			break;
		}
	}
	send_reply(h, reply);
}

} // namespace aic100
