// SPDX-License-Identifier: GPL-2.0-or-later
// The PBL's side of a BHIe load: it reads the host's vector table and the
// segments it lists, in order, into one image. Every size comes from the
// guest, so each is checked before anything is allocated or read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aic100/host.h"

namespace aic100 {

// The most segments the PBL takes: upstream cuts sbl.bin into 512 KiB
// segments, so a 2 MiB SBL needs 4.
inline constexpr uint32_t kMaxBhieSegments = 256;

struct BhieLoad {
	std::vector<uint8_t> image; // the segments, joined
	std::string error;          // why the load was refused; empty on success
};

// Reads the image the vector table at `table_addr` (`table_size` bytes)
// describes; the image may be at most `max_image` bytes.
BhieLoad load_bhie_image(HostInterface &host, uint64_t table_addr, uint32_t table_size, uint64_t max_image);

} // namespace aic100
