// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-vfio-user's command line: the socket, the family, and the
// properties of -device aic100 that mean something outside QEMU
// (docs/device.md). worker-thread and dbc-lockless do not: the server is
// one thread of its own, with no BQL to avoid.
#pragma once

#include <string>
#include <vector>

#include "aic100/device.h"

namespace aic100::vfio_user {

struct ServerOptions {
	std::string socket_path;
	DeviceConfig card;
	std::string user;     // --user: who the server becomes once listening
	bool sandbox = true;  // --sandbox: the seccomp allow-list (sandbox.h)
	bool qemu10_dma_layout = false;  // --dma-layout qemu-10: QEMU 10.x's DMA_READ/WRITE
	bool help = false;
};

// Fills `out` from argv (without the program name); false with a one-line
// reason in `error` (no program name, no newline) on a bad or missing
// option or a configuration the core refuses.
bool parse_options(const std::vector<std::string> &args, ServerOptions &out, std::string &error);

extern const char *const kUsage;

}  // namespace aic100::vfio_user
