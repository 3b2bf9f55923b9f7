// SPDX-License-Identifier: GPL-2.0-or-later
// The first look at a received message, before anything acts on it: its
// header, and the shape of its payload for its command (sizes against the
// header, argsz, flag bits, counts, alignment, offset + count within 64
// bits, the number of fds). What needs the device (region sizes, IRQ
// counts, the DMA map) is the dispatcher's to check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "aic100/vfio_user.h"

namespace aic100::vfio_user {

struct Limits {
	uint32_t max_fds = kDefaultMaxMsgFds;           // fds one message may bring
	uint64_t max_data_xfer = kDefaultMaxDataXfer;  // largest region access
	uint64_t page_size = 4096;                      // DMA_MAP alignment
	bool write_multiple = false;                    // REGION_WRITE_MULTI allowed
	uint64_t max_message = (1u << 20) + 64;         // header included
};

// What to do with a message: act on it (error 0), answer it with an error
// (unless it asked for no reply), or close the connection because the
// stream can no longer be trusted.
struct Verdict {
	int error = 0;
	bool close = false;
	bool ok() const { return error == 0 && !close; }
};

class Validator {
public:
	explicit Validator(const Limits &limits) : limits_(limits) {}
	void set_limits(const Limits &limits) { limits_ = limits; }
	const Limits &limits() const { return limits_; }

	// `msg` is one whole message as framed by the header's size.
	Verdict check(std::span<const uint8_t> msg, size_t nfds) const;

private:
	Verdict check_header(std::span<const uint8_t> msg, size_t nfds) const;
	int check_payload(Command cmd, std::span<const uint8_t> p, size_t nfds) const;
	int check_version(std::span<const uint8_t> p, size_t nfds) const;
	int check_dma_map(std::span<const uint8_t> p, size_t nfds) const;
	int check_dma_unmap(std::span<const uint8_t> p, size_t nfds) const;
	int check_set_irqs(std::span<const uint8_t> p, size_t nfds) const;
	int check_region_read(std::span<const uint8_t> p, size_t nfds) const;
	int check_region_write(std::span<const uint8_t> p, size_t nfds) const;
	int check_write_multi(std::span<const uint8_t> p, size_t nfds) const;
	int check_access(uint64_t offset, uint64_t count) const;
	bool aligned(uint64_t v) const { return (v & (limits_.page_size - 1)) == 0; }

	Limits limits_;
};

// An argsz-led request (GET_INFO, GET_REGION_INFO, GET_IRQ_INFO...): the
// payload holds the fixed struct and argsz is at least its size.
int check_argsz(std::span<const uint8_t> p, size_t fixed);

}  // namespace aic100::vfio_user
