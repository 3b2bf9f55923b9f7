// SPDX-License-Identifier: GPL-2.0-or-later
// The card's DMA through the client's memory: regions the client shared
// an fd for are mmapped here and copied with memcpy; the rest is reached
// with DMA_READ and DMA_WRITE messages in the layout QEMU's client reads
// (docs/vfio-user.md, "DMA_READ and DMA_WRITE in QEMU").
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/dma_messages.h"
#include "card_backend.h"

namespace aic100::vfio_user {
namespace {

constexpr uint16_t kCommandBusMaster = 0x4;

uint64_t page_size()
{
	const long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? static_cast<uint64_t>(p) : 4096;
}

}  // namespace

// Guest RAM comes as one memfd: mapped whole once, read and write (the
// table enforces each region's protection), and shared by its regions.
// false: the file cannot be mapped whole, or has grown past its mapping.
bool CardBackend::map_from_file(DmaRegion &r, const FileKey &key, size_t file_size)
{
	auto it = files_.find(key);
	if (it == files_.end()) {
		void *base = mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd.get(), 0);
		if (base == MAP_FAILED)
			return false;
		it = files_.emplace(key, FileMapping{{base, file_size}, 0}).first;
	}
	if (r.offset + r.size > it->second.map.len)
		return false;
	it->second.users++;
	file_users_[r.address] = key;
	r.host = static_cast<uint8_t *>(it->second.map.base) + r.offset;
	return true;
}

int CardBackend::dma_mapped(DmaRegion &r)
{
	if (!r.fd.valid())
		return 0;
	struct stat st;
	if (fstat(r.fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
		const uint64_t file_size = static_cast<uint64_t>(st.st_size);
		// Past the file's end the card's access would be a SIGBUS here.
		if (r.offset > file_size || r.size > file_size - r.offset)
			return EINVAL;
		if (!map_from_file(r, {st.st_dev, st.st_ino}, file_size))
			map_region_alone(r);
	} else {
		map_region_alone(r);
	}
	// The mapping holds the memory. Behind a vIOMMU the client maps page by
	// page, each with its fd: keeping them ran the server out of fds
	// (RLIMIT_NOFILE), and the kernel then drops a message's fd and sets
	// MSG_CTRUNC, which loses the client.
	r.fd.reset();
	return 0;
}

// A file that cannot be mapped whole (read-only, not a regular file): the
// region's own mapping, from the page holding `offset` (mmap wants a page
// offset; the client's may be finer). One that cannot be mapped at all
// stays reachable through messages rather than failing the DMA_MAP.
void CardBackend::map_region_alone(DmaRegion &r)
{
	const uint64_t lead = r.offset % page_size();
	const size_t len = r.size + lead;
	const int prot = ((r.prot & kDmaRead) ? PROT_READ : 0) | ((r.prot & kDmaWrite) ? PROT_WRITE : 0);
	void *base = mmap(nullptr, len, prot ? prot : PROT_NONE, MAP_SHARED, r.fd.get(), static_cast<off_t>(r.offset - lead));
	if (base == MAP_FAILED) {
		std::fprintf(stderr, "aic100-vfio-user: DMA region 0x%llx+0x%llx not mapped (%s): DMA through messages\n",
			     static_cast<unsigned long long>(r.address), static_cast<unsigned long long>(r.size),
			     std::strerror(errno));
		return;
	}
	mappings_[r.address] = {base, len};
	r.host = static_cast<uint8_t *>(base) + lead;
}

// The server is one thread and queues the commands that arrive while a
// DMA message waits for its reply, so no DMA is in flight here: the
// region goes at once.
void CardBackend::dma_unmapping(DmaRegion &r)
{
	if (const auto it = mappings_.find(r.address); it != mappings_.end()) {
		munmap(it->second.base, it->second.len);
		mappings_.erase(it);
	}
	if (const auto user = file_users_.find(r.address); user != file_users_.end()) {
		const auto file = files_.find(user->second);
		if (--file->second.users == 0) {
			munmap(file->second.map.base, file->second.map.len);
			files_.erase(file);
		}
		file_users_.erase(user);
	}
	r.host = nullptr;
}

DmaStatus CardBackend::dma_read(uint64_t bus_addr, void *buf, size_t len)
{
	return dma(bus_addr, static_cast<uint8_t *>(buf), len, false);
}

DmaStatus CardBackend::dma_write(uint64_t bus_addr, const void *buf, size_t len)
{
	return dma(bus_addr, static_cast<uint8_t *>(const_cast<void *>(buf)), len, true);
}

// Region by region: memcpy where the client's memory is mapped here,
// messages where it is not; an address outside every region, or a region
// without the access's permission, fails the whole DMA (as pci_dma_* does
// in the glue). With bus mastering off the card reaches nothing.
DmaStatus CardBackend::dma(uint64_t addr, uint8_t *buf, size_t len, bool write)
{
	if (!link_.dma || !(config_.command() & kCommandBusMaster))
		return DmaStatus::Error;
	for (size_t done = 0; done < len;) {
		const DmaTarget t = link_.dma->find(addr + done, len - done, write);
		if (t.kind == DmaTarget::Kind::Unmapped || t.kind == DmaTarget::Kind::Denied)
			return DmaStatus::Error;
		if (t.kind == DmaTarget::Kind::Memory) {
			if (write)
				std::memcpy(t.host, buf + done, t.len);
			else
				std::memcpy(buf + done, t.host, t.len);
		} else if (!message_dma(addr + done, buf + done, t.len, write)) {
			return DmaStatus::Error;
		}
		done += t.len;
	}
	return DmaStatus::Ok;
}

// In pieces of at most the client's transfer size: QEMU refuses a larger
// DMA_READ (E2BIG) and drops a larger message unread.
bool CardBackend::message_dma(uint64_t addr, uint8_t *buf, size_t len, bool write)
{
	if (!link_.port)
		return false;
	const uint64_t max = std::max<uint64_t>(link_.port->dma_max_xfer(), 1);
	for (size_t done = 0; done < len;) {
		const auto n = static_cast<uint32_t>(std::min<uint64_t>(max, len - done));
		const uint16_t id = link_.port->next_dma_id();
		const uint64_t at = addr + done;
		std::vector<uint8_t> reply;
		const std::span<uint8_t> part(buf + done, n);
		const std::vector<uint8_t> req = write ? dma_write_request(id, at, part, dma_layout_)
						       : dma_read_request(id, at, n, dma_layout_);
		if (!link_.port->dma_exchange(req, reply))
			return false;
		const int e = write ? dma_write_reply(reply, id, at, n, dma_layout_)
				    : dma_read_reply(reply, id, at, part, dma_layout_);
		if (e != 0)
			return false;
		done += n;
	}
	return true;
}

// Mapped memory is RAM to the core; what takes messages is not: a pass
// then moves fewer of those bytes, as it does outside RAM in the glue.
HostInterface::DmaExtent CardBackend::dma_extent(uint64_t bus_addr, uint64_t len, bool is_write) const
{
	if (!link_.dma)
		return {true, len};
	const DmaTarget t = link_.dma->find(bus_addr, len, is_write);
	if (t.kind == DmaTarget::Kind::Message)
		return {false, t.len};
	if (t.kind == DmaTarget::Kind::Memory)
		return {true, t.len};
	return {true, len};  // fails at once, moving nothing
}

}  // namespace aic100::vfio_user
