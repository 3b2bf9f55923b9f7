// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/qsm.h"

#include <cstdio>
#include <cstring>

#include "aic100/sbl.h"

namespace aic100 {

using namespace nnc;

namespace {

struct __attribute__((packed)) TransactionHeader {
	uint32_t type;
	uint32_t len;
};

struct __attribute__((packed)) StatusFromDev {
	TransactionHeader hdr;
	uint16_t major;
	uint16_t minor;
	uint32_t status;
	uint64_t status_flags;
};
static_assert(sizeof(StatusFromDev) == 24);

template <typename T> void append(std::vector<uint8_t> &out, const T &v)
{
	const auto *p = reinterpret_cast<const uint8_t *>(&v);
	out.insert(out.end(), p, p + sizeof(v));
}

} // namespace

Qsm::Qsm(HostInterface &host, Mhi &mhi) : host_(host), mhi_(mhi) {}

void Qsm::start(std::vector<LoadedImage> images)
{
	images_ = std::move(images);
	running_ = true;
	host_.trace("QSM: running");
}

void Qsm::stop()
{
	running_ = false;
	images_.clear();
}

void Qsm::mhi_reset()
{
	// Nothing of a host session outlives an MHI reset.
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
	default:
		return; // channels AMSS does not serve swallow their data
	}
}

void Qsm::timesync(std::span<const uint8_t> msg)
{
	uint16_t sig;
	if (msg.size() != 24 || (std::memcpy(&sig, msg.data(), 2), sig != 0x55AA) || msg[5] != 1) {
		host_.guest_error("QSM: malformed periodic timesync message dropped");
		return;
	}
	uint64_t sec, usec;
	std::memcpy(&sec, msg.data() + 8, 8);
	std::memcpy(&usec, msg.data() + 16, 8);
	host_offset_us_ = static_cast<int64_t>(sec * 1000000 + usec);
	timesyncs_++;
}

void Qsm::control(std::span<const uint8_t> msg)
{
	Header h;
	if (msg.size() < kHeaderSize || msg.size() > kMaxRequest) {
		host_.guest_error("NNC: message shorter than its header or over 64 KiB dropped");
		return;
	}
	std::memcpy(&h, msg.data(), sizeof(h));
	if (h.magic != kMagic || h.len != msg.size()) {
		host_.guest_error("NNC: bad magic or length; message dropped");
		return;
	}
	messages_++;

	std::vector<uint8_t> body;
	uint32_t count = 0;
	size_t off = kHeaderSize;
	for (uint32_t i = 0; i < h.count; i++) {
		TransactionHeader t;
		if (msg.size() - off < sizeof(t)) {
			host_.guest_error("NNC: transaction count runs past the message; dropped");
			return;
		}
		std::memcpy(&t, msg.data() + off, sizeof(t));
		if (t.len < sizeof(t) || t.len > msg.size() - off) {
			host_.guest_error("NNC: transaction length out of bounds; message dropped");
			return;
		}
		switch (t.type) {
		case kStatusToDev: {
			const StatusFromDev r{{kStatusFromDev, sizeof(StatusFromDev)}, kVersionMajor, kVersionMinor, 0, 0};
			append(body, r);
			count++;
			break;
		}
		default: {
			char m[96];
			std::snprintf(m, sizeof(m), "NNC: transaction type %u not served by this QSM", t.type);
			host_.trace(m);
			break;
		}
		}
		off += t.len;
	}

	Header r{};
	r.magic = kMagic;
	r.sequence_number = h.sequence_number;
	r.len = static_cast<uint32_t>(kHeaderSize + body.size());
	r.count = count;
	r.handle = h.handle;
	r.partition_id = h.partition_id;
	std::vector<uint8_t> reply;
	append(reply, r);
	reply.insert(reply.end(), body.begin(), body.end());
	mhi_.send(chan::kControlDl, std::move(reply));
}

} // namespace aic100
