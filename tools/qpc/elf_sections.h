// SPDX-License-Identifier: GPL-2.0-or-later
// Named sections of an ELF64 little-endian file: find one, or add one
// (how the network ELF of a program container gets its "metadata").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace aic100::qpc {

// The contents of section `name`; nullopt with the reason in `err` when the
// file is not a sound ELF64 LE or has no (or two) such sections.
std::optional<std::span<const uint8_t>> find_section(std::span<const uint8_t> elf, const std::string &name,
						     std::string &err);

// A copy of `elf` with a new non-allocated PROGBITS section `name` holding
// `data` (8-byte aligned), a section name table that names it, and the
// section header table moved to the end. Program headers and every other
// section keep their offsets. Refuses a name that is already there.
std::optional<std::vector<uint8_t>> add_section(std::span<const uint8_t> elf, const std::string &name,
						std::span<const uint8_t> data, std::string &err);

} // namespace aic100::qpc
