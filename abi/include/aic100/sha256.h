// SPDX-License-Identifier: GPL-2.0-or-later
// SHA-256 (FIPS 180-4), enough for the firmware digest: the device core links
// no crypto library, and QEMU's crypto layer is out of reach of the core.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace aic100 {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
public:
	Sha256() { reset(); }

	void reset();
	void update(const void *data, size_t len);
	void update(std::span<const uint8_t> data) { update(data.data(), data.size()); }
	// Pads, returns the digest and leaves the object reset for reuse.
	Sha256Digest finish();

private:
	void compress(const uint8_t *block);

	std::array<uint32_t, 8> state_;
	std::array<uint8_t, 64> buf_;
	size_t buf_len_;
	uint64_t total_len_; // bytes hashed so far
};

Sha256Digest sha256(std::span<const uint8_t> data);

} // namespace aic100
