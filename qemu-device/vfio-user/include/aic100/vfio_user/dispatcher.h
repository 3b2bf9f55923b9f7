// SPDX-License-Identifier: GPL-2.0-or-later
// One client connection's commands, from received bytes to the reply: each
// message goes through the Validator, then VERSION negotiates the
// capabilities, DMA_MAP/UNMAP keep the DmaMapTable, SET_IRQS the IrqTable,
// and the rest become calls on the DeviceBackend. No socket here: the front
// end receives whole messages with their fds and sends what comes back.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/backend.h"
#include "aic100/vfio_user/caps.h"
#include "aic100/vfio_user/dma_map.h"
#include "aic100/vfio_user/irq_table.h"
#include "aic100/vfio_user/unique_fd.h"
#include "aic100/vfio_user/validator.h"

namespace aic100::vfio_user {

struct Reply {
	bool send = false;   // bytes is a reply to send
	bool close = false;  // then close the connection
	std::vector<uint8_t> bytes;
	std::vector<int> fds;  // sent with the reply; still the backend's
};

class Dispatcher {
public:
	// `ours`: what the server can do (fds per message it receives, largest
	// access, page sizes, DMA regions, write_multiple).
	Dispatcher(DeviceBackend &dev, const Caps &ours);

	Reply handle(std::span<const uint8_t> msg, std::vector<UniqueFd> fds);
	// The client went: every DMA region is unmapped and every eventfd
	// closed; the device keeps its state for the next client.
	void disconnect();

	bool negotiated() const { return negotiated_; }
	const Caps &client_caps() const { return client_; }  // from its VERSION
	const Caps &sent_caps() const { return sent_; }      // as the client now sees ours
	const Limits &limits() const { return validator_.limits(); }
	const DmaMapTable &dma() const { return dma_; }
	DmaMapTable &dma() { return dma_; }
	const IrqTable &irqs() const { return irqs_; }

private:
	using Payload = std::span<const uint8_t>;
	int dispatch(Command cmd, Payload p, std::vector<UniqueFd> &fds, Reply &r);
	int on_version(Payload p, Reply &r);
	int on_dma_map(Payload p, std::vector<UniqueFd> &fds);
	int on_dma_unmap(Payload p, Reply &r);
	int on_device_info(Reply &r);
	int on_region_info(Payload p, Reply &r);
	int on_irq_info(Payload p, Reply &r);
	int on_set_irqs(Payload p, std::vector<UniqueFd> &fds);
	int on_region_read(Payload p, Reply &r);
	int on_region_write(Payload p, Reply &r);
	int on_write_multi(Payload p, Reply &r);
	int check_region(uint32_t index, uint64_t offset, uint64_t count, uint32_t need) const;
	int write_region(uint32_t index, uint64_t offset, Payload data);
	// The limits for `offer`; write_multiple only once VERSION agreed on it.
	Limits limits_for(const Caps &offer, const Caps &sent, bool negotiated) const;

	DeviceBackend &dev_;
	Caps ours_;
	Caps client_;
	Caps sent_;
	Validator validator_;
	DmaMapTable dma_;
	IrqTable irqs_;
	bool negotiated_ = false;
};

}  // namespace aic100::vfio_user
