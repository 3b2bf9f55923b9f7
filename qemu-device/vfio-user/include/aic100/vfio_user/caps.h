// SPDX-License-Identifier: GPL-2.0-or-later
// VERSION's capabilities: the JSON object each side sends, read by a small
// parser of its own that knows only the keys the server uses, and written
// to fit in the room QEMU's client leaves for the reply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aic100/vfio_user.h"

namespace aic100::vfio_user {

// One side's capabilities; a key the JSON leaves out keeps its default.
struct Caps {
	uint32_t max_msg_fds = kDefaultMaxMsgFds;       // fds the sender can receive in one message
	uint64_t max_data_xfer = kDefaultMaxDataXfer;  // largest count of a region or DMA access
	uint64_t pgsizes = kDefaultPgsizes;            // page sizes DMA_MAP may use, ORed
	uint64_t max_dma_maps = kDefaultMaxDmaMaps;
	bool write_multiple = false;
};

// The capabilities in `json` (the text before the NUL): `{}` or
// `{"capabilities":{...}}`, other keys and nested objects skipped. Nothing
// when the text is not JSON, nests deeper than 16, or gives a known key a
// value of the wrong type (a negative or fractional number, a number past
// 64 bits, max_msg_fds past 32 bits).
std::optional<Caps> parse_caps(std::string_view json);

// The server's JSON for `caps`, with as many keys as fit in `room` bytes
// counting the NUL, most needed first (max_msg_fds, max_data_xfer_size,
// pgsizes, max_dma_maps, write_multiple when true). `sent` gets what the
// client will take the server's capabilities to be (defaults for the keys
// left out). Empty when not even `{"capabilities":{}}` fits.
std::string write_caps(const Caps &caps, size_t room, Caps &sent);

}  // namespace aic100::vfio_user
