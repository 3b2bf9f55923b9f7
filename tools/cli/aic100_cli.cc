// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-cli: asks an AIC100 card about itself and drives the NNC model
// lifecycle by hand, through libqaic.
//   aic100-cli [-d /dev/accel/accelN] status | resources [--group N] | perf
//   aic100-cli [-d /dev/accel/accelN] health  (sensors, RAS counts, DBC states)
//   aic100-cli [-d /dev/accel/accelN] inject COMMAND...  (virtual card's test mailbox)
//   aic100-cli [-d /dev/accel/accelN] shell   (commands on stdin, one a line)
// The shell keeps the device open: closing it makes the driver TERMINATE
// everything this user loaded or activated.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "mailbox.h"
#include "nnc_client.h"
#include "qaic.h"

namespace {

using qaic::cmd::StatusResp;

void usage(FILE *f)
{
	std::fprintf(f, "Usage: aic100-cli [-d /dev/accel/accelN] status | resources [--group N] | perf | health | shell\n"
			"\n"
			"status, resources, perf: ask the card once and print the answer.\n"
			"health: temperatures, power and its limit (hwmon), NSP counters, RAS error\n"
			"  counts and the state of each DBC, from the driver's sysfs files.\n"
			"inject COMMAND...: a fault through the virtual card's test mailbox\n"
			"  (-device aic100,test-mailbox=on), e.g. inject crash dbc=0 reason=demo;\n"
			"  inject ras ce source=ddr; inject sensor soc_temp=97000 (docs/health.md).\n"
			"shell: read commands from stdin, one a line, with the device kept open:\n"
			"  load-elf FILE                  load-constants FILE\n"
			"  activate ELF_ID [CONST_ID] [QUEUE]\n"
			"  deactivate ACT_ID DBC          unload-elf ID       unload-constants ID\n"
			"  create-group NSP VC SEM MEM_MB release-group ID\n"
			"  status    resources [GROUP]    perf                quit\n"
			"Each command prints 'ok ...' or 'error ...'. Closing the device (quit,\n"
			"end of input) releases everything loaded or activated through it.\n"
			"Without -d, the first AIC100 card's node is used.\n");
}

// A fixed-size string field, up to its first NUL.
template <size_t N> std::string_view field(const char (&s)[N])
{
	return std::string_view(s, strnlen(s, N));
}

void print_resources(const qaic::cmd::ResourceInfo &r)
{
	std::printf("DDR               %u MiB free of %u MiB (fragmentation %u)\n", r.dram_free_mb, r.dram_total_mb,
		    r.fragmentation_status);
	std::printf("virtual channels  %u free of %u\n", r.vc_free, r.vc_total);
	std::printf("NSPs              %u free of %u\n", r.nsp_free, r.nsp_total);
	std::printf("MCIDs             %u free of %u\n", r.mcid_free, r.mcid_total);
	std::printf("semaphores        %u free of %u\n", r.sem_free, r.sem_total);
	std::printf("PCs               %u reserved of %u\n", r.pc_reserved, r.pc_total);
}

void print_perf(const qaic::cmd::PerfInfo &p)
{
	std::printf("NSP clock         %.0f MHz\n", p.nsp_frequency_hz / 1e6);
	std::printf("DDR clock         %.0f MHz\n", p.ddr_frequency_hz / 1e6);
	std::printf("compute clock     %.0f MHz\n", p.comp_frequency_hz / 1e6);
	std::printf("memory clock      %.0f MHz\n", p.mem_frequency_hz / 1e6);
	std::printf("system clock      %.0f MHz\n", p.sys_frequency_hz / 1e6);
	std::printf("peak compute      %" PRIu64 " ops/s (%.0f TOPS)\n", p.peak_compute, p.peak_compute / 1e12);
	std::printf("DDR bandwidth     %" PRIu64 " KB/s (%.0f GB/s)\n", p.dram_bw_kbps, p.dram_bw_kbps / 1e6);
}

void print_status(const StatusResp &s)
{
	const auto &d = s.dev;
	auto version = [](const uint8_t *v) {
		char b[32];
		if (v[3] == 255) // build hidden
			std::snprintf(b, sizeof(b), "%u.%u.%u", v[0], v[1], v[2]);
		else
			std::snprintf(b, sizeof(b), "%u.%u.%u.%u", v[0], v[1], v[2], v[3]);
		return std::string(b);
	};
	std::printf("firmware          %s  %.*s / %.*s / %.*s\n", version(d.fw_version).c_str(),
		    (int)field(d.fw_qc_image_version).size(), d.fw_qc_image_version,
		    (int)field(d.fw_oem_image_version).size(), d.fw_oem_image_version,
		    (int)field(d.fw_image_variant).size(), d.fw_image_variant);
	std::printf("NSP firmware      %s  %.*s / %.*s / %.*s\n", version(s.nsp.version).c_str(),
		    (int)field(s.nsp.qc_image_version).size(), s.nsp.qc_image_version,
		    (int)field(s.nsp.oem_image_version).size(), s.nsp.oem_image_version,
		    (int)field(s.nsp.image_variant).size(), s.nsp.image_variant);
	std::printf("SBL image         %.*s\n", (int)field(d.sbl_image_name).size(), d.sbl_image_name);
	std::printf("NNC protocol      %u.%u (metadata %u.%u, status format %u)\n", d.nnc_major, d.nnc_minor,
		    d.meta_ver_major, d.meta_ver_minor, s.format_version);
	const uint32_t hw = d.hw_version;
	std::printf("hardware          %u.%u.%u.%u (0x%08x)\n", hw >> 28, (hw >> 16) & 0xfff, (hw >> 8) & 0xff, hw & 0xff,
		    hw);
	std::printf("serial            %.*s (board %.*s)\n", (int)field(d.serial).size(), d.serial,
		    (int)field(d.board_serial).size(), d.board_serial);
	std::printf("SKU               %u (%s)\n", d.sku_type, qaic::sku_name(d.sku_type));
	std::printf("defective NSPs    mask 0x%" PRIx64 " (power-gated)\n", d.nsp_pgmask);
	std::printf("networks          %u loaded, %u active\n", d.num_loaded_nws, d.num_active_nws);
	std::printf("constants         %u loaded, %u in use\n", d.num_loaded_consts, d.num_consts_in_use);
	std::printf("host time offset  %" PRIu64 " us\n", d.qts_time_offset_usecs);
	std::printf("retired pages     %u%s\n", d.num_retired_pages,
		    d.need_reset_to_retire_pages ? " (reset needed to retire more)" : "");
	print_resources(d.resource_info);
	print_perf(d.perf_info);
}

bool read_file(const std::string &path, std::vector<uint8_t> &out, std::string &why)
{
	std::ifstream f(path, std::ios::binary);
	if (!f) {
		why = path + ": " + std::strerror(errno);
		return false;
	}
	out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
	return true;
}

// Numbers in any base strtoul takes; false if the word is not one.
bool number(const std::string &w, uint64_t &v)
{
	if (w.empty())
		return false;
	char *end = nullptr;
	errno = 0;
	v = std::strtoull(w.c_str(), &end, 0);
	return !errno && end && *end == '\0' && w[0] != '-';
}

class Shell {
public:
	explicit Shell(const qaic::Device &dev) : nnc_(dev) {}

	// Runs one command line; false on quit.
	bool run(const std::string &line)
	{
		std::istringstream in(line);
		std::vector<std::string> w;
		for (std::string s; in >> s;)
			w.push_back(s);
		if (w.empty() || w[0][0] == '#')
			return true;
		std::vector<uint64_t> n;
		for (size_t i = 1; i < w.size(); i++) {
			uint64_t v;
			if (w[0] != "load-elf" && w[0] != "load-constants" && !number(w[i], v))
				return say("error bad number '" + w[i] + "'");
			n.push_back(number(w[i], v) ? v : 0);
		}
		const std::string &c = w[0];
		auto args = [&](size_t lo, size_t hi) { return n.size() >= lo && n.size() <= hi; };
		if (c == "quit" || c == "exit")
			return false;
		if (c == "help")
			return usage(stdout), true;
		if (c == "status" && args(0, 0)) {
			auto r = nnc_.status();
			if (r.ok())
				print_status(r.resp);
			return say(r.describe());
		}
		if (c == "resources" && args(0, 1)) {
			auto r = nnc_.resource_info(n.empty() ? -1 : static_cast<int32_t>(n[0]));
			if (r.ok())
				print_resources(r.resp.info);
			return say(r.describe());
		}
		if (c == "perf" && args(0, 0)) {
			auto r = nnc_.performance_info();
			if (r.ok())
				print_perf(r.resp.info);
			return say(r.describe());
		}
		if ((c == "load-elf" || c == "load-constants") && w.size() == 2) {
			std::vector<uint8_t> data;
			std::string why;
			if (!read_file(w[1], data, why))
				return say("error " + why);
			const bool elf = c == "load-elf";
			auto r = elf ? nnc_.load_elf(data) : nnc_.load_constants(data);
			return say(r, std::string(elf ? "elf_id=" : "constants_id=") + std::to_string(r.id));
		}
		if (c == "activate" && args(1, 3)) {
			auto r = nnc_.activate(static_cast<uint32_t>(n[0]), n.size() > 1 ? static_cast<uint32_t>(n[1]) : 0,
					       n.size() > 2 ? static_cast<uint32_t>(n[2]) : 512);
			char b[160];
			std::snprintf(b, sizeof(b), "activation_id=%u dbc=%u ddr_base=0x%" PRIx64 " nsp_mask=0x%x",
				      r.activation_id, r.dbc_id, r.ddr_base, r.resp.nsp_mask);
			return say(r, b);
		}
		if (c == "deactivate" && args(2, 2))
			return say(nnc_.deactivate(static_cast<uint32_t>(n[0]), static_cast<uint32_t>(n[1])));
		if (c == "unload-elf" && args(1, 1))
			return say(nnc_.unload_elf(static_cast<uint32_t>(n[0])));
		if (c == "unload-constants" && args(1, 1))
			return say(nnc_.unload_constants(static_cast<uint32_t>(n[0])));
		if (c == "create-group" && args(4, 4)) {
			qaic::GroupSpec g;
			g.nsp = static_cast<uint32_t>(n[0]);
			g.vc = static_cast<uint32_t>(n[1]);
			g.mcid = g.vc; // an activation takes one MCID with its VC
			g.sem = static_cast<uint32_t>(n[2]);
			g.mem = n[3] << 20;
			auto r = nnc_.create_resource_group(g);
			return say(r, "group=" + std::to_string(r.id));
		}
		if (c == "release-group" && args(1, 1))
			return say(nnc_.release_resource_group(static_cast<int32_t>(n[0])));
		return say("error unknown command or wrong arguments: '" + line + "' (try help)");
	}

private:
	static bool say(const std::string &s)
	{
		std::printf("%s\n", s.c_str());
		std::fflush(stdout);
		return true;
	}
	static bool say(const qaic::NncResult &r, const std::string &what = {})
	{
		return say(r.ok() && !what.empty() ? "ok " + what : r.describe());
	}

	qaic::Nnc nnc_;
};

// Prints what the driver exposes about the card's health (docs/health.md).
// Reads sysfs only: it works while the card recovers, too.
int health(const qaic::Card &card)
{
	auto show = [](const char *label, const std::string &path, double scale, const char *unit) {
		const std::string v = qaic::read_attr(path);
		if (v.empty())
			std::printf("%-22s -\n", label);
		else if (scale == 1)
			std::printf("%-22s %s%s\n", label, v.c_str(), unit);
		else
			std::printf("%-22s %.1f %s\n", label, std::strtod(v.c_str(), nullptr) / scale, unit);
	};
	std::string hwmon;
	for (int i = 0; i < 64 && hwmon.empty(); i++) {
		const std::string dir = card.sysfs + "/hwmon/hwmon" + std::to_string(i);
		if (qaic::read_attr(dir + "/name") == "qaic")
			hwmon = dir;
	}
	std::printf("card                   %s\n", card.bdf.c_str());
	if (hwmon.empty()) {
		std::printf("hwmon                  - (no telemetry: driver without it, or card not ONLINE)\n");
	} else {
		show("SoC temperature", hwmon + "/temp2_input", 1000, "°C");
		show("SoC highest", hwmon + "/temp2_highest", 1000, "°C");
		show("board temperature", hwmon + "/temp1_input", 1000, "°C");
		show("DDR temperature", hwmon + "/temp3_input", 1000, "°C");
		show("board power", hwmon + "/power1_input", 1e6, "W");
		show("power limit", hwmon + "/power1_max", 1e6, "W");
	}
	const std::string t = card.sysfs + "/telemetry/";
	show("NSP busy", t + "nsp_busy_ns", 1e9, "s");
	show("inferences", t + "nsp_inferences", 1, "");
	show("workload crashes", t + "nsp_faults", 1, "");
	show("throttling", t + "throttle_percent", 1, " %");
	show("RAS correctable", card.sysfs + "/ce_count", 1, "");
	show("RAS uncorrectable", card.sysfs + "/ue_count", 1, "");
	show("RAS non-fatal UE", card.sysfs + "/ue_nonfatal_count", 1, "");
	if (card.accel_minor) {
		static const char *const names[] = {"idle", "assigned", "before shutdown", "after shutdown",
						    "before power-up", "after power-up"};
		const std::string accel = "/sys/class/accel/accel" + std::to_string(*card.accel_minor);
		for (int d = 0; d < 16; d++) {
			const std::string v = qaic::read_attr(accel + "/dbc" + std::to_string(d) + "_state");
			if (v.empty())
				continue;
			const long st = std::strtol(v.c_str(), nullptr, 10);
			if (st)
				std::printf("DBC %-2d                 %s\n", d, st >= 0 && st < 6 ? names[st] : v.c_str());
		}
	}
	return 0;
}

// The command line: the card's node (-d), then the command and its words.
struct Invocation {
	std::string node;
	std::vector<std::string> args;
	const qaic::Device *dev = nullptr; // open for the commands on the device
};

// The card named by the node.
const qaic::Card *card_of(const std::vector<qaic::Card> &cards, const std::string &node)
{
	for (const auto &c : cards)
		if (c.accel_minor && c.accel_node() == node)
			return &c;
	return nullptr;
}

int not_a_card(const std::string &node)
{
	std::fprintf(stderr, "aic100-cli: %s is not an AIC100 card's node\n", node.c_str());
	return 1;
}

// 0 when the card answered, 1 (with its answer on stderr) when not.
int answered(const qaic::NncResult &r)
{
	if (!r.ok()) {
		std::fprintf(stderr, "aic100-cli: %s\n", r.describe().c_str());
		return 1;
	}
	return 0;
}

// inject COMMAND...
int inject(const Invocation &in)
{
	std::string command;
	for (size_t i = 1; i < in.args.size(); i++)
		command += (i > 1 ? " " : "") + in.args[i];
	const auto cards = qaic::find_cards();
	const qaic::Card *c = card_of(cards, in.node);
	if (!c)
		return not_a_card(in.node);
	qaic::Mailbox mb(c->bdf);
	const std::string err = mb.run(command);
	if (!err.empty()) {
		std::fprintf(stderr, "aic100-cli: %s: %s\n", command.c_str(), err.c_str());
		return 1;
	}
	std::printf("ok %s\n", command.c_str());
	return 0;
}

int health_of(const Invocation &in)
{
	const auto cards = qaic::find_cards();
	const qaic::Card *c = card_of(cards, in.node);
	return c ? health(*c) : not_a_card(in.node);
}

int status(const Invocation &in)
{
	qaic::Nnc nnc(*in.dev);
	auto r = nnc.status();
	if (r.ok()) {
		std::printf("card              %s\n", in.node.c_str());
		print_status(r.resp);
	}
	return answered(r);
}

// resources [--group N]
int resources(const Invocation &in)
{
	uint64_t g = 0;
	if (in.args.size() == 3 && !number(in.args[2], g)) {
		std::fprintf(stderr, "aic100-cli: bad group '%s'\n", in.args[2].c_str());
		return 2;
	}
	qaic::Nnc nnc(*in.dev);
	auto r = nnc.resource_info(in.args.size() == 3 ? static_cast<int32_t>(g) : -1);
	if (r.ok())
		print_resources(r.resp.info);
	return answered(r);
}

int perf(const Invocation &in)
{
	qaic::Nnc nnc(*in.dev);
	auto r = nnc.performance_info();
	if (r.ok())
		print_perf(r.resp.info);
	return answered(r);
}

int shell(const Invocation &in)
{
	Shell sh(*in.dev);
	const bool tty = isatty(STDIN_FILENO);
	std::string line;
	while (true) {
		if (tty) {
			std::printf("aic100> ");
			std::fflush(stdout);
		}
		if (!std::getline(std::cin, line) || !sh.run(line))
			break;
	}
	return 0;
}

bool alone(const std::vector<std::string> &args)
{
	return args.size() == 1;
}

const struct Command {
	const char *name;
	bool (*takes)(const std::vector<std::string> &args); // the words it takes
	bool on_device;                                      // needs the device open
	int (*run)(const Invocation &);
} kCommands[] = {
	{"inject", [](const std::vector<std::string> &a) { return a.size() > 1; }, false, inject},
	{"health", alone, false, health_of},
	{"status", alone, true, status},
	{"resources", [](const std::vector<std::string> &a) { return alone(a) || (a.size() == 3 && a[1] == "--group"); },
	 true, resources},
	{"perf", alone, true, perf},
	{"shell", alone, true, shell},
};

// -d NODE and -h out of the arguments; an exit status when that is all.
std::optional<int> parse_args(int argc, char **argv, Invocation &in)
{
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if ((a == "-d" || a == "--device") && i + 1 < argc) {
			in.node = argv[++i];
		} else if (a == "-h" || a == "--help") {
			usage(stdout);
			return 0;
		} else {
			in.args.push_back(a);
		}
	}
	if (in.args.empty()) {
		usage(stderr);
		return 2;
	}
	return std::nullopt;
}

// The first AIC100 card's node, or "".
std::string first_card_node()
{
	for (const auto &c : qaic::find_cards())
		if (c.accel_minor)
			return c.accel_node();
	return {};
}

} // namespace

int main(int argc, char **argv)
{
	Invocation in;
	if (const auto rc = parse_args(argc, argv, in))
		return *rc;
	if (in.node.empty() && (in.node = first_card_node()).empty()) {
		std::fprintf(stderr, "aic100-cli: no AIC100 card with an accel node\n");
		return 1;
	}
	const Command *cmd = nullptr;
	for (const Command &c : kCommands)
		if (in.args[0] == c.name && c.takes(in.args))
			cmd = &c;
	if (cmd && !cmd->on_device)
		return cmd->run(in);
	int err = 0;
	auto dev = qaic::Device::open(in.node, &err);
	if (!dev) {
		std::fprintf(stderr, "aic100-cli: %s: %s%s\n", in.node.c_str(), std::strerror(err),
			     err == ENODEV ? " (the card is not ONLINE)" : "");
		return 1;
	}
	if (!cmd) {
		usage(stderr);
		return 2;
	}
	in.dev = &*dev;
	return cmd->run(in);
}
