// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/vfio_user/irq_table.h"

#include <cerrno>

namespace aic100::vfio_user {

IrqTable::IrqTable(std::span<const uint32_t> counts)
{
	for (const uint32_t n : counts)
		fds_.emplace_back(n);
}

bool IrqTable::in_range(uint32_t index, uint32_t start, uint64_t count) const
{
	return index < fds_.size() && uint64_t{start} + count <= fds_[index].size();
}

int IrqTable::assign(uint32_t index, uint32_t start, std::vector<UniqueFd> &&fds)
{
	if (!in_range(index, start, fds.size()))
		return EINVAL;
	for (size_t i = 0; i < fds.size(); i++)
		fds_[index][start + i] = std::move(fds[i]);
	return 0;
}

int IrqTable::deassign(uint32_t index, uint32_t start, uint32_t count)
{
	if (!in_range(index, start, count))
		return EINVAL;
	for (uint32_t i = 0; i < count; i++)
		fds_[index][start + i].reset();
	return 0;
}

void IrqTable::disable(uint32_t index)
{
	if (index < fds_.size())
		for (UniqueFd &f : fds_[index])
			f.reset();
}

void IrqTable::clear()
{
	for (uint32_t i = 0; i < fds_.size(); i++)
		disable(i);
}

int IrqTable::fd(uint32_t index, uint32_t vector) const
{
	return in_range(index, vector, 1) ? fds_[index][vector].get() : -1;
}

uint32_t IrqTable::assigned(uint32_t index) const
{
	uint32_t n = 0;
	if (index < fds_.size())
		for (const UniqueFd &f : fds_[index])
			n += f.valid();
	return n;
}

uint32_t IrqTable::vectors(uint32_t index) const
{
	return index < fds_.size() ? static_cast<uint32_t>(fds_[index].size()) : 0;
}

}  // namespace aic100::vfio_user
