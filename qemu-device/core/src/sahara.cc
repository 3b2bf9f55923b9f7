// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/sahara.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace aic100 {

using namespace sahara;

namespace {

std::vector<uint8_t> packet(std::initializer_list<uint32_t> words, size_t len)
{
	std::vector<uint8_t> p(len, 0);
	size_t off = 0;
	for (uint32_t w : words) {
		std::memcpy(p.data() + off, &w, 4);
		off += 4;
	}
	return p;
}

// A field of a packet; 0 where the packet is too short to have it (a
// host's short packet must not make the card read past it).
uint32_t word(std::span<const uint8_t> p, size_t off)
{
	uint32_t v = 0;
	if (off <= p.size() && p.size() - off >= 4)
		std::memcpy(&v, p.data() + off, 4);
	return v;
}

uint64_t dword(std::span<const uint8_t> p, size_t off)
{
	uint64_t v = 0;
	if (off <= p.size() && p.size() - off >= 8)
		std::memcpy(&v, p.data() + off, 8);
	return v;
}

std::vector<uint8_t> mem_debug64(uint64_t table, uint64_t length)
{
	std::vector<uint8_t> p = packet({kMemDebug64, kMemDebug64Length}, kMemDebug64Length);
	std::memcpy(p.data() + 8, &table, 8);
	std::memcpy(p.data() + 16, &length, 8);
	return p;
}

} // namespace

SaharaTarget::SaharaTarget(Io &io, std::vector<uint32_t> image_ids, const RamDump *dump, Family family)
	: io_(io), ids_(std::move(image_ids)), family_(family),
	  streaming_(family_config(family).sahara_form == SaharaForm::Streaming), dump_(dump)
{
}

std::string SaharaTarget::image_name() const
{
	return index_ < ids_.size() ? image_file(family_, ids_[index_]) : "?";
}

void SaharaTarget::start()
{
	if (state_ != State::Idle)
		return;
	hello(dump_ ? kModeMemoryDebug : kModeImageTxPending);
}

void SaharaTarget::hello(uint32_t mode)
{
	mode_ = mode;
	state_ = State::WaitHelloResp;
	// version, version_compat, max command packet length, mode
	io_.sahara_send(packet({kHello, kHelloLength, kVersion, 1, 0x400, mode}, kHelloLength));
}

void SaharaTarget::withdraw_dump()
{
	if (offering_dump())
		end_dump(false, "the host did not answer the memory-debug HELLO");
}

void SaharaTarget::end_dump(bool taken, const std::string &why)
{
	dump_ = nullptr;
	char line[200];
	std::snprintf(line, sizeof(line), "SBL: sahara: RAM dump %s: %s (%llu reads, %llu bytes, %llu refused)",
		      taken ? "taken" : "not taken", why.c_str(), static_cast<unsigned long long>(dump_reads_),
		      static_cast<unsigned long long>(dump_bytes_), static_cast<unsigned long long>(dump_refused_));
	io_.sahara_log(line);
	io_.sahara_dump_ended(taken);
	hello(kModeImageTxPending);
}

void SaharaTarget::hello_resp(std::span<const uint8_t> p)
{
	const bool good = p.size() == kHelloLength && word(p, 8) >= kVersion && word(p, 16) == 0;
	const uint32_t mode = p.size() >= 24 ? word(p, 20) : mode_;
	if (mode_ == kModeMemoryDebug) {
		if (!good || mode != kModeMemoryDebug) {
			end_dump(false, "the host declined it (HELLO_RESP mode " + std::to_string(mode) + ", status " +
						std::to_string(p.size() >= 20 ? word(p, 16) : 0) + ")");
			return;
		}
		state_ = State::ServingDump;
		char line[160];
		std::snprintf(line, sizeof(line), "SBL: sahara: RAM dump offered: table at 0x%llx, %zu regions, %llu bytes",
			      static_cast<unsigned long long>(RamDump::kTableAddress), dump_->regions().size(),
			      static_cast<unsigned long long>(dump_->total_bytes()));
		io_.sahara_log(line);
		io_.sahara_send(mem_debug64(RamDump::kTableAddress, dump_->table_length()));
		return;
	}
	if (mode == kModeMemoryDebug) {
		// The host's late answer to an offer withdrawn since.
		io_.sahara_log("SBL: sahara: HELLO_RESP for the withdrawn RAM dump ignored");
		return;
	}
	if (p.size() != kHelloLength) {
		fail(kProtocolMismatch, "sahara: host HELLO_RESP refused (" + std::to_string(p.size()) +
						" bytes, not " + std::to_string(kHelloLength) + ")");
		return;
	}
	if (!good) {
		fail(kProtocolMismatch, "sahara: host HELLO_RESP refused (version " + std::to_string(word(p, 8)) +
						", status " + std::to_string(word(p, 16)) + ")");
		return;
	}
	request_next();
}

// Memory debug: the host asks, the card answers with the raw bytes, or with
// END_OF_IMAGE carrying the reason it will not.
void SaharaTarget::dump_packet(std::span<const uint8_t> p)
{
	char why[160];
	auto refuse = [&](uint32_t status) {
		dump_refused_++;
		char line[224];
		std::snprintf(line, sizeof(line), "SBL: sahara: %s: END_OF_IMAGE status 0x%x", why, status);
		io_.sahara_log(line);
		io_.sahara_send(packet({kEndOfImage, kEndOfImageLength, 0, status}, kEndOfImageLength));
	};
	if (p.size() < 8 || word(p, 4) != p.size()) {
		std::snprintf(why, sizeof(why), "malformed packet of %zu bytes during the RAM dump", p.size());
		return refuse(kInvalidPacketSize);
	}
	const uint32_t cmd = word(p, 0);
	switch (cmd) {
	case kMemRead64: {
		if (p.size() != kMemRead64Length) {
			std::snprintf(why, sizeof(why), "MEM_READ64 of %zu bytes", p.size());
			return refuse(kInvalidPacketSize);
		}
		const uint64_t addr = dword(p, 8), len = dword(p, 16);
		const RamDump::Read r = dump_->read(addr, len);
		if (r.status != kSuccess) {
			std::snprintf(why, sizeof(why), "MEM_READ64 0x%llx+0x%llx is outside the RAM dump or too long",
				      static_cast<unsigned long long>(addr), static_cast<unsigned long long>(len));
			return refuse(r.status);
		}
		dump_reads_++;
		dump_bytes_ += r.data.size();
		io_.sahara_send(std::vector<uint8_t>(r.data.begin(), r.data.end()));
		return;
	}
	case kReset:
		if (p.size() != 8) {
			std::snprintf(why, sizeof(why), "RESET of %zu bytes", p.size());
			return refuse(kInvalidPacketSize);
		}
		io_.sahara_send(packet({kResetResp, 8}, 8));
		end_dump(true, "the host ended it with RESET");
		return;
	default:
		std::snprintf(why, sizeof(why), "unexpected command 0x%x during the RAM dump", cmd);
		return refuse(kInvalidCommand);
	}
}

void SaharaTarget::receive(std::span<const uint8_t> data)
{
	if (state_ == State::Done || state_ == State::Failed)
		return;
	// The host answers a READ_DATA it cannot serve with a bare RESET packet.
	// Requests are never 8 bytes long (see request()), so 8 bytes that look
	// like RESET are RESET.
	if (state_ == State::WaitData && !is_host_reset(data)) {
		on_data(data);
		return;
	}
	on_packet(data);
}

// RESET answers a READ_DATA instead of its data. A streaming host sends
// the data as one transfer per 0xFFFF bytes: once the first has come, the
// request was served, and 8 bytes that look like RESET are the tail of it.
bool SaharaTarget::is_host_reset(std::span<const uint8_t> data) const
{
	const bool looks_like_reset = data.size() == 8 && word(data, 0) == kReset && word(data, 4) == 8;
	return looks_like_reset && (!streaming_ || got_ == 0);
}

// How much of what is left of the image the next READ_DATA asks for: all
// of it from a streaming host, which serves any length.
uint32_t SaharaTarget::read_length(uint64_t left) const
{
	return static_cast<uint32_t>(streaming_ ? left : std::min<uint64_t>(left, kMaxReadLength));
}

void SaharaTarget::on_packet(std::span<const uint8_t> p)
{
	if (state_ == State::ServingDump)
		return dump_packet(p);
	if (p.size() < 8 || word(p, 4) != p.size()) {
		io_.sahara_log("SBL: sahara: malformed packet of " + std::to_string(p.size()) + " bytes ignored");
		return;
	}
	const uint32_t cmd = word(p, 0);
	switch (cmd) {
	case kHelloResp:
		if (state_ != State::WaitHelloResp)
			break;
		hello_resp(p);
		return;
	case kReset:
		if (state_ == State::WaitData) {
			failure_ = image_name() + ": the host has no such image (Sahara RESET)";
			state_ = State::Failed;
			io_.sahara_log("SBL: " + failure_ + "; boot halted");
			io_.sahara_finished(false);
			return;
		}
		break;
	case kDone:
		if (state_ != State::WaitDone)
			break;
		index_++;
		{
			const uint32_t complete = index_ >= ids_.size() ? 1 : 0;
			io_.sahara_send(packet({kDoneResp, 12, complete}, 12));
		}
		if (index_ >= ids_.size()) {
			state_ = State::Done;
			io_.sahara_finished(true);
		} else {
			request_next();
		}
		return;
	default:
		break;
	}
	char msg[96];
	std::snprintf(msg, sizeof(msg), "SBL: sahara: unexpected command 0x%x ignored", cmd);
	io_.sahara_log(msg);
}

void SaharaTarget::request_next()
{
	header_.reset();
	payload_.clear();
	digest_.reset();
	next_offset_ = 0;
	if (index_ >= ids_.size()) {
		state_ = State::Done;
		io_.sahara_finished(true);
		return;
	}
	io_.sahara_log("SBL: sahara: fetching " + image_name());
	request(0, fw::kHeaderSize);
}

void SaharaTarget::request(uint32_t offset, uint32_t len)
{
	// An 8-byte reply could not be told from the host's RESET packet: ask
	// for the 8 bytes before as well and skip them.
	skip_ = 0;
	if (len == 8 && offset >= 8) {
		offset -= 8;
		len += 8;
		skip_ = 8;
	}
	want_ = len;
	got_ = 0;
	header_bytes_.clear();
	state_ = State::WaitData;
	io_.sahara_send(packet({kReadData, 0x14, ids_[index_], offset, len}, 0x14));
}

void SaharaTarget::on_data(std::span<const uint8_t> d)
{
	if (d.size() > want_ - got_) {
		fail(kInvalidRxLength, image_name() + ": host sent more data than requested");
		return;
	}
	if (header_)
		take_payload(d);
	else
		header_bytes_.insert(header_bytes_.end(), d.begin(), d.end());
	got_ += static_cast<uint32_t>(d.size());
	if (got_ == want_)
		reply_complete();
}

// Payload bytes are hashed and kept as they come, without the reply's first
// skip_ bytes, which are held already.
void SaharaTarget::take_payload(std::span<const uint8_t> d)
{
	if (got_ < skip_)
		d = d.subspan(std::min<size_t>(skip_ - got_, d.size()));
	digest_.update(d);
	payload_.insert(payload_.end(), d.begin(), d.end());
}

// The image's header, checked; false (the transfer failed) if it is refused.
bool SaharaTarget::accept_header(std::span<const uint8_t> bytes)
{
	fw::Header h;
	std::memcpy(&h, bytes.data(), sizeof(h));
	const fw::Error err = fw::check_header(h, fw::kMaxRuntimeSize);
	if (err != fw::Error::None) {
		fail(err == fw::Error::TooLarge ? kInvalidDataSize : kInvalidImageType,
		     image_name() + ": " + fw::error_name(err));
		return false;
	}
	if (h.image_id != ids_[index_]) {
		fail(kUnexpectedImageId, image_name() + ": " + fw::error_name(fw::Error::WrongImage) +
						 " (header says image " + std::to_string(h.image_id) + ")");
		return false;
	}
	header_ = h;
	fw::Header zeroed = h;
	std::memset(zeroed.sha256, 0, sizeof(zeroed.sha256));
	digest_.update(&zeroed, sizeof(zeroed));
	payload_.reserve(h.payload_size);
	next_offset_ = fw::kHeaderSize;
	return true;
}

void SaharaTarget::reply_complete()
{
	if (!header_) {
		if (!accept_header(std::span<const uint8_t>(header_bytes_).subspan(skip_)))
			return;
	} else {
		next_offset_ += want_ - skip_;
	}
	const uint64_t end = fw::kHeaderSize + header_->payload_size;
	if (next_offset_ < end) {
		const uint64_t left = end - next_offset_;
		request(static_cast<uint32_t>(next_offset_), read_length(left));
		return;
	}
	const Sha256Digest d = digest_.finish();
	if (std::memcmp(d.data(), header_->sha256, d.size()) != 0) {
		fail(kHashVerificationFailure, image_name() + ": " + fw::error_name(fw::Error::BadDigest));
		return;
	}
	char msg[160];
	std::snprintf(msg, sizeof(msg), "SBL: %s: %s %u.%u.%u.%u, %llu bytes, SHA-256 ok", image_name().c_str(),
		      std::string(header_->name, strnlen(header_->name, sizeof(header_->name))).c_str(),
		      header_->version[0], header_->version[1], header_->version[2], header_->version[3],
		      static_cast<unsigned long long>(header_->payload_size));
	io_.sahara_log(msg);
	images_.push_back({*header_, std::make_shared<const std::vector<uint8_t>>(std::move(payload_))});
	payload_ = {};
	state_ = State::WaitDone;
	end_of_image(kSuccess);
}

void SaharaTarget::end_of_image(uint32_t status)
{
	io_.sahara_send(packet({kEndOfImage, 0x10, ids_[index_], status}, 0x10));
}

void SaharaTarget::fail(uint32_t status, const std::string &why)
{
	failure_ = why;
	char code[48];
	std::snprintf(code, sizeof(code), " (Sahara status 0x%x); boot halted", status);
	io_.sahara_log("SBL: " + why + code);
	if (index_ < ids_.size())
		end_of_image(status);
	state_ = State::Failed;
	io_.sahara_finished(false);
}

} // namespace aic100
