// SPDX-License-Identifier: GPL-2.0-or-later
// A card's own DMA aimed where no host would aim it (issue 22): at the
// Bridge Control register of the card's root port through ECAM, setting
// Secondary Bus Reset (QEMU resets the card from inside the card's own work
// pass), and at the other card's BARs. QEMU, the guest and the other card
// must survive; the card ends the transfer with an error or recovers, and
// after the guest has cleared SBR and re-enumerated the card, it works again.
// The qtest (qemu-device/tests/qtest/aic100-test.c: dma-into-root-port-sbr,
// dma-into-another-card) has the same scenarios without a guest.
//
// The DMA is the card's loopback echo (QAIC_LOOPBACK): the test module
// tests/guest/kmod/qaic_dma_aim.ko replaces the bus address of the next
// receive buffer of the chosen length, and the card writes what it was sent
// there. Our driver posts the buffers (debugfs "loopback"); upstream's binds
// no loopback client, so the module's own does (client=1, --upstream).
//
// Usage: qaic-hostile-dma-tests --gate MODULE [--card N] [--upstream 7.3]
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "driver_under_test.h"
#include "guest_util.h"
#include "ktap.h"
#include "nnc_client.h"
#include "qaic.h"

namespace {

using namespace guest_util;
namespace fs = std::filesystem;

constexpr const char *kParams = "/sys/module/qaic_dma_aim/parameters/";
constexpr unsigned kBridgeControl = 0x3e;
constexpr uint16_t kSecondaryBusReset = 0x40;
constexpr uint64_t kMhiVer = 0x08; // BAR0: read-only
constexpr const char *kLoadedMark = "hostile DMA: loading qaic_dma_aim";

struct Options {
	std::string gate;
	unsigned card = 0;
	DriverUnderTest driver = DriverUnderTest::Ours;
	bool ours() const { return driver == DriverUnderTest::Ours; }
};

std::string param(const std::string &name)
{
	return qaic::read_attr(kParams + name);
}

long counter(const std::string &name)
{
	return std::strtol(param(name).c_str(), nullptr, 0);
}

bool set_param(const std::string &name, const std::string &value)
{
	return spit(kParams + name, value);
}

// The PCI address of the bridge above a device: its parent in sysfs.
std::string root_port_of(const qaic::Card &c)
{
	std::error_code ec;
	return fs::canonical(c.sysfs, ec).parent_path().filename().string();
}

// 2 bytes of a function's config space, through sysfs.
std::optional<uint16_t> config_read16(const std::string &bdf, unsigned off)
{
	uint16_t v = 0;
	const int fd = ::open(("/sys/bus/pci/devices/" + bdf + "/config").c_str(), O_RDONLY | O_CLOEXEC);
	const bool ok = fd >= 0 && ::pread(fd, &v, 2, off) == 2;
	if (fd >= 0)
		::close(fd);
	return ok ? std::optional<uint16_t>(v) : std::nullopt;
}

bool config_write16(const std::string &bdf, unsigned off, uint16_t v)
{
	const int fd = ::open(("/sys/bus/pci/devices/" + bdf + "/config").c_str(), O_WRONLY | O_CLOEXEC);
	const bool ok = fd >= 0 && ::pwrite(fd, &v, 2, off) == 2;
	if (fd >= 0)
		::close(fd);
	return ok;
}

// The ECAM address of `off` in `bdf`'s config space, from the kernel's
// "PCI ECAM 0000 [bus 00-ff]" entry of /proc/iomem ("PCI MMCONFIG" before
// Linux 6.11).
std::optional<uint64_t> ecam_address(const std::string &bdf, unsigned off)
{
	unsigned dom, bus, dev, fn;
	if (std::sscanf(bdf.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return std::nullopt;
	std::istringstream iomem(slurp("/proc/iomem"));
	for (std::string line; std::getline(iomem, line);) {
		uint64_t start = 0;
		unsigned seg = 0, first = 0;
		size_t at = line.find(": PCI ECAM ");
		if (at == std::string::npos)
			at = line.find(": PCI MMCONFIG ");
		if (at == std::string::npos || std::sscanf(line.c_str(), " %" SCNx64, &start) != 1 ||
		    std::sscanf(line.c_str() + line.find_first_of("EM", at), "%*s %x [bus %x", &seg, &first) != 2 ||
		    seg != dom || bus < first || !start)
			continue;
		return start + (uint64_t{bus - first} << 20) + (dev << 15) + (fn << 12) + off;
	}
	return std::nullopt;
}

// The physical address of a BAR, from sysfs "resource".
std::optional<uint64_t> bar_address(const qaic::Card &c, unsigned bar)
{
	std::istringstream res(slurp(c.sysfs + "/resource"));
	std::string line;
	for (unsigned i = 0; i <= bar; i++)
		if (!std::getline(res, line))
			return std::nullopt;
	const uint64_t start = std::strtoull(line.c_str(), nullptr, 16);
	return start ? std::optional<uint64_t>(start) : std::nullopt;
}

// The card's DMA goes through a translating IOMMU (not none, not identity).
bool iommu_translates(const qaic::Card &c)
{
	const std::string type = qaic::read_attr(c.sysfs + "/iommu_group/type");
	return type == "DMA" || type == "DMA-FQ";
}

// The IOMMU's reports of refused DMA writes in the kernel log so far.
size_t dmar_write_faults()
{
	const std::string log = dmesg();
	size_t n = 0;
	for (size_t at = log.find("DMAR: [DMA Write"); at != std::string::npos;
	     at = log.find("DMAR: [DMA Write", at + 1))
		n++;
	return n;
}

std::optional<qaic::Card> card_no(ktap::Case &t, unsigned i)
{
	auto cards = qaic::find_cards();
	if (i < cards.size())
		return cards[i];
	t.expect(false, "no card %u (%zu found)", i, cards.size());
	return std::nullopt;
}

// One echo through the loopback channel: ours through its debugfs file
// (which waits for the echo, or for its 5 s timeout), upstream's through
// the module's client. Returns whether the echo came back whole.
bool loopback(const Options &o, const qaic::Card &c, uint64_t payload, unsigned len)
{
	if (!o.ours()) {
		const long before = counter("echoed");
		if (!set_param("device", c.bdf) || !set_param("len", std::to_string(len)) ||
		    !set_param("payload", std::to_string(payload)))
			return false;
		// The client binds when the card reaches mission mode; until then
		// send finds no channel (ENODEV).
		if (!wait_for([] { return set_param("send", "1"); }, 30))
			return false;
		return wait_for([&] { return counter("echoed") > before; }, 10);
	}
	const std::string path = debugfs_dir(c) + "/loopback";
	const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	std::string data(reinterpret_cast<const char *>(&payload), len), back(len, '\0');
	const bool ok = ::write(fd, data.data(), len) == static_cast<ssize_t>(len) &&
			::lseek(fd, 0, SEEK_SET) == 0 && ::read(fd, back.data(), len) == static_cast<ssize_t>(len);
	::close(fd);
	return ok && back == data;
}

// The card's next receive buffer of `len` bytes aimed at `target`, then the
// echo of `payload` into it. Returns whether a buffer was aimed.
bool fire(ktap::Case &t, const Options &o, const qaic::Card &c, uint64_t target, uint64_t payload, unsigned len,
	  bool map)
{
	const long before = counter("aimed");
	char hex[32];
	std::snprintf(hex, sizeof(hex), "0x%" PRIx64, target);
	t.expect(set_param("device", c.bdf) && set_param("target", hex) && set_param("len", std::to_string(len)) &&
		 set_param("map", map ? "1" : "0") && set_param("armed", "1"), "arming qaic_dma_aim");
	kmsg("hostile DMA: " + c.bdf + " aimed at " + hex);
	const bool echoed = loopback(o, c, payload, len);
	set_param("armed", "0");
	const bool aimed = counter("aimed") > before;
	t.note("%s: %zu bytes aimed at %s (%s): %s, echo %s", c.bdf.c_str(), size_t{len}, hex,
	       map ? "mapped" : "unmapped", aimed ? "aimed" : "NOT aimed", echoed ? "returned" : "not returned");
	return aimed;
}

// ONLINE, a STATUS answered and a loopback echo: the card works.
void expect_works(ktap::Case &t, const Options &o, const std::string &bdf, const char *when)
{
	if (!wait_online(bdf, 120))
		return t.expect(false, "%s: %s not ONLINE", when, bdf.c_str());
	auto c = card_at(bdf);
	auto dev = c && c->accel_minor ? qaic::Device::open(*c->accel_minor) : std::nullopt;
	if (!dev)
		return t.expect(false, "%s: %s: open: %s", when, bdf.c_str(), std::strerror(errno));
	const auto st = qaic::Nnc(*dev).status();
	t.expect(st.ok(), "%s: %s: STATUS: %s", when, bdf.c_str(), st.describe().c_str());
	t.expect(loopback(o, *c, 0x0123456789abcdefULL, 8), "%s: %s: the loopback echo failed", when, bdf.c_str());
}

void add_loaded(ktap::Suite &s, const Options &o)
{
	s.add("loaded", [=](ktap::Case &t) {
		const auto cards = qaic::find_cards();
		for (const auto &c : cards)
			t.expect(wait_online(c.bdf), "%s not ONLINE", c.bdf.c_str());
		const std::string args = o.ours() ? "" : " client=1";
		kmsg(kLoadedMark);
		t.expect(shell("insmod " + o.gate + args) == 0, "insmod %s%s failed", o.gate.c_str(), args.c_str());
		if (o.ours())
			return;
		const size_t n = cards.size();
		t.expect(wait_for([&] { return counter("clients") == static_cast<long>(n); }, 30),
			 "the module's loopback client is bound to %ld of %zu cards", counter("clients"), n);
	});
}

// With an IOMMU, an address nobody mapped for the card is refused: the
// write is dropped (a DMAR fault), the card ends the transfer with an
// error and goes on working.
void add_unmapped_refused(ktap::Suite &s, const Options &o)
{
	s.add_isolated("unmapped_dma_refused_by_iommu", 300, [=](ktap::Case &t) {
		auto c = card_no(t, o.card);
		if (!c)
			return;
		if (!iommu_translates(*c))
			return t.skip("no translating IOMMU in front of the card");
		const std::string rp = root_port_of(*c);
		const auto bctl = config_read16(rp, kBridgeControl);
		const auto at = ecam_address(rp, kBridgeControl);
		if (!bctl || !at)
			return t.expect(false, "root port %s: no Bridge Control or no ECAM address", rp.c_str());
		const size_t faults = dmar_write_faults();
		t.expect(fire(t, o, *c, *at, *bctl | kSecondaryBusReset, 2, false), "no buffer aimed");
		t.expect(wait_for([] { return counter("restored") == counter("aimed"); }, 30),
			 "the aimed buffer was not unmapped (aimed %ld, restored %ld)", counter("aimed"),
			 counter("restored"));
		const auto now = config_read16(rp, kBridgeControl);
		t.expect(now && !(*now & kSecondaryBusReset), "the refused write set SBR: 0x%x", now.value_or(0));
		t.expect(dmar_write_faults() > faults, "no DMAR write fault in the kernel log");
		expect_works(t, o, c->bdf, "after the refused write");
	});
}

// Card N's echo into the other card's BAR0 (MHIVER, read-only) and BAR2
// (below the DBCs): both cards keep working.
void add_other_card(ktap::Suite &s, const Options &o)
{
	s.add_isolated("dma_into_other_card", 300, [=](ktap::Case &t) {
		auto cards = qaic::find_cards();
		if (cards.size() < 2)
			return t.skip("one card");
		if (o.card >= cards.size())
			return t.expect(false, "no card %u", o.card);
		const qaic::Card &c = cards[o.card], &other = cards[(o.card + 1) % cards.size()];
		for (unsigned bar : {0u, 2u}) {
			const auto base = bar_address(other, bar);
			if (!base)
				return t.expect(false, "%s: no BAR%u", other.bdf.c_str(), bar);
			t.expect(fire(t, o, c, *base + (bar ? 0 : kMhiVer), 0xdeadbeef, 4, true),
				 "BAR%u: no buffer aimed", bar);
			t.expect(wait_for([] { return counter("restored") == counter("aimed"); }, 30),
				 "BAR%u: the aimed buffer was not unmapped", bar);
		}
		expect_works(t, o, other.bdf, "the other card");
		expect_works(t, o, c.bdf, "the card");
	});
}

// Secondary Bus Reset set by the card's own write to its root port's
// Bridge Control (the other bits as they were): QEMU resets the card at
// the end of its pass and the guest stays up.
void add_sbr(ktap::Suite &s, const Options &o)
{
	s.add_isolated("sbr_by_own_dma", 300, [=](ktap::Case &t) {
		auto c = card_no(t, o.card);
		if (!c)
			return;
		const std::string rp = root_port_of(*c);
		const auto bctl = config_read16(rp, kBridgeControl);
		const auto at = ecam_address(rp, kBridgeControl);
		if (!bctl || !at)
			return t.expect(false, "root port %s: no Bridge Control or no ECAM address", rp.c_str());
		t.expect(fire(t, o, *c, *at, *bctl | kSecondaryBusReset, 2, true), "no buffer aimed");
		t.expect(wait_for([&] {
			const auto v = config_read16(rp, kBridgeControl);
			return v && (*v & kSecondaryBusReset);
		}, 30), "the card's write did not set SBR in %s's Bridge Control", rp.c_str());
		// The card is reset: its config space reads as after a reset.
		const auto cmd = config_read16(c->bdf, 0x04);
		t.note("%s: command register 0x%x after the reset", c->bdf.c_str(), cmd.value_or(0xffff));
		// Clear SBR as firmware would, the other bits as they were.
		t.expect(config_write16(rp, kBridgeControl, *bctl), "clearing SBR in %s", rp.c_str());
		auto cards = qaic::find_cards();
		for (const auto &other : cards)
			if (other.bdf != c->bdf)
				expect_works(t, o, other.bdf, "the other card after the reset");
	});
}

// The reset card back through a PCI remove and rescan (its config space was
// reset behind its driver's back, so a function reset, which saves and
// restores that config space, cannot bring it back); it works again.
void add_sbr_recovery(ktap::Suite &s, const Options &o)
{
	s.add_isolated("sbr_card_recovers", 300, [=](ktap::Case &t) {
		auto c = card_no(t, o.card);
		if (!c)
			return;
		const std::string bdf = c->bdf;
		t.expect(spit(c->sysfs + "/remove", "1"), "removing %s", bdf.c_str());
		t.expect(wait_for([&] { return !fs::exists(c->sysfs); }, 60), "%s still there", bdf.c_str());
		t.expect(spit("/sys/bus/pci/rescan", "1"), "rescanning the PCI bus");
		t.expect(wait_for([&] { return card_at(bdf).has_value(); }, 60), "%s not found again", bdf.c_str());
		t.expect(counter("restored") == counter("aimed"), "aimed %ld buffers, restored %ld",
			 counter("aimed"), counter("restored"));
		expect_works(t, o, bdf, "after the rescan");
	});
}

void add_unloaded(ktap::Suite &s)
{
	s.add("unloaded", [=](ktap::Case &t) {
		t.expect(counter("restored") == counter("aimed"), "aimed %ld buffers, restored %ld", counter("aimed"),
			 counter("restored"));
		t.expect(counter("map_failed") == 0, "%ld targets not mapped", counter("map_failed"));
		t.expect(shell("rmmod qaic_dma_aim") == 0, "rmmod qaic_dma_aim failed");
		// Kernel trouble since the module was loaded: the earlier suites'
		// are theirs (and the harness checks the whole log anyway).
		const std::string log = dmesg();
		const size_t at = log.rfind(kLoadedMark);
		const std::string trouble = kernel_trouble(at == std::string::npos ? log : log.substr(at));
		expect_no_trouble(t, trouble);
	});
}

} // namespace

int main(int argc, char **argv)
{
	const bool listing = ktap::take_list_option(argc, argv);
	Options o;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--gate") {
			o.gate = v;
		} else if (k == "--card") {
			o.card = std::stoul(v);
		} else if (k == "--upstream") {
			const auto d = parse_driver_under_test(v);
			if (!d)
				return 2;
			o.driver = *d;
		} else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return 2;
		}
	}
	if (o.gate.empty()) {
		std::fprintf(stderr, "usage: %s --gate MODULE [--card N] [--upstream 0|6.12|7.3]\n", argv[0]);
		return 2;
	}
	ktap::Suite s;
	add_loaded(s, o);
	add_unmapped_refused(s, o);
	add_other_card(s, o);
	add_sbr(s, o);
	add_sbr_recovery(s, o);
	add_unloaded(s);
	return s.run_or_list(listing);
}
