// SPDX-License-Identifier: GPL-2.0-or-later
#include "manage.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "aic100/format.h"

namespace qaic {

namespace {

template <typename T> std::optional<T> load(const ManageReply::Transaction *t)
{
	if (!t || t->bytes.size() < sizeof(T))
		return std::nullopt;
	T v;
	std::memcpy(&v, t->bytes.data(), sizeof(T));
	return v;
}

// Smallest length of the fixed-size reply types; 0 for passthroughs.
size_t min_len(uint32_t type)
{
	switch (type) {
	case QAIC_TRANS_PASSTHROUGH_FROM_DEV:
		return sizeof(qaic_manage_trans_hdr);
	case QAIC_TRANS_ACTIVATE_FROM_DEV:
		return sizeof(qaic_manage_trans_activate_from_dev);
	case QAIC_TRANS_DEACTIVATE_FROM_DEV:
		return sizeof(aic100::nnc::DeactivateFromDev);
	case QAIC_TRANS_STATUS_FROM_DEV:
		return sizeof(qaic_manage_trans_status_from_dev);
	default:
		return 0;
	}
}

using aic100::format;

} // namespace

ManageReply ManageReply::decode(std::span<const uint8_t> buf, uint32_t len, uint32_t count)
{
	ManageReply r;
	r.len = len;
	r.count = count;
	if (len > buf.size()) {
		r.error = format("reply length %u exceeds the %zu-byte buffer", len, buf.size());
		return r;
	}
	size_t off = 0;
	for (uint32_t i = 0; i < count && off < len; i++) {
		if (len - off < sizeof(qaic_manage_trans_hdr)) {
			r.error = format("transaction %u: %zu bytes left, less than a header", i, len - off);
			return r;
		}
		qaic_manage_trans_hdr h;
		std::memcpy(&h, buf.data() + off, sizeof(h));
		if (h.len < sizeof(h) || h.len > len - off) {
			r.error = format("transaction %u: length %u outside 8..%zu", i, h.len, len - off);
			return r;
		}
		const size_t need = min_len(h.type);
		if (!need) {
			r.error = format("transaction %u: type %u is not a reply type", i, h.type);
			return r;
		}
		if (h.len < need) {
			r.error = format("transaction %u: type %u of %u bytes, want %zu", i, h.type, h.len, need);
			return r;
		}
		r.transactions.push_back({h.type, std::vector<uint8_t>(buf.data() + off, buf.data() + off + h.len)});
		off += h.len;
	}
	if (off != len)
		r.error = format("%zu bytes of %u decoded from %u transactions", off, len, count);
	return r;
}

const ManageReply::Transaction *ManageReply::find(uint32_t type, size_t n) const
{
	for (const auto &t : transactions)
		if (t.type == type && n-- == 0)
			return &t;
	return nullptr;
}

std::optional<qaic_manage_trans_activate_from_dev> ManageReply::activate() const
{
	return load<qaic_manage_trans_activate_from_dev>(find(QAIC_TRANS_ACTIVATE_FROM_DEV));
}

std::optional<aic100::nnc::DeactivateFromDev> ManageReply::deactivate() const
{
	return load<aic100::nnc::DeactivateFromDev>(find(QAIC_TRANS_DEACTIVATE_FROM_DEV));
}

std::optional<qaic_manage_trans_status_from_dev> ManageReply::status() const
{
	return load<qaic_manage_trans_status_from_dev>(find(QAIC_TRANS_STATUS_FROM_DEV));
}

bool Manage::append(const void *head, size_t head_len, std::span<const uint8_t> tail)
{
	const size_t len = head_len + tail.size();
	if (overflow_ || len > buf_.size() - len_ || count_ >= kMaxCount) {
		overflow_ = true;
		return false;
	}
	std::memcpy(buf_.data() + len_, head, head_len);
	if (!tail.empty())
		std::memcpy(buf_.data() + len_ + head_len, tail.data(), tail.size());
	len_ += static_cast<uint32_t>(len);
	count_++;
	return true;
}

Manage &Manage::passthrough(std::span<const uint8_t> payload)
{
	const qaic_manage_trans_hdr h{QAIC_TRANS_PASSTHROUGH_FROM_USR,
				      static_cast<uint32_t>(std::min<size_t>(sizeof(h) + payload.size(), UINT32_MAX))};
	append(&h, sizeof(h), payload);
	return *this;
}

Manage &Manage::dma_xfer(uint32_t tag, const void *addr, uint64_t size)
{
	qaic_manage_trans_dma_xfer t{};
	t.hdr = {QAIC_TRANS_DMA_XFER_FROM_USR, sizeof(t)};
	t.tag = tag;
	// The UMD writes 1 here (its "count"); upstream calls it pad and ignores it.
	t.pad = 0;
	t.addr = reinterpret_cast<uintptr_t>(addr);
	t.size = size;
	append(&t, sizeof(t));
	return *this;
}

Manage &Manage::activate(uint32_t queue_size, uint32_t options)
{
	qaic_manage_trans_activate_to_dev t{};
	t.hdr = {QAIC_TRANS_ACTIVATE_FROM_USR, sizeof(t)};
	t.queue_size = queue_size;
	t.options = options;
	append(&t, sizeof(t));
	return *this;
}

Manage &Manage::deactivate(uint32_t dbc_id)
{
	qaic_manage_trans_deactivate t{};
	t.hdr = {QAIC_TRANS_DEACTIVATE_FROM_USR, sizeof(t)};
	t.dbc_id = dbc_id;
	append(&t, sizeof(t));
	return *this;
}

Manage &Manage::status()
{
	const qaic_manage_trans_status_to_dev t{{QAIC_TRANS_STATUS_FROM_USR, sizeof(t)}};
	append(&t, sizeof(t));
	return *this;
}

Manage &Manage::raw(std::span<const uint8_t> transaction)
{
	append(transaction.data(), transaction.size(), {});
	return *this;
}

void Manage::clear()
{
	len_ = count_ = 0;
	overflow_ = false;
	reply_ = {};
}

int Manage::send(const Ioctl &ioctl)
{
	if (overflow_)
		return -EMSGSIZE;
	return send_as(ioctl, len_, count_);
}

int Manage::send_as(const Ioctl &ioctl, uint32_t len, uint32_t count)
{
	qaic_manage_msg msg{};
	msg.len = len;
	msg.count = count;
	msg.data = reinterpret_cast<uintptr_t>(buf_.data());
	reply_ = {};
	const int ret = ioctl(DRM_IOCTL_QAIC_MANAGE, &msg);
	if (ret == 0 || ret == -ECANCELED) {
		reply_ = ManageReply::decode(buf_, msg.len, msg.count);
		// The buffer now holds the reply.
		len_ = std::min<uint32_t>(msg.len, buf_.size());
		count_ = msg.count;
	}
	return ret;
}

} // namespace qaic
