// SPDX-License-Identifier: GPL-2.0-or-later
// Building vfio-user messages as a client sends them, for the protocol
// layer's unit tests, fuzzer seeds and fuzzer.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user::test {

// What QEMU 11.1's client sends in its VERSION (proxy.c caps_json()).
inline const std::string kQemuCaps =
	R"({"capabilities":{"migration":{"pgsize":4096,"max_bitmap_size":268435456},)"
	R"("max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535,"write_multiple":true}})";

inline std::vector<uint8_t> message(Command cmd, const std::vector<uint8_t> &payload, uint16_t id = 1,
				    uint32_t flags = kTypeCommand)
{
	std::vector<uint8_t> m;
	append(m, Header{id, static_cast<uint16_t>(cmd), static_cast<uint32_t>(sizeof(Header) + payload.size()), flags, 0});
	m.insert(m.end(), payload.begin(), payload.end());
	return m;
}

template <class T> std::vector<uint8_t> bytes_of(const T &v)
{
	std::vector<uint8_t> b;
	append(b, v);
	return b;
}

inline std::vector<uint8_t> operator+(std::vector<uint8_t> a, const std::vector<uint8_t> &b)
{
	a.insert(a.end(), b.begin(), b.end());
	return a;
}

inline std::vector<uint8_t> version_message(const std::string &json, uint16_t major = kMajor, uint16_t minor = kMinor)
{
	std::vector<uint8_t> p = bytes_of(Version{major, minor});
	if (!json.empty()) {
		p.insert(p.end(), json.begin(), json.end());
		p.push_back(0);
	}
	return message(Command::Version, p);
}

inline std::vector<uint8_t> dma_map_message(uint64_t address, uint64_t size, uint32_t flags = kDmaRead | kDmaWrite,
					    uint64_t offset = 0)
{
	return message(Command::DmaMap, bytes_of(DmaMap{sizeof(DmaMap), flags, offset, address, size}));
}

inline std::vector<uint8_t> dma_unmap_message(uint64_t address, uint64_t size, uint32_t flags = 0)
{
	return message(Command::DmaUnmap, bytes_of(DmaUnmap{sizeof(DmaUnmap), flags, address, size}));
}

inline std::vector<uint8_t> set_irqs_message(uint32_t flags, uint32_t index, uint32_t start, uint32_t count,
					     const std::vector<uint8_t> &data = {})
{
	return message(Command::SetIrqs, bytes_of(IrqSet{sizeof(IrqSet), flags, index, start, count}) + data);
}

inline std::vector<uint8_t> region_read_message(uint32_t region, uint64_t offset, uint32_t count)
{
	return message(Command::RegionRead, bytes_of(RegionAccess{offset, region, count}));
}

inline std::vector<uint8_t> region_write_message(uint32_t region, uint64_t offset, const std::vector<uint8_t> &data,
						 uint32_t flags = kTypeCommand)
{
	return message(Command::RegionWrite,
		       bytes_of(RegionAccess{offset, region, static_cast<uint32_t>(data.size())}) + data, 1, flags);
}

inline WriteMultiEntry write_entry(uint32_t region, uint64_t offset, uint32_t count, uint8_t fill)
{
	WriteMultiEntry e{offset, region, count, {}};
	std::memset(e.data, fill, sizeof(e.data));
	return e;
}

inline std::vector<uint8_t> write_multi_message(const std::vector<WriteMultiEntry> &entries, uint64_t wr_cnt)
{
	std::vector<uint8_t> p = bytes_of(WriteMulti{wr_cnt});
	for (const WriteMultiEntry &e : entries)
		append(p, e);
	return message(Command::RegionWriteMulti, p, 1, kNoReply);
}

}  // namespace aic100::vfio_user::test
