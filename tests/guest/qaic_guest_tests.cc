// SPDX-License-Identifier: GPL-2.0-or-later
// In-guest checks of the aic100 cards and the qaic driver, reported as KTAP.
// Usage: qaic-guest-tests --cards N --msi 1|32 [--module PATH] [--cycles K]
//                         [--upstream 0|6.12|7.3] [--firmware DIR]
//                         [--card-types aic100|aic200[,...]]
//                         [--known-report NAME ...] [--list]
//        qaic-guest-tests --list-known-reports
// --upstream says the module is upstream Linux's qaic, which lacks our
// driver's extras (loopback debugfs, uevents, "card:" boot log in dmesg).
// --card-types names each card's model, taken in turn as vm-run's --card
// (default aic100); --firmware overrides the first card's firmware folder.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "driver_under_test.h"
#include "guest_util.h"
#include "ktap.h"
#include "qaic.h"

namespace {

using namespace guest_util;

struct Options {
	unsigned cards = 1;
	unsigned msi = 1;
	std::string module;
	unsigned cycles = 10;
	DriverUnderTest driver = DriverUnderTest::Ours;
	std::string firmware; // empty: the first card's family's folder
	std::vector<std::string> card_types = {"aic100"};
	std::string module_args; // " p=v ..." for insmod, or empty
	// Detector reports of known upstream bugs to allow (--known-report).
	std::vector<std::string> known_reports;
};

// A mapping of one BAR through its sysfs resource file.
class BarMap {
public:
	BarMap(const std::string &sysfs, int bar, size_t len) : len_(len)
	{
		const std::string path = sysfs + "/resource" + std::to_string(bar);
		fd_ = ::open(path.c_str(), O_RDWR | O_SYNC | O_CLOEXEC);
		if (fd_ < 0)
			return;
		void *p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
		if (p != MAP_FAILED)
			base_ = static_cast<volatile uint32_t *>(p);
	}
	~BarMap()
	{
		if (base_)
			::munmap(const_cast<uint32_t *>(base_), len_);
		if (fd_ >= 0)
			::close(fd_);
	}
	bool ok() const { return base_ != nullptr; }
	uint32_t rd(uint32_t off) const { return base_[off / 4]; }
	void wr(uint32_t off, uint32_t v) { base_[off / 4] = v; }
	uint64_t rd64(uint32_t off) const { return *reinterpret_cast<volatile const uint64_t *>(
		reinterpret_cast<volatile const uint8_t *>(base_) + off); }

private:
	int fd_ = -1;
	size_t len_;
	volatile uint32_t *base_ = nullptr;
};

bool write_attr(const std::string &path, const std::string &value)
{
	std::ofstream f(path);
	f << value;
	f.flush();
	return static_cast<bool>(f);
}

// Takes a card away from its driver for the scope: a bound driver owns the
// BARs, and the kernel refuses user mappings of them (IO_STRICT_DEVMEM).
// Rebinding on the way out also exercises unbind/bind.
class Unbound {
public:
	Unbound(ktap::Case &t, const qaic::Card &c) : t_(t), c_(c)
	{
		if (!c.driver.empty())
			t.expect(write_attr(c.sysfs + "/driver/unbind", c.bdf), "unbind %s failed", c.bdf.c_str());
		write_attr(c.sysfs + "/enable", "1");
	}
	~Unbound()
	{
		write_attr(c_.sysfs + "/enable", "0");
		if (!c_.driver.empty())
			t_.expect(write_attr("/sys/bus/pci/drivers/" + c_.driver + "/bind", c_.bdf), "rebind %s failed",
				  c_.bdf.c_str());
	}

private:
	ktap::Case &t_;
	const qaic::Card &c_;
};

std::vector<uint8_t> read_config(const qaic::Card &c)
{
	std::ifstream f(c.sysfs + "/config", std::ios::binary);
	return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Offset of a standard capability, or 0.
unsigned find_cap(const std::vector<uint8_t> &cfg, uint8_t id)
{
	if (cfg.size() < 64 || !(cfg[6] & 0x10))
		return 0;
	unsigned pos = cfg[0x34] & ~3u;
	for (int guard = 0; pos && pos + 2 <= cfg.size() && guard < 48; guard++) {
		if (cfg[pos] == id)
			return pos;
		pos = cfg[pos + 1] & ~3u;
	}
	return 0;
}

uint32_t le32(const std::vector<uint8_t> &b, unsigned off)
{
	return b[off] | b[off + 1] << 8 | b[off + 2] << 16 | static_cast<uint32_t>(b[off + 3]) << 24;
}

unsigned count_entries(const std::string &dir)
{
	std::error_code ec;
	unsigned n = 0;
	for ([[maybe_unused]] const auto &e : std::filesystem::directory_iterator(dir, ec))
		n++;
	return n;
}


double uptime()
{
	std::ifstream f("/proc/uptime");
	double u = 0;
	f >> u;
	return u;
}

// The MHI controller's soc_reset attribute: a SoC reset the card reports as
// SYS_ERR, which the host's MHI stack recovers from with a full boot.
std::string soc_reset_attr(const qaic::Card &c)
{
	std::error_code ec;
	for (const auto &e : std::filesystem::directory_iterator(c.sysfs, ec)) {
		const std::string n = e.path().filename().string();
		if (n.rfind("mhi", 0) == 0 && std::filesystem::exists(e.path() / "soc_reset"))
			return (e.path() / "soc_reset").string();
	}
	return {};
}

int run(const std::string &cmd)
{
	const int st = std::system((cmd + " >/dev/null 2>&1").c_str());
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// ---- the fixture ---------------------------------------------------------------

// Where the driver under test differs as this suite sees it
// (kselftest_harness.h's FIXTURE_VARIANT): a case asks its fixture's
// profile, never which driver it runs against.
struct Profile {
	// Why card<N>_loopback skips: the driver has no loopback client
	// (nullptr: it runs).
	const char *no_loopback = nullptr;
	// The driver copies the card's boot log into the kernel log ("card:").
	bool bootlog_in_dmesg = false;
	// The MSI vectors it enables when the card offers more than one; 0: all
	// that the card offers (--msi).
	unsigned multi_msi_vectors = 0;
};

const Profile kOursProfile = {.bootlog_in_dmesg = true};

constexpr const char *kUpstreamNoLoopback = "upstream qaic has no loopback client";

const Profile kUpstream612Profile = {.no_loopback = kUpstreamNoLoopback};

// Upstream 7.3 asks for exactly one vector per DBC plus MHI's (16 + 1)
// where 6.12 and ours ask for all 32.
const Profile kUpstream73Profile = {.no_loopback = kUpstreamNoLoopback, .multi_msi_vectors = 17};

const Profile &profile_of(DriverUnderTest d)
{
	switch (d) {
	case DriverUnderTest::Upstream612:
		return kUpstream612Profile;
	case DriverUnderTest::Upstream73:
		return kUpstream73Profile;
	default:
		return kOursProfile;
	}
}

// What every case is given (kselftest_harness.h's FIXTURE with its
// variant); a per-card case (kCardCases) also its card's index.
struct Fixture {
	Options o;
	Profile p;
	unsigned card = 0;
};

// What a card of each family shows the host (docs/aic200.md).
struct CardShape {
	uint16_t device_id;
	uint64_t bar_size[6];
	unsigned bars_64bit; // mask
	int mhi_bar;
	bool msix;
	const CardFamily &family;
};

const CardShape kAic100Shape = {
	.device_id = 0xa100,
	.bar_size = {4096, 0, 2 << 20, 0, 64 << 10, 0},
	.bars_64bit = 1u << 0 | 1u << 2 | 1u << 4,
	.mhi_bar = 0,
	.msix = false,
	.family = kAic100Family,
};

// BAR0 holds the MSI-X table, BAR1 the MHI registers: both 32-bit.
const CardShape kAic200Shape = {
	.device_id = 0xa110,
	.bar_size = {4096, 4096, 2 << 20, 0, 64 << 10, 0},
	.bars_64bit = 1u << 2 | 1u << 4,
	.mhi_bar = 1,
	.msix = true,
	.family = kAic200Family,
};

const CardShape &shape_of(const Options &o, unsigned card)
{
	return o.card_types[card % o.card_types.size()] == "aic200" ? kAic200Shape : kAic100Shape;
}

// The fixture's card as it is now, or a failure of the case.
std::optional<qaic::Card> card_of(ktap::Case &t, const Fixture &f)
{
	auto cards = qaic::find_cards();
	if (f.card >= cards.size()) {
		t.expect(false, "card %u not present", f.card);
		return std::nullopt;
	}
	return cards[f.card];
}

// The first card, which the recovery cases put through their cycles, or a
// failure of the case.
std::optional<qaic::Card> first_card(ktap::Case &t)
{
	auto cards = qaic::find_cards();
	if (cards.empty()) {
		t.expect(false, "no card");
		return std::nullopt;
	}
	return cards[0];
}

// Whether the case can reload the driver: it knows the module's path
// (otherwise the case skips).
bool need_module(ktap::Case &t, const Fixture &f)
{
	if (f.o.module.empty())
		t.skip("no module path (--module or $aic_module)");
	return !f.o.module.empty();
}

// Loads the module again with the parameters vm-run gave it; whether
// insmod did.
bool insmod(const Fixture &f)
{
	return run("insmod " + f.o.module + f.o.module_args) == 0;
}

// ---- the cards as enumerated ----------------------------------------------------

void cards_enumerated(ktap::Case &t, const Fixture &f)
{
	const auto n = qaic::find_cards().size();
	t.expect(n == f.o.cards, "%zu cards found, want %u", n, f.o.cards);
}

// When the card went ONLINE in guest uptime: our driver logs the moment;
// upstream's does not, so `polled` (the uptime when it was seen) is an
// upper bound.
double online_uptime(const qaic::Card &c, double polled)
{
	const std::string d = dmesg(), key = c.bdf + ": card online";
	if (const size_t pos = d.find(key); pos != std::string::npos) {
		const size_t open = d.rfind('[', pos);
		if (open != std::string::npos)
			return std::atof(d.c_str() + open + 1);
	}
	return polled;
}

// Prints when each card went ONLINE, in guest uptime, so the harness can
// place it on the host's clock (see tests/harness).
void cards_online(ktap::Case &t, const Fixture &)
{
	const auto cards = qaic::find_cards();
	for (const auto &c : cards) {
		const bool ok = wait_online(c.bdf);
		const double now = uptime();
		t.expect(ok, "%s not ONLINE after %.0f s", c.bdf.c_str(), kOnlineTimeout);
		const double at = online_uptime(c, now);
		if (ok)
			t.note("online %s uptime=%.3f now=%.3f", c.bdf.c_str(), at, now);
	}
}

// ---- each card: its PCI face ---------------------------------------------------

void pci_ids(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	t.expect(qaic::read_attr(c->sysfs + "/vendor") == "0x17cb", "vendor");
	const uint16_t want = shape_of(f.o, f.card).device_id;
	t.expect(c->device_id == want, "device 0x%04x, want 0x%04x", c->device_id, want);
	t.expect(qaic::read_attr(c->sysfs + "/class") == "0x120000", "class %s (want processing accelerator)",
		 qaic::read_attr(c->sysfs + "/class").c_str());
	t.expect(qaic::read_attr(c->sysfs + "/subsystem_vendor") == "0x17cb", "subsystem vendor");
}

void bars(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	std::ifstream res(c->sysfs + "/resource");
	const CardShape &shape = shape_of(f.o, f.card);
	const uint64_t *want = shape.bar_size;
	for (int bar = 0; bar < 6; bar++) {
		uint64_t start = 0, end = 0, flags = 0;
		res >> std::hex >> start >> end >> flags;
		const uint64_t size = start || end ? end - start + 1 : 0;
		t.expect(size == want[bar], "BAR%d size %llu, want %llu", bar, (unsigned long long)size,
			 (unsigned long long)want[bar]);
		if (want[bar]) {
			t.expect(flags & 0x200, "BAR%d is not memory", bar);
			const bool wide = flags & 0x100000, want_wide = shape.bars_64bit & 1u << bar;
			t.expect(wide == want_wide, "BAR%d is %s-bit", bar, wide ? "64" : "32");
		}
	}
}

void interrupts(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	const auto cfg = read_config(*c);
	const unsigned msi = find_cap(cfg, 0x05);
	t.expect(msi != 0, "no MSI capability");
	if (msi) {
		const uint16_t ctrl = cfg[msi + 2] | cfg[msi + 3] << 8;
		t.expect(((ctrl >> 1) & 7) == 5, "MSI capable of %u vectors, want 32", 1u << ((ctrl >> 1) & 7));
		t.expect(ctrl & 0x80, "MSI is not 64-bit");
		t.expect(ctrl & 0x100, "MSI has no per-vector masking");
	}
	const CardShape &shape = shape_of(f.o, f.card);
	t.expect((find_cap(cfg, 0x11) != 0) == shape.msix, "MSI-X %s", shape.msix ? "missing" : "present");
	t.expect(cfg.size() > 0x3d && cfg[0x3d] == 0, "INTx pin %u, want none", cfg.size() > 0x3d ? cfg[0x3d] : 0);
	// MSI-X needs no interrupt remapping for many vectors, MSI does.
	const unsigned offered = shape.msix ? 32 : f.o.msi;
	const unsigned want = offered > 1 && f.p.multi_msi_vectors ? f.p.multi_msi_vectors : offered;
	const unsigned n = count_entries(c->sysfs + "/msi_irqs");
	t.expect(n == want, "%u MSI vectors enabled, want %u", n, want);
}

void pcie_link(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	const auto cfg = read_config(*c);
	const unsigned exp = find_cap(cfg, 0x10);
	t.expect(exp != 0, "no PCI Express capability");
	if (!exp)
		return;
	t.expect(((cfg[exp + 2] >> 4) & 0xf) == 0, "not a PCIe endpoint (type %u)", (cfg[exp + 2] >> 4) & 0xf);
	const uint32_t devcap = le32(cfg, exp + 4), lnkcap = le32(cfg, exp + 12);
	t.expect(!(devcap & (1u << 28)), "advertises FLR");
	t.expect((lnkcap & 0xf) == 4, "max link speed code %u, want 4 (16 GT/s)", lnkcap & 0xf);
	t.expect(((lnkcap >> 4) & 0x3f) == 8, "max link width x%u, want x8", (lnkcap >> 4) & 0x3f);
	t.expect(qaic::read_attr(c->sysfs + "/current_link_speed").rfind("16.0 GT/s", 0) == 0,
		 "current link speed '%s'", qaic::read_attr(c->sysfs + "/current_link_speed").c_str());
	t.expect(qaic::read_attr(c->sysfs + "/current_link_width") == "8", "current link width");
}

// ---- each card: the driver's view ------------------------------------------------

void driver_bound(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (c)
		t.expect(c->driver == "qaic", "driver '%s', want qaic", c->driver.c_str());
}

void accel_node(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	t.expect(c->accel_minor.has_value(), "no accel device under %s", c->sysfs.c_str());
	if (!c->accel_minor)
		return;
	struct stat st {};
	const std::string node = c->accel_node();
	t.expect(stat(node.c_str(), &st) == 0 && S_ISCHR(st.st_mode), "%s is not a character device", node.c_str());
	const std::string devno = qaic::read_attr("/sys/class/accel/accel" + std::to_string(*c->accel_minor) + "/dev");
	t.expect(devno == std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)),
		 "%s is %u:%u, sysfs says %s", node.c_str(), major(st.st_rdev), minor(st.st_rdev), devno.c_str());
	int err = 0;
	auto dev = qaic::Device::open(*c->accel_minor, &err);
	if (dev) {
		t.expect(dev->driver_name() == "qaic", "DRM driver name '%s'", dev->driver_name().c_str());
	} else {
		// Upstream behaviour: the node refuses users until the card is ONLINE.
		t.expect(err == ENODEV, "open: %s, want ENODEV while the card is not ONLINE", strerror(err));
		t.note("card not ONLINE: open() gives ENODEV as upstream qaic does");
	}
}

void bootlog(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	const std::string dir = debugfs_dir(*c);
	t.expect(!dir.empty(), "no debugfs directory for %s", c->bdf.c_str());
	const std::string log = slurp(dir + "/bootlog");
	const CardShape &shape = shape_of(f.o, f.card);
	std::vector<std::string> wants = {"SBL: sbl 1.0.0.1 started", std::string(shape.family.qsm_image) + ": ",
					  std::string(shape.family.nsp_image) + ": nsp", "SHA-256 ok", "starting AMSS"};
	if (shape.family.boot_timesync)
		wants.push_back("time synchronised with the host");
	for (const auto &want : wants)
		t.expect(log.find(want) != std::string::npos, "boot log lacks '%s'", want.c_str());
	if (f.p.bootlog_in_dmesg)
		t.expect(dmesg().find(c->bdf + ": card: SBL: all images loaded") != std::string::npos,
			 "the boot log is not in dmesg");
	if (t.failed())
		t.note("boot log:\n%s", log.c_str());
	// Upstream's log client, registered after the card began to boot,
	// bound once the card had left the SBL (docs/upstream-bugs.md).
	const std::string kmsg = dmesg();
	if (t.failed() && kmsg.find("probe with driver qaic_bootlog failed with error -107") != std::string::npos)
		t.note("known upstream bug: qaic's boot-log client registered after the card left the SBL "
		       "(docs/upstream-bugs.md, patches/linux/0013-*)");
}

// One echo of `data` through the loopback file at `path`; false if the
// file did not open (the case cannot go on).
bool loopback_echo(ktap::Case &t, const std::string &path, const std::string &data)
{
	const size_t n = data.size();
	const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
	t.expect(fd >= 0, "open %s: %s", path.c_str(), strerror(errno));
	if (fd < 0)
		return false;
	const ssize_t w = ::write(fd, data.data(), n);
	std::string back(n + 16, '\0');
	ssize_t r = -1;
	if (w == static_cast<ssize_t>(n) && ::lseek(fd, 0, SEEK_SET) == 0)
		r = ::read(fd, back.data(), back.size());
	const int err = errno;
	::close(fd);
	t.expect(w == static_cast<ssize_t>(n), "%zu bytes: write gave %zd (%s)", n, w, strerror(err));
	t.expect(r == static_cast<ssize_t>(n), "%zu bytes: read gave %zd (%s)", n, r, strerror(err));
	back.resize(r > 0 ? r : 0);
	t.expect(back == data, "%zu bytes: the echo differs", n);
	return true;
}

void loopback(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	if (f.p.no_loopback)
		return t.skip(f.p.no_loopback);
	const std::string path = debugfs_dir(*c) + "/loopback";
	std::mt19937 rng(1234);
	for (size_t n : {1, 2, 7, 100, 511, 4095, 4096, 4097, 32767, 32768, 32769, 65535, 65536}) {
		std::string data(n, '\0');
		for (auto &ch : data)
			ch = static_cast<char>(rng());
		if (!loopback_echo(t, path, data))
			return;
	}
	// Bad sizes are refused, not truncated.
	const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
	std::string big(65537, 'x');
	t.expect(fd >= 0 && ::write(fd, big.data(), big.size()) < 0 && errno == EINVAL,
		 "a 65537-byte loopback write was not refused with EINVAL");
	if (fd >= 0)
		::close(fd);
}

// ---- each card: its registers, with the driver away -------------------------------

void bar0_registers(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	Unbound unbound(t, *c);
	const int mhi_bar = shape_of(f.o, f.card).mhi_bar;
	BarMap bar(c->sysfs, mhi_bar, 4096);
	t.expect(bar.ok(), "cannot map BAR%d: %s", mhi_bar, strerror(errno));
	if (!bar.ok())
		return;
	unsigned ones = 0;
	for (uint32_t off = 0; off < 4096; off += 4) {
		// The context base/limit registers read back what the host
		// wrote (the limits are all-ones); the host never reads them.
		if (off >= 0x58 && off <= 0xA4)
			continue;
		if (bar.rd(off) == 0xFFFFFFFF) {
			ones++;
			t.note("BAR%d +0x%x reads 0xFFFFFFFF", mhi_bar, off);
		}
	}
	t.expect(ones == 0, "%u MHI registers read 0xFFFFFFFF", ones);
	t.expect(bar.rd(0x18) < 0xC08, "CHDBOFF 0x%x", bar.rd(0x18));
	t.expect(bar.rd(0x20) < 0xFF8, "ERDBOFF 0x%x", bar.rd(0x20));
	t.expect(bar.rd(0x28) < 0x1000, "BHIOFF 0x%x", bar.rd(0x28));
	// QTIMER at 0xA28 runs at 19.2 MHz.
	const auto t0 = std::chrono::steady_clock::now();
	const uint64_t q0 = bar.rd64(0xA28);
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	const uint64_t q1 = bar.rd64(0xA28);
	const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	const double mhz = (q1 - q0) / secs / 1e6;
	t.expect(mhz > 19.2 * 0.8 && mhz < 19.2 * 1.2, "QTIMER runs at %.2f MHz, want 19.2", mhz);
}

void dbc_registers(ktap::Case &t, const Fixture &f)
{
	auto c = card_of(t, f);
	if (!c)
		return;
	Unbound unbound(t, *c);
	BarMap bar(c->sysfs, 2, 2 << 20);
	t.expect(bar.ok(), "cannot map BAR2: %s", strerror(errno));
	if (!bar.ok())
		return;
	for (unsigned d = 0; d < 16; d++)
		for (unsigned r = 0; r < 16; r += 4)
			t.expect(bar.rd(0x20000 + d * 0x1000 + r) == 0, "DBC%u +0x%x = 0x%x at rest", d, r,
				 bar.rd(0x20000 + d * 0x1000 + r));
	// DBC 15 is idle: its host-owned tail takes a value, the device-owned head does not.
	const uint32_t dbc = 0x20000 + 15 * 0x1000;
	bar.wr(dbc + 0x4, 3);
	bar.wr(dbc + 0x0, 3);
	t.expect(bar.rd(dbc + 0x4) == 3, "REQTP did not take the host's write");
	t.expect(bar.rd(dbc + 0x0) == 0, "REQHP took a host write");
	bar.wr(dbc + 0x4, 0);
}

// ---- the cards together -----------------------------------------------------------

void serial_numbers_distinct(ktap::Case &t, const Fixture &)
{
	std::vector<uint32_t> serials;
	const auto cards = qaic::find_cards();
	for (const auto &c : cards) {
		Unbound unbound(t, c);
		BarMap bar(c.sysfs, 0, 4096);
		t.expect(bar.ok(), "cannot map BAR0 of %s", c.bdf.c_str());
		if (bar.ok())
			serials.push_back(bar.rd(bar.rd(0x28) + 0x40));
	}
	t.expect(serials.size() == cards.size() && cards.size() > 1, "read %zu serials of %zu cards", serials.size(),
		 cards.size());
	for (size_t a = 0; a < serials.size(); a++)
		for (size_t b = a + 1; b < serials.size(); b++)
			t.expect(serials[a] != serials[b], "cards %zu and %zu share serial 0x%x", a, b, serials[a]);
}

// ---- recovery: resets, rebinds and reloads of the first card ------------------------

void syserr_recovery(ktap::Case &t, const Fixture &f)
{
	auto c = first_card(t);
	if (!c)
		return;
	const std::string bdf = c->bdf, attr = soc_reset_attr(*c);
	t.expect(!attr.empty(), "no soc_reset attribute under %s", c->sysfs.c_str());
	for (unsigned k = 0; k < f.o.cycles && !attr.empty() && !t.failed(); k++) {
		t.expect(wait_online(bdf), "cycle %u: not ONLINE before the reset", k);
		t.expect(write_attr(attr, "1"), "cycle %u: soc_reset write failed", k);
		// The card drops to PBL and reports SYS_ERR; the host takes it
		// offline, reloads SBL over BHI and it comes back.
		t.expect(wait_for([&] { return !is_online(bdf); }, 60), "cycle %u: still ONLINE", k);
		t.expect(wait_online(bdf), "cycle %u: not ONLINE again after SYS_ERR", k);
	}
}

// Puts the first card through `cycles` rounds of `round`, until one fails.
void cycle_first_card(ktap::Case &t, unsigned cycles,
		      const std::function<void(const qaic::Card &, unsigned round)> &round)
{
	auto c = first_card(t);
	if (!c)
		return;
	for (unsigned k = 0; k < cycles && !t.failed(); k++)
		round(*c, k);
}

void pci_reset_recovery(ktap::Case &t, const Fixture &)
{
	cycle_first_card(t, 3, [&](const qaic::Card &c, unsigned k) {
		t.expect(wait_online(c.bdf), "cycle %u: not ONLINE before the reset", k);
		t.expect(write_attr(c.sysfs + "/reset", "1"), "cycle %u: PCI reset failed", k);
		t.expect(wait_online(c.bdf), "cycle %u: not ONLINE after the PCI reset", k);
	});
}

void unbind_bind_cycles(ktap::Case &t, const Fixture &)
{
	cycle_first_card(t, 3, [&](const qaic::Card &c, unsigned k) {
		t.expect(write_attr(c.sysfs + "/driver/unbind", c.bdf), "cycle %u: unbind failed", k);
		t.expect(!card_at(c.bdf)->accel_minor, "cycle %u: accel node left after unbind", k);
		t.expect(write_attr("/sys/bus/pci/drivers/qaic/bind", c.bdf), "cycle %u: bind failed", k);
		t.expect(wait_online(c.bdf), "cycle %u: not ONLINE after bind", k);
	});
}

// A way of breaking the firmware, and what the host must say about it.
struct BadFirmware {
	std::string what;
	std::string file;
	bool remove;
	std::vector<std::string> signs; // any of these, in dmesg or the boot log
};

// The breakages, in the names of the card's family. An SBL the card
// refuses shows as a failed BHI or (AIC200 on 7.3) BHIe load.
std::vector<BadFirmware> bad_firmware_for(const CardShape &shape)
{
	const std::string qsm = shape.family.qsm_image, nsp = shape.family.nsp_image;
	return {
		{"tampered sbl.bin", "sbl.bin", false, {"Image transfer failed", "BHI"}},
		{"missing sbl.bin", "sbl.bin", true, {"sbl.bin failed with error -2", "Error loading firmware"}},
		{"tampered " + nsp, nsp, false, {nsp + ": bad digest (Sahara status 0x22); boot halted"}},
		{"missing " + qsm, qsm, true, {qsm + ": the host has no such image"}},
	};
}

// Waits for the host to tell of the broken firmware since the kernel log's
// `mark`, in dmesg or the card's boot log; what it saw in `seen`.
bool host_tells(const BadFirmware &sc, const std::string &bdf, size_t mark, std::string &seen)
{
	return wait_for([&] {
		auto c = card_at(bdf);
		seen = dmesg().substr(mark) + (c ? slurp(debugfs_dir(*c) + "/bootlog") : "");
		for (const auto &sign : sc.signs)
			if (seen.find(sign) != std::string::npos)
				return true;
		return false;
	}, 30);
}

// One broken firmware through a fresh boot of the card, then the files
// restored and the card ONLINE again; false if the file could not be read.
bool boot_with_bad_firmware(ktap::Case &t, const Fixture &f, const qaic::Card &card, const BadFirmware &sc)
{
	const std::string dir = f.o.firmware.empty() ? shape_of(f.o, 0).family.firmware_dir : f.o.firmware;
	const std::string path = dir + "/" + sc.file, orig = slurp(path);
	t.expect(!orig.empty(), "%s: cannot read %s", sc.what.c_str(), path.c_str());
	if (orig.empty())
		return false;
	// A reloaded driver finds the card still in AMSS; a PCI reset while no
	// driver holds it sends the card back to PBL, so the next probe loads
	// firmware.
	t.expect(run("rmmod qaic") == 0, "%s: rmmod failed", sc.what.c_str());
	t.expect(write_attr(card.sysfs + "/reset", "1"), "%s: PCI reset failed", sc.what.c_str());
	if (sc.remove) {
		std::filesystem::remove(path);
	} else {
		std::string bad = orig;
		bad[bad.size() - 1] ^= 0x5A; // a payload byte: only the digest can tell
		spit(path, bad);
	}
	const size_t mark = dmesg().size();
	t.expect(insmod(f), "%s: insmod failed", sc.what.c_str());
	std::string seen;
	const bool told = host_tells(sc, card.bdf, mark, seen);
	t.expect(told, "%s: no clear message (wanted '%s')", sc.what.c_str(), sc.signs[0].c_str());
	t.expect(!is_online(card.bdf), "%s: the card went ONLINE anyway", sc.what.c_str());
	if (!told)
		t.note("dmesg since insmod:\n%s", seen.c_str());
	t.expect(run("rmmod qaic") == 0, "%s: rmmod failed", sc.what.c_str());
	spit(path, orig);
	t.expect(write_attr(card.sysfs + "/reset", "1"), "%s: PCI reset failed", sc.what.c_str());
	t.expect(insmod(f), "%s: insmod failed after restoring", sc.what.c_str());
	t.expect(wait_online(card.bdf), "%s: not ONLINE with the firmware restored", sc.what.c_str());
	return true;
}

// Broken firmware: the card must refuse it, the host must say why, and
// nothing may crash; with the files restored the card boots again.
void bad_firmware(ktap::Case &t, const Fixture &f)
{
	if (!need_module(t, f))
		return;
	auto c = first_card(t);
	if (!c)
		return;
	for (const auto &sc : bad_firmware_for(shape_of(f.o, 0)))
		if (!boot_with_bad_firmware(t, f, *c, sc))
			return;
}

void module_reload_cycles(ktap::Case &t, const Fixture &f)
{
	if (!need_module(t, f))
		return;
	for (unsigned k = 0; k < f.o.cycles && !t.failed(); k++) {
		t.expect(run("rmmod qaic") == 0, "cycle %u: rmmod failed", k);
		unsigned bound = 0;
		for (const auto &c : qaic::find_cards())
			bound += !c.driver.empty() || c.accel_minor.has_value();
		t.expect(bound == 0, "cycle %u: %u cards still bound after rmmod", k, bound);
		t.expect(count_entries("/dev/accel") == 0, "cycle %u: accel nodes left after rmmod", k);
		t.expect(insmod(f), "cycle %u: insmod failed", k);
		unsigned ready = 0;
		for (const auto &c : qaic::find_cards())
			ready += c.driver == "qaic" && c.accel_minor.has_value() && wait_online(c.bdf);
		t.expect(ready == f.o.cards, "cycle %u: %u of %u cards ONLINE after insmod", k, ready, f.o.cards);
	}
}

// ---- the kernel's log -------------------------------------------------------------

// The kernel log's lines, without the first report of each known bug named.
std::vector<std::string> kernel_log_but_known_reports(const Options &o)
{
	std::vector<std::string> lines;
	std::istringstream log(without_known_reports(dmesg(), o.known_reports));
	for (std::string line; std::getline(log, line);)
		lines.push_back(line);
	return lines;
}

// DMA-API debugging reports through WARN() ("WARNING:"); its other lines
// ("DMA-API: preallocated ...") are not reports.
void dmesg_clean(ktap::Case &t, const Fixture &f)
{
	unsigned bad = 0;
	for (const auto &line : kernel_log_but_known_reports(f.o)) {
		for (const char *pat : {"Oops", "WARNING:", "BUG:", "Call Trace", "general protection", "Unable to handle",
					"qaic: probe of", "DMAR: [DMA", "UBSAN:", "ODEBUG:"}) {
			if (line.find(pat) != std::string::npos) {
				if (bad++ < 10)
					t.note("dmesg: %s", line.c_str());
				break;
			}
		}
	}
	t.expect(bad == 0, "%u alarming dmesg lines", bad);
	const unsigned long taint = std::stoul("0" + qaic::read_attr("/proc/sys/kernel/tainted"));
	// O (out-of-tree module, bit 12) and E (unsigned module, bit 13) are expected.
	t.expect((taint & ~((1ul << 12) | (1ul << 13))) == 0, "kernel tainted 0x%lx", taint);
}

// ---- the suite ---------------------------------------------------------------------

// Every case runs in the suite's own process (ktap::kInProcess): the guest
// run's time limit bounds them all, and a limit of each case's own would be
// a guess at how long its reloads and resets take on a loaded TCG guest.

// The first cases, in the order they run.
const ktap::Def<Fixture> kEnumerationCases[] = {
	KTAP_CASE(cards_enumerated, ktap::kInProcess),
	KTAP_CASE(cards_online, ktap::kInProcess),
};

// Each card's cases, in the order they run, named card<N>_<case>.
const ktap::Def<Fixture> kCardCases[] = {
	KTAP_CASE(pci_ids, ktap::kInProcess),
	KTAP_CASE(bars, ktap::kInProcess),
	KTAP_CASE(interrupts, ktap::kInProcess),
	KTAP_CASE(pcie_link, ktap::kInProcess),
	KTAP_CASE(driver_bound, ktap::kInProcess),
	KTAP_CASE(accel_node, ktap::kInProcess),
	KTAP_CASE(bootlog, ktap::kInProcess),
	KTAP_CASE(loopback, ktap::kInProcess),
	KTAP_CASE(bar0_registers, ktap::kInProcess),
	KTAP_CASE(dbc_registers, ktap::kInProcess),
};

// With more than one card, after each card's.
const ktap::Def<Fixture> kSerialNumbersDistinct = KTAP_CASE(serial_numbers_distinct, ktap::kInProcess);

// The last cases, in the order they run; dmesg_clean sees what all the
// others left in the kernel log.
const ktap::Def<Fixture> kRecoveryCases[] = {
	KTAP_CASE(syserr_recovery, ktap::kInProcess),
	KTAP_CASE(pci_reset_recovery, ktap::kInProcess),
	KTAP_CASE(unbind_bind_cycles, ktap::kInProcess),
	KTAP_CASE(bad_firmware, ktap::kInProcess),
	KTAP_CASE(module_reload_cycles, ktap::kInProcess),
	KTAP_CASE(dmesg_clean, ktap::kInProcess),
};

void add_cases(ktap::Suite &s, const Fixture &f)
{
	for (const auto &c : kEnumerationCases)
		s.add(c, f);
	for (unsigned i = 0; i < f.o.cards; i++) {
		Fixture card = f;
		card.card = i;
		for (const auto &c : kCardCases)
			s.add("card" + std::to_string(i) + "_" + c.name, c, card);
	}
	if (f.o.cards > 1)
		s.add(kSerialNumbersDistinct, f);
	for (const auto &c : kRecoveryCases)
		s.add(c, f);
}

// "aic100,aic200": each card's model in turn; false (said on stderr) for
// anything else.
bool parse_card_types(const std::string &list, std::vector<std::string> &types)
{
	types.clear();
	std::stringstream in(list);
	for (std::string t; std::getline(in, t, ',');) {
		if (t != "aic100" && t != "aic200") {
			std::fprintf(stderr, "--card-types: aic100 or aic200, not '%s'\n", t.c_str());
			return false;
		}
		types.push_back(t);
	}
	return !types.empty();
}

// False: the usage was wrong (said on stderr).
bool parse_options(int argc, char **argv, Options &o)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--cards")
			o.cards = std::stoul(v);
		else if (k == "--msi")
			o.msi = std::stoul(v);
		else if (k == "--module")
			o.module = v;
		else if (k == "--cycles")
			o.cycles = std::stoul(v);
		else if (k == "--upstream") {
			const auto d = parse_driver_under_test(v);
			if (!d)
				return false;
			o.driver = *d;
		} else if (k == "--firmware") {
			o.firmware = v;
		} else if (k == "--card-types") {
			if (!parse_card_types(v, o.card_types))
				return false;
		}
		else if (k == "--known-report") {
			if (!is_known_report(v)) {
				std::fprintf(stderr, "unknown report %s\n", v.c_str());
				return false;
			}
			o.known_reports.push_back(v);
		} else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return false;
		}
	}
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	if (ktap::take_flag(argc, argv, "--list-known-reports")) {
		print_known_reports();
		return 0;
	}
	const bool listing = ktap::take_list_option(argc, argv);
	Options o;
	if (const char *m = std::getenv("aic_module"); m && std::strcmp(m, "none"))
		o.module = m;
	// Reloads keep the parameters vm-run loaded the driver with.
	if (const char *r = std::getenv("aic_run")) {
		const std::string args = slurp(std::string(r) + "/module-args");
		if (args.find_first_not_of(" \n") != std::string::npos)
			o.module_args = " " + args.substr(0, args.find_last_not_of(" \n") + 1);
	}
	if (!parse_options(argc, argv, o))
		return 2;
	ktap::Suite s;
	add_cases(s, Fixture{o, profile_of(o.driver)});
	return s.run_or_list(listing);
}
