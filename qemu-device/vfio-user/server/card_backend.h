// SPDX-License-Identifier: GPL-2.0-or-later
// The device core behind the vfio-user protocol layer: a DeviceBackend
// (regions, config space, IRQs, DMA map events) and the core's
// HostInterface (DMA, MSI, time, work). Everything runs on the server's one
// thread, as everything runs under the BQL in QEMU; only kick() comes from
// the NSP threads, and it only writes an eventfd.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "aic100/device.h"
#include "aic100/host.h"
#include "aic100/vfio_user/backend.h"
#include "aic100/vfio_user/dma_map.h"
#include "aic100/vfio_user/dma_messages.h"
#include "aic100/vfio_user/irq_table.h"
#include "aic100/vfio_user/pci_config.h"
#include "aic100/vfio_user/unique_fd.h"

namespace aic100::vfio_user {

// How the card reaches client memory that has no fd: the server sends a
// DMA_READ or DMA_WRITE and waits for the reply. False when no reply can
// come (no client, a reply to the client is still owed, the client went).
class DmaPort {
public:
	virtual ~DmaPort() = default;
	virtual bool dma_exchange(const std::vector<uint8_t> &request, std::vector<uint8_t> &reply) = 0;
	virtual uint64_t dma_max_xfer() const = 0;  // largest count one message may carry
	virtual uint16_t next_dma_id() = 0;
};

// The connection state the backend reads: the client's memory and eventfds.
struct ClientLink {
	const DmaMapTable *dma = nullptr;
	const IrqTable *irqs = nullptr;
	DmaPort *port = nullptr;
};

class CardBackend final : public DeviceBackend, public HostInterface {
public:
	// `cfg` must have passed DeviceConfig::validate().
	explicit CardBackend(const DeviceConfig &cfg);
	~CardBackend() override;

	void attach(const ClientLink &link) { link_ = link; }
	// The layout of the card's DMA_READ and DMA_WRITE messages: the
	// spec's, which QEMU 11.1 reads, or QEMU 10.x's 4-byte count.
	void set_dma_layout(DmaLayout layout) { dma_layout_ = layout; }

	// DeviceBackend
	DeviceInfo device_info() const override;
	RegionDesc region(uint32_t index) const override;
	IrqDesc irq(uint32_t index) const override;
	int region_read(uint32_t index, uint64_t offset, std::span<uint8_t> out) override;
	int region_write(uint32_t index, uint64_t offset, std::span<const uint8_t> in) override;
	int config_read(uint64_t offset, std::span<uint8_t> out) override;
	int config_write(uint64_t offset, std::span<const uint8_t> in) override;
	int irq_action(const IrqSet &set, std::span<const uint8_t> bools) override;
	void irq_eventfds_changed(uint32_t index) override;
	int dma_mapped(DmaRegion &r) override;
	void dma_unmapping(DmaRegion &r) override;
	int reset() override;

	// HostInterface
	DmaStatus dma_read(uint64_t bus_addr, void *buf, size_t len) override;
	DmaStatus dma_write(uint64_t bus_addr, const void *buf, size_t len) override;
	DmaExtent dma_extent(uint64_t bus_addr, uint64_t len, bool is_write) const override;
	void raise_msi(unsigned vector) override;
	unsigned msi_vectors_enabled() const override { return msi_vectors_; }
	uint64_t now_ns() const override;
	void kick() override;
	void arm_timer(uint64_t deadline_ns) override;
	void guest_error(const char *msg) override;

	// The server polls these; when either is readable, run_work().
	int kick_fd() const { return kick_.get(); }
	int timer_fd() const { return timer_.get(); }
	void run_work();

	Device &device() { return *dev_; }
	const PciConfigSpace &config() const { return config_; }

private:
	struct Mapping {
		void *base = nullptr;
		size_t len = 0;
	};
	// One mapping of a whole file (guest RAM's memfd), shared by every
	// region in it: a vIOMMU maps page by page, and a mapping per region
	// would meet vm.max_map_count.
	struct FileMapping {
		Mapping map;
		uint64_t users = 0;
	};
	using FileKey = std::pair<uint64_t, uint64_t>;  // st_dev, st_ino
	bool map_from_file(DmaRegion &r, const FileKey &key, size_t file_size);
	void map_region_alone(DmaRegion &r);
	DmaStatus dma(uint64_t addr, uint8_t *buf, size_t len, bool write);
	bool message_dma(uint64_t addr, uint8_t *buf, size_t len, bool write);
	uint32_t msi_index() const;
	template <class Fn> void guarded(const char *what, Fn fn);

	PciConfigSpace config_;
	UniqueFd kick_;
	UniqueFd timer_;
	uint64_t start_ns_;
	GuestErrorLimit error_limit_;
	ClientLink link_;
	DmaLayout dma_layout_ = DmaLayout::Spec;
	std::map<uint64_t, Mapping> mappings_;  // a region's own, by client address
	std::map<FileKey, FileMapping> files_;
	std::map<uint64_t, FileKey> file_users_;  // by client address
	unsigned msi_vectors_ = 0;
	bool msix_ = false;
	std::unique_ptr<Device> dev_;  // last: its constructor may call the host
};

}  // namespace aic100::vfio_user
