// SPDX-License-Identifier: GPL-2.0-or-later
#include "qpc_pipeline.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "metadata.h"

namespace qaic {

namespace q = aic100::qpc;

QpcPipeline::QpcPipeline(const Device &dev, const q::Program &p, unsigned depth)
	: dev_(dev), p_(p), depth_(depth ? depth : 1), nnc_(dev)
{
}

QpcPipeline::~QpcPipeline()
{
	slots_.clear(); // closing the BOs detaches their slices
	if (active_)
		nnc_.deactivate(act_.activation_id, act_.dbc_id);
	if (elf_id_)
		nnc_.unload_elf(elf_id_);
	if (constants_id_)
		nnc_.unload_constants(constants_id_);
}

std::string QpcPipeline::setup()
{
	const q::ConstantsDescriptor &cd = p_.constants_desc;
	if (cd.static_size + cd.dynamic_size) {
		const LoadResult c = nnc_.load_constants_ex(cd.static_size, cd.dynamic_size);
		if (!c.ok())
			return "LOAD_CONSTANTS_EX: " + c.describe();
		constants_id_ = c.id;
		if (!p_.static_constants.empty()) {
			const NncResult r = nnc_.load_constants_payload(c.id, 0, p_.static_constants);
			if (!r.ok())
				return "LOAD_CONSTANTS_PAYLOAD (static): " + r.describe();
		}
		if (!p_.dynamic_constants.empty()) {
			const NncResult r = nnc_.load_constants_payload(c.id, cd.static_size, p_.dynamic_constants);
			if (!r.ok())
				return "LOAD_CONSTANTS_PAYLOAD (dynamic): " + r.describe();
		}
	}
	const LoadResult l = nnc_.load_elf(p_.elf);
	if (!l.ok())
		return "LOAD_ELF: " + l.describe();
	elf_id_ = l.id;
	const auto &reqs = p_.metadata->dmaRequests;
	act_ = nnc_.activate(elf_id_, constants_id_, uint32_t(2 * depth_ * reqs.size() + 2));
	if (!act_.ok())
		return "ACTIVATE: " + act_.describe();
	active_ = true;

	for (const auto &r : reqs)
		if (std::none_of(order_.begin(), order_.end(), [&r](const Buffer &b) { return b.num == r->num; }))
			order_.push_back({r->num, r->inOut == q::kDmaIn, p_.desc.dma_buffers(int(r->num)).size()});
	for (unsigned s = 0; s < depth_; s++) {
		std::vector<Bo> bos;
		for (const Buffer &b : order_) {
			int err = 0;
			auto bo = Bo::create(dev_, b.size, &err);
			if (!bo)
				return "CREATE_BO: " + errno_name(-err);
			std::vector<qaic_attach_slice_entry> slices;
			for (const auto &r : reqs) {
				if (r->num != b.num)
					continue;
				qaic_attach_slice_entry e{};
				e.size = r->size;
				e.offset = r->hostOffset;
				e.dev_addr = act_.ddr_base + r->devOffset;
				qaic_sem *sems[] = {&e.sem0, &e.sem1, &e.sem2, &e.sem3};
				for (size_t k = 0; k < r->semaphoreOps.size() && k < q::kMaxSemaphoreOps; k++) {
					const auto &o = *r->semaphoreOps[k];
					*sems[k] = sem(o.semOp, uint8_t(o.semNum), o.semValue, o.preOrPost == q::kSemPre,
						       uint8_t((o.inSyncFence ? QAIC_SEM_INSYNCFENCE : 0) |
							       (o.outSyncFence ? QAIC_SEM_OUTSYNCFENCE : 0)));
				}
				slices.push_back(e);
			}
			if (int r = attach_slices(dev_, bo->handle(), act_.dbc_id, b.in ? kToDevice : kFromDevice, slices))
				return "ATTACH_SLICE_BO: " + errno_name(-r);
			bos.push_back(std::move(*bo));
		}
		slots_.push_back(std::move(bos));
	}
	return {};
}

RunResult QpcPipeline::run(uint64_t count, const std::function<std::vector<uint8_t>(uint64_t)> &make_input,
			   const std::function<std::string(uint64_t, std::span<const uint8_t>)> &check)
{
	RunResult res;
	const auto &d = p_.desc;
	auto slot_of_buffer = [this](uint32_t num) {
		return size_t(std::find_if(order_.begin(), order_.end(), [num](const Buffer &b) { return b.num == num; }) -
			      order_.begin());
	};
	const auto t0 = std::chrono::steady_clock::now();
	for (uint64_t i = 0; i < count + depth_; i++) {
		if (i >= depth_) {
			const uint64_t k = i - depth_;
			std::vector<Bo> &bos = slots_[k % depth_];
			std::vector<uint8_t> out;
			for (const auto &io : d.outputs()) {
				const Bo &bo = bos[slot_of_buffer(io.transformseq(0).copy_dma_buffer().buffer_num())];
				int r;
				uint32_t left = wait_ms_;
				do {
					const uint32_t ms = std::min<uint32_t>(left, 5000);
					r = wait(dev_, act_.dbc_id, bo.handle(), ms);
					left -= ms;
				} while (r == -ETIMEDOUT && left);
				if (r) {
					res.problem = "WAIT_BO of inference " + std::to_string(k) + ": " + errno_name(-r);
					res.error = r;
					break;
				}
				out.insert(out.end(), bo.data(), bo.data() + bo.size());
			}
			if (res.error)
				break;
			res.inferences++;
			if (const std::string why = check(k, out); !why.empty() && !res.mismatches++)
				res.first_mismatch = "inference " + std::to_string(k) + ": " + why;
		}
		if (i < count) {
			std::vector<Bo> &bos = slots_[i % depth_];
			const std::vector<uint8_t> input = make_input(i);
			size_t at = 0;
			for (const auto &io : d.inputs()) {
				const Bo &bo = bos[slot_of_buffer(io.transformseq(0).copy_dma_buffer().buffer_num())];
				if (at + bo.size() > input.size()) {
					res.problem = "the input of inference " + std::to_string(i) + " is too short";
					return res;
				}
				std::memcpy(bo.data(), input.data() + at, bo.size());
				at += bo.size();
			}
			std::vector<qaic_execute_entry> ents;
			for (size_t b = 0; b < order_.size(); b++)
				ents.push_back({bos[b].handle(), order_[b].in ? uint32_t(kToDevice) : uint32_t(kFromDevice)});
			const int r = execute_when_room(dev_, act_.dbc_id, ents, wait_ms_);
			if (r) {
				res.problem = "EXECUTE_BO of inference " + std::to_string(i) + ": " + errno_name(-r);
				res.error = r;
				break;
			}
		}
	}
	res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	return res;
}

} // namespace qaic
