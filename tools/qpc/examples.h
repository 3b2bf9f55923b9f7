// SPDX-License-Identifier: GPL-2.0-or-later
// The example workloads (tools/workloads) as program containers: their
// inputs and outputs as named, typed tensors, and their weights moved from
// the ELF's data segments into constants.bin.
#pragma once

#include <optional>
#include <string>

#include "program.h"
#include "workloads.h"

namespace aic100::qpc {

// The ProgramSpec of an example: its ELF assembled anew with const_offset
// at its first weights buffer and without the weights' data segments,
// which become the constants (the gaps between weights buffers zero).
std::optional<ProgramSpec> example_spec(const workloads::Example &e, std::string &err);

// The directory the open UMD's API tests read a program from, relative to
// /opt/qti-aic/test-data, for the examples that stand in for one of them;
// empty for the others.
std::string umd_test_dir(const std::string &example);

} // namespace aic100::qpc
