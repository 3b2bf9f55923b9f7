// SPDX-License-Identifier: GPL-2.0-or-later
// Writes the vfio-user protocol fuzzer's seeds (fuzz_input.h): what QEMU's
// client sends to bring a device up and use it, and a few of each kind of
// malformed message, so the fuzzer starts past negotiation and near every
// check.
//
//   aic100-vfio-user-fuzz-seeds --out DIR     write the seeds into DIR
//   aic100-vfio-user-fuzz-seeds --check DIR   fail unless DIR holds exactly them
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "messages.h"

namespace aic100::vfio_user::fuzz {
namespace {

using test::message;
using Bytes = std::vector<uint8_t>;

// QEMU's bring-up: VERSION, DMA maps of guest RAM (with an fd) and a ROM
// (without), device, region and IRQ info, config space, MSI on with 32
// eventfds in two messages, BAR accesses, a reset, the section unmap.
Bytes qemu_bringup()
{
	Bytes in{kCfgMmapBar2};
	put_message(in, test::version_message(test::kQemuCaps));
	put_message(in, test::dma_map_message(0x0, 0x80000000), 1);
	put_message(in, test::dma_map_message(0xfffc0000, 0x40000, kDmaRead));
	put_message(in, message(Command::DeviceGetInfo, test::bytes_of(DeviceInfo{16, 0, 0, 0})));
	for (uint32_t i = 0; i < kPciRegions; i++)
		put_message(in, message(Command::GetRegionInfo, test::bytes_of(RegionInfo{32, 0, i, 0, 0, 0})));
	put_message(in, message(Command::GetRegionInfo, test::bytes_of(RegionInfo{80, 0, 2, 0, 0, 0})));
	for (uint32_t i = 0; i < kPciIrqs; i++)
		put_message(in, message(Command::GetIrqInfo, test::bytes_of(IrqInfo{16, 0, i, 0})));
	put_message(in, test::region_read_message(kConfigRegion, 0, 256));
	put_message(in, test::region_write_message(kConfigRegion, 4, {0x06, 0x04}));
	const uint32_t efd = kIrqDataEventfd | kIrqActionTrigger;
	put_message(in, test::set_irqs_message(efd, kMsiIrq, 0, 16), 16);
	put_message(in, test::set_irqs_message(efd, kMsiIrq, 16, 16), 16);
	put_message(in, test::region_write_message(0, 0x38, {1, 0, 0, 0}, kNoReply));
	put_message(in, test::region_read_message(2, 0x1000, 8));
	put_message(in, message(Command::DeviceReset, {}));
	put_message(in, test::set_irqs_message(kIrqDataNone | kIrqActionTrigger, kMsiIrq, 0, 0));
	put_message(in, test::dma_unmap_message(0, 0, kUnmapAll));
	in.push_back(kOpDisconnect);
	return in;
}

// One malformed form of each command after negotiation.
Bytes malformed()
{
	Bytes in{kCfgNegotiate};
	put_message(in, test::dma_map_message(0x1000, 0x1800));
	put_message(in, test::dma_map_message(0x1000, 0x1000, 0x10), 2);
	put_message(in, test::dma_unmap_message(0x1000, 0x1000, kUnmapDirtyBitmap));
	put_message(in, message(Command::GetRegionInfo, test::bytes_of(RegionInfo{8, 0, 0, 0, 0, 0})));
	put_message(in, test::set_irqs_message(kIrqDataEventfd | kIrqDataBool | kIrqActionTrigger, kMsiIrq, 0, 2), 2);
	put_message(in, test::set_irqs_message(kIrqDataBool | kIrqActionTrigger, kMsiIrq, 0, 4, {1}));
	put_message(in, test::region_read_message(0, UINT64_MAX - 1, 4));
	put_message(in, test::region_write_message(0, 0x3ffe, {1, 2, 3, 4}));
	put_message(in, message(Command::DeviceReset, {}, 1, 0x40), 1);
	put_message(in, message(static_cast<Command>(6), {}));
	put_message(in, test::version_message("{\"capabilities\":{\"max_msg_fds\":\"x\"}}"));
	return in;
}

Bytes write_multi()
{
	Bytes in{kCfgNegotiate | kCfgWriteMultiple};
	std::vector<WriteMultiEntry> entries;
	for (uint32_t i = 0; i < 4; i++)
		entries.push_back(test::write_entry(i % 2 ? 2 : 0, 8 * i, 8, static_cast<uint8_t>(i)));
	put_message(in, test::write_multi_message(entries, entries.size()));
	return in;
}

// Replies to the server's DMA messages in both layouts, and lookups.
Bytes dma_messages()
{
	Bytes in{kCfgNegotiate};
	put_message(in, test::dma_map_message(0x10000, 0x10000));
	for (const uint8_t op : {uint8_t(kOpDmaReply), uint8_t(kOpDmaReply | kOpQemuLayout),
				 uint8_t(kOpDmaReply | kOpDmaWrite | kOpQemuLayout)}) {
		in.push_back(op);
		in.push_back(8);
		put(in, 0x10000, 8);
		put(in, 5, 2);
		Bytes reply;
		append(reply, Header{5, static_cast<uint16_t>((op & kOpDmaWrite) ? Command::DmaWrite : Command::DmaRead),
				     static_cast<uint32_t>((op & kOpDmaWrite) ? 16 : 40), kTypeReply, 0});
		if (!(op & kOpDmaWrite)) {
			put(reply, 0x10000, 8);
			put(reply, 8, (op & kOpQemuLayout) ? 4 : 8);
			reply.resize(40, 0xab);
		}
		put(in, reply.size(), 2);
		in.insert(in.end(), reply.begin(), reply.end());
	}
	in.push_back(kOpDmaFind | kOpDmaWrite);
	put(in, 0x1fff8, 8);
	put(in, 64, 2);
	return in;
}

int write_or_check(const std::filesystem::path &dir, bool check)
{
	const std::map<std::string, Bytes> seeds = {
		{"qemu-bringup", qemu_bringup()},
		{"malformed", malformed()},
		{"write-multi", write_multi()},
		{"dma-messages", dma_messages()},
	};
	int bad = 0;
	for (const auto &[name, bytes] : seeds) {
		const auto file = dir / name;
		if (check) {
			std::ifstream in(file, std::ios::binary);
			const Bytes now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
			if (now != bytes) {
				std::fprintf(stderr, "%s differs from what the generator makes now: rewrite it with --out\n",
					     file.c_str());
				bad++;
			}
			continue;
		}
		std::filesystem::create_directories(dir);
		std::ofstream(file, std::ios::binary | std::ios::trunc)
			.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
	}
	if (check)
		for (const auto &e : std::filesystem::directory_iterator(dir))
			if (!seeds.count(e.path().filename().string())) {
				std::fprintf(stderr, "%s is no seed the generator makes\n", e.path().c_str());
				bad++;
			}
	return bad ? 1 : 0;
}

}  // namespace
}  // namespace aic100::vfio_user::fuzz

int main(int argc, char **argv)
{
	if (argc != 3 || (std::strcmp(argv[1], "--out") && std::strcmp(argv[1], "--check"))) {
		std::fprintf(stderr, "usage: %s --out DIR | --check DIR\n", argv[0]);
		return 2;
	}
	return aic100::vfio_user::fuzz::write_or_check(argv[2], std::strcmp(argv[1], "--check") == 0);
}
