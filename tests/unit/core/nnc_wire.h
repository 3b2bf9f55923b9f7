// SPDX-License-Identifier: GPL-2.0-or-later
// NNC messages as the qaic driver puts them on QAIC_CONTROL, built and taken
// apart with no test framework: the unit tests' NNC host (nnc_host.h) and
// the fuzz seed generators (tests/fuzz) both build theirs here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aic100/nnc.h"

namespace aic100::test {

template <typename T> inline std::vector<uint8_t> raw(const T &v)
{
	std::vector<uint8_t> b(sizeof(T));
	std::memcpy(b.data(), &v, sizeof(T));
	return b;
}
template <typename T> inline T as(const std::vector<uint8_t> &b, size_t off = 0)
{
	T v{};
	std::memcpy(&v, b.data() + off, std::min(sizeof(T), b.size() - std::min(off, b.size())));
	return v;
}

// An ELF64 header with no sections: an image the card does not run itself.
inline std::vector<uint8_t> tiny_elf(size_t n, uint16_t machine = 164)
{
	std::vector<uint8_t> e(n, 0xAB);
	std::fill(e.begin() + 16, e.begin() + 64, 0);
	const uint8_t ident[] = {0x7F, 'E', 'L', 'F', 2, 1, 1};
	std::memcpy(e.data(), ident, sizeof(ident));
	e[18] = machine & 0xFF;
	e[19] = machine >> 8;
	return e;
}

struct NncTrans {
	uint32_t type;
	std::vector<uint8_t> data; // whole transaction, header included
};

// A command for the card's QSM, with the UMD's trailing 8 zero bytes.
inline NncTrans passthrough(std::vector<uint8_t> req)
{
	req.resize(req.size() + 8, 0);
	NncTrans t{nnc::kPassthroughToDev,
		   raw(nnc::TransHdr{nnc::kPassthroughToDev, static_cast<uint32_t>(8 + req.size())})};
	t.data.insert(t.data.end(), req.begin(), req.end());
	return t;
}

// DMA_XFER_TO_DEV of `len` bytes at host address `addr` (none when len is 0).
inline NncTrans dma_xfer(uint32_t tag, uint64_t addr, uint64_t len, uint32_t chunk = 0)
{
	const uint32_t pairs = len ? 1 : 0;
	NncTrans t{nnc::kDmaXferToDev, raw(nnc::DmaXferToDev{{nnc::kDmaXferToDev, static_cast<uint32_t>(24 + 16 * pairs)},
							     tag, pairs, chunk, 0})};
	if (pairs) {
		const auto p = raw(nnc::DmaPair{addr, len});
		t.data.insert(t.data.end(), p.begin(), p.end());
	}
	return t;
}

// ACTIVATE_FROM_USR: request FIFO of `n` elements at `fifo`, the response
// FIFO at the end of the `buf` bytes there.
inline NncTrans activate_to_dev(uint64_t fifo, uint32_t n, uint32_t buf)
{
	return {nnc::kActivateToDev,
		raw(nnc::ActivateToDev{{nnc::kActivateToDev, 40}, fifo, fifo + buf - 4 * n, n, n, buf, 0})};
}

// The STATUS transaction the driver sends when QAIC_CONTROL comes up.
inline NncTrans status_to_dev()
{
	std::vector<uint8_t> d(8, 0);
	const uint32_t w[2] = {nnc::kStatusToDev, 8};
	std::memcpy(d.data(), w, sizeof(w));
	return {nnc::kStatusToDev, d};
}

// One message: the header (no CRC) and the transactions.
inline std::vector<uint8_t> nnc_message(const std::vector<NncTrans> &ts, uint32_t seq, uint32_t handle,
					uint32_t partition = 0xFFFFFFFF)
{
	std::vector<uint8_t> body;
	for (const auto &t : ts)
		body.insert(body.end(), t.data.begin(), t.data.end());
	const nnc::Header h{0, nnc::kMagic, seq, static_cast<uint32_t>(nnc::kHeaderSize + body.size()),
			    static_cast<uint32_t>(ts.size()), handle, partition, 0};
	std::vector<uint8_t> m = raw(h);
	m.insert(m.end(), body.begin(), body.end());
	return m;
}

// The payload of a reply's first transaction when it is a passthrough;
// empty otherwise.
inline std::vector<uint8_t> first_passthrough_payload(const std::vector<uint8_t> &reply)
{
	const size_t at = nnc::kHeaderSize;
	if (reply.size() < at + 8)
		return {};
	const auto th = as<nnc::TransHdr>(reply, at);
	if (th.type != nnc::kPassthroughFromDev || th.len < 8 || at + th.len > reply.size())
		return {};
	return std::vector<uint8_t>(reply.begin() + static_cast<long>(at + 8), reply.begin() + static_cast<long>(at + th.len));
}

} // namespace aic100::test
