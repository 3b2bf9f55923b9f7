// SPDX-License-Identifier: GPL-2.0-or-later
// qaic::Manage: one DRM_IOCTL_QAIC_MANAGE message. User transactions are
// built into the buffer the ioctl takes (at most 4096 bytes), and the reply
// the driver writes over it is decoded with bounds checks (contract §8.7,
// §11.3).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aic100/nnc.h"
#include "qaic.h"
#include "qaic_accel.h"

namespace qaic {

// The ioctl entry point: Device::ioctl, or a fake in unit tests. Returns 0
// or -errno.
using Ioctl = std::function<int(unsigned long request, void *arg)>;

// What the driver returned: user-layout transactions of types 3
// (PASSTHROUGH_FROM_DEV), 8 (ACTIVATE_FROM_DEV), 11 (DEACTIVATE_FROM_DEV) and
// 14 (STATUS_FROM_DEV).
struct ManageReply {
	struct Transaction {
		uint32_t type = 0;
		std::vector<uint8_t> bytes; // the whole transaction, header included

		// A passthrough's payload (after the 8-byte header).
		std::span<const uint8_t> payload() const
		{
			return std::span<const uint8_t>(bytes).subspan(sizeof(qaic_manage_trans_hdr));
		}
	};

	uint32_t len = 0;   // as the driver wrote them
	uint32_t count = 0; // may exceed transactions.size(): upstream counts
			    // DEACTIVATE_FROM_DEV without copying it out
	std::vector<Transaction> transactions;
	std::string error; // why the reply is malformed; empty if it decoded

	// Decodes `len` bytes of `buf` holding `count` transactions.
	static ManageReply decode(std::span<const uint8_t> buf, uint32_t len, uint32_t count);

	bool ok() const { return error.empty(); }
	// The n-th transaction of `type`, or null.
	const Transaction *find(uint32_t type, size_t n = 0) const;
	std::optional<qaic_manage_trans_activate_from_dev> activate() const;
	std::optional<aic100::nnc::DeactivateFromDev> deactivate() const;
	std::optional<qaic_manage_trans_status_from_dev> status() const;
};

class Manage {
public:
	static constexpr size_t kMaxLength = 4096; // QAIC_MANAGE_MAX_MSG_LENGTH
	static constexpr uint32_t kMaxCount = kMaxLength / sizeof(qaic_manage_trans_hdr);

	// Transactions, appended in order. One that does not fit in the buffer
	// is dropped and marks the message overflowed (send() then refuses).
	Manage &passthrough(std::span<const uint8_t> payload);
	// Copies [addr, addr + size) of this process to the card under tag; the
	// memory must stay valid until send() returns.
	Manage &dma_xfer(uint32_t tag, const void *addr, uint64_t size);
	Manage &activate(uint32_t queue_size, uint32_t options = 0);
	Manage &deactivate(uint32_t dbc_id);
	Manage &status();
	// A transaction exactly as given (its header included), unchecked: for
	// tests of the driver's validation.
	Manage &raw(std::span<const uint8_t> transaction);

	// Issues the ioctl with the built length and count. Returns 0 or -errno;
	// the reply is decoded on success and on -ECANCELED (the driver copies
	// it out then too). -EMSGSIZE without an ioctl if the message overflowed.
	int send(const Device &dev) { return send(ioctl_of(dev)); }
	int send(const Ioctl &ioctl);
	// The same buffer, claiming another length and count (negative tests;
	// len may exceed the buffer: the driver must refuse it unread).
	int send_as(const Ioctl &ioctl, uint32_t len, uint32_t count);
	int send_as(const Device &dev, uint32_t len, uint32_t count) { return send_as(ioctl_of(dev), len, count); }

	void clear();
	bool overflowed() const { return overflow_; }
	uint32_t length() const { return len_; }
	uint32_t count() const { return count_; }
	// The request as built (before send), or the raw reply (after).
	std::span<const uint8_t> bytes() const { return std::span<const uint8_t>(buf_.data(), len_); }
	const ManageReply &reply() const { return reply_; }

	static Ioctl ioctl_of(const Device &dev)
	{
		return [&dev](unsigned long req, void *arg) { return dev.ioctl(req, arg); };
	}

private:
	bool append(const void *head, size_t head_len, std::span<const uint8_t> tail = {});

	alignas(8) std::array<uint8_t, kMaxLength> buf_{};
	uint32_t len_ = 0;
	uint32_t count_ = 0;
	bool overflow_ = false;
	ManageReply reply_;
};

} // namespace qaic
