// SPDX-License-Identifier: GPL-2.0-or-later
// AMSS, the card's mission-mode firmware, and in it the QSM (the management
// processor's firmware): NNC control messages on QAIC_CONTROL, the echo
// service on QAIC_LOOPBACK and the host's periodic time on
// QAIC_TIMESYNC_PERIODIC.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aic100/mhi.h"
#include "aic100/sahara.h"

namespace aic100 {

namespace nnc {
inline constexpr uint32_t kMagic = 0x43494151; // "QAIC"
inline constexpr size_t kHeaderSize = 32;
inline constexpr size_t kMaxReply = 4096;
inline constexpr size_t kMaxRequest = 64 * 1024;
inline constexpr uint16_t kVersionMajor = 5;
inline constexpr uint16_t kVersionMinor = 0;

enum Transaction : uint32_t {
	kPassthroughFromDev = 3,
	kPassthroughToDev = 4,
	kDmaXferToDev = 6,
	kActivateFromDev = 8,
	kActivateToDev = 9,
	kDeactivateFromDev = 11,
	kStatusFromDev = 14,
	kStatusToDev = 15,
	kTerminateFromDev = 16,
	kTerminateToDev = 17,
	kDmaXferCont = 18,
	kValidatePartitionFromDev = 19,
	kValidatePartitionToDev = 20,
};

struct __attribute__((packed)) Header {
	uint32_t crc32;
	uint32_t magic;
	uint32_t sequence_number;
	uint32_t len;
	uint32_t count;
	uint32_t handle;
	uint32_t partition_id;
	uint32_t padding;
};
static_assert(sizeof(Header) == kHeaderSize);
} // namespace nnc

class Qsm {
public:
	Qsm(HostInterface &host, Mhi &mhi);

	// AMSS starts, with the images the SBL loaded (none in direct-AMSS boot).
	void start(std::vector<LoadedImage> images);
	void stop();
	bool running() const { return running_; }

	void mhi_m0() {}
	void mhi_reset();
	void channel_started(unsigned ch) { (void)ch; }
	void channel_stopped(unsigned ch) { (void)ch; }
	void ul_message(unsigned ch, std::span<const uint8_t> data);

	// Host time minus card time (µs), from the last periodic timesync.
	int64_t host_time_offset_us() const { return host_offset_us_; }
	uint64_t timesyncs() const { return timesyncs_; }
	uint64_t messages() const { return messages_; }

private:
	void control(std::span<const uint8_t> msg);
	void timesync(std::span<const uint8_t> msg);

	HostInterface &host_;
	Mhi &mhi_;
	bool running_ = false;
	std::vector<LoadedImage> images_;
	int64_t host_offset_us_ = 0;
	uint64_t timesyncs_ = 0;
	uint64_t messages_ = 0;
};

} // namespace aic100
