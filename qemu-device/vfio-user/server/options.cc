// SPDX-License-Identifier: GPL-2.0-or-later
#include "options.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <utility>

namespace aic100::vfio_user {

const char *const kUsage =
	"usage: aic100-vfio-user --socket PATH [--family aic100|aic200] [--device-id ID] [--nsps N]\n"
	"         [--ddr-size SIZE] [--bar4-size SIZE] [--serial N] [--boot full|amss] [--crc on|off]\n"
	"         [--test-mailbox on|off] [--soc-temp MC] [--board-temp MC] [--ddr-temp MC] [--board-power UW]\n"
	"         [--user NAME] [--sandbox on|off] [--dma-layout spec|qemu-10]\n"
	"The card behind a vfio-user socket, for QEMU's -device vfio-user-pci,socket=PATH.\n"
	"The properties are -device aic100's (docs/device.md); SIZE takes K, M, G suffixes.\n"
	"Once listening, the server becomes --user NAME and, unless --sandbox off, confines\n"
	"itself to the system calls it needs (docs/vfio-user.md, \"Isolation\").\n"
	"--dma-layout: DMA_READ/DMA_WRITE as the protocol's spec lays them out (the default;\n"
	"QEMU 11.1 reads them so), or with QEMU 10.x's 4-byte count (docs/vfio-user.md).\n";

namespace {

std::optional<int64_t> parse_int(const std::string &s)
{
	if (s.empty())
		return std::nullopt;
	errno = 0;
	char *end = nullptr;
	const long long v = std::strtoll(s.c_str(), &end, 0);
	if (errno || *end)
		return std::nullopt;
	return v;
}

// A byte count as QEMU's size properties take it: 64K, 2M, 16G.
std::optional<uint64_t> parse_size(const std::string &s)
{
	if (s.empty() || s[0] == '-')
		return std::nullopt;
	errno = 0;
	char *end = nullptr;
	const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
	static const std::map<std::string, unsigned> shifts = {{"", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}};
	const auto it = shifts.find(end);
	if (errno || end == s.c_str() || it == shifts.end() || (it->second && v > (UINT64_MAX >> it->second)))
		return std::nullopt;
	return static_cast<uint64_t>(v) << it->second;
}

std::optional<bool> parse_bool(const std::string &s)
{
	if (s == "on" || s == "true" || s == "yes")
		return true;
	if (s == "off" || s == "false" || s == "no")
		return false;
	return std::nullopt;
}

// A serial distinct per socket and stable for it, as the glue derives one
// from the card's QOM path.
uint32_t derived_serial(const std::string &path)
{
	uint32_t h = 2166136261u;  // FNV-1a
	for (const unsigned char c : path)
		h = (h ^ c) * 16777619u;
	return 0xA1000000u | (h & 0x00FFFFFFu);
}

using Setter = std::function<bool(const std::string &, ServerOptions &)>;

template <class T, class Parse> Setter number(T DeviceConfig::*field, Parse parse)
{
	return [field, parse](const std::string &v, ServerOptions &o) {
		const auto n = parse(v);
		if (!n || !std::in_range<T>(*n))
			return false;
		o.card.*field = static_cast<T>(*n);
		return true;
	};
}

// A field of the card's (DeviceConfig) or of the server's own options.
DeviceConfig &owner(ServerOptions &o, DeviceConfig *) { return o.card; }
ServerOptions &owner(ServerOptions &o, ServerOptions *) { return o; }

template <class Owner> Setter flag(bool Owner::*field)
{
	return [field](const std::string &v, ServerOptions &o) {
		const auto b = parse_bool(v);
		if (b)
			owner(o, static_cast<Owner *>(nullptr)).*field = *b;
		return b.has_value();
	};
}

// Any text but the empty one.
Setter text(std::string ServerOptions::*field)
{
	return [field](const std::string &v, ServerOptions &o) {
		o.*field = v;
		return !v.empty();
	};
}

const std::map<std::string, Setter> &setters()
{
	static const std::map<std::string, Setter> table = {
		{"socket", text(&ServerOptions::socket_path)},
		{"family",
		 [](const std::string &v, ServerOptions &o) {
			 o.card.family = v == "aic200" ? Family::Aic200 : Family::Aic100;
			 return v == "aic100" || v == "aic200";
		 }},
		{"device-id", number(&DeviceConfig::device_id, parse_int)},
		{"nsps", number(&DeviceConfig::nsp_count, parse_int)},
		{"ddr-size", number(&DeviceConfig::ddr_size, parse_size)},
		{"bar4-size", number(&DeviceConfig::bar4_size, parse_size)},
		{"serial", number(&DeviceConfig::serial_number, parse_int)},
		{"boot",
		 [](const std::string &v, ServerOptions &o) {
			 o.card.boot_amss = v == "amss";
			 return v == "full" || v == "amss";
		 }},
		{"crc", flag(&DeviceConfig::nnc_crc)},
		{"test-mailbox", flag(&DeviceConfig::test_mailbox)},
		{"soc-temp", number(&DeviceConfig::soc_temp_mc, parse_int)},
		{"board-temp", number(&DeviceConfig::board_temp_mc, parse_int)},
		{"ddr-temp", number(&DeviceConfig::ddr_temp_mc, parse_int)},
		{"board-power", number(&DeviceConfig::board_power_uw, parse_int)},
		{"user", text(&ServerOptions::user)},
		{"dma-layout",
		 [](const std::string &v, ServerOptions &o) {
			 o.qemu10_dma_layout = v == "qemu-10";
			 return v == "spec" || v == "qemu-10";
		 }},
		{"sandbox", flag(&ServerOptions::sandbox)},
	};
	return table;
}

}  // namespace

// --name VALUE or --name=VALUE. The device id follows the family unless
// given; the serial follows the socket path unless given.
bool parse_options(const std::vector<std::string> &args, ServerOptions &out, std::string &error)
{
	out = ServerOptions{};
	out.card.serial_number = 0;
	bool device_id_set = false;
	for (size_t i = 0; i < args.size(); i++) {
		const std::string &a = args[i];
		if (a == "--help" || a == "-h") {
			out.help = true;
			return true;
		}
		const size_t eq = a.find('=');
		const std::string name = a.rfind("--", 0) == 0 ? a.substr(2, eq == std::string::npos ? eq : eq - 2) : "";
		const auto it = setters().find(name);
		if (it == setters().end()) {
			error = "unknown option '" + a + "' (--help lists them)";
			return false;
		}
		std::string value;
		if (eq != std::string::npos)
			value = a.substr(eq + 1);
		else if (i + 1 < args.size())
			value = args[++i];
		else {
			error = "--" + name + " needs a value";
			return false;
		}
		if (!it->second(value, out)) {
			error = "--" + name + ": bad value '" + value + "'";
			return false;
		}
		device_id_set |= name == "device-id";
	}
	if (out.socket_path.empty()) {
		error = "--socket PATH is required";
		return false;
	}
	if (!device_id_set)
		out.card.device_id = family_config(out.card.family).device_id;
	if (!out.card.serial_number)
		out.card.serial_number = derived_serial(out.socket_path);
	error = out.card.validate();
	return error.empty();
}

}  // namespace aic100::vfio_user
