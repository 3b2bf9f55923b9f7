// SPDX-License-Identifier: GPL-2.0-or-later
// In-guest checks of DRM_IOCTL_QAIC_MANAGE and the NNC command protocol 17.0
// that user space speaks through it, against one card, reported as KTAP:
// the driver's validation (contract §8.7), what the card's QSM answers
// (docs/qsm.md), several users at once, and clean-up when a user dies.
// Each case is a function of the case's name, given the fixture (what
// card_online found of the card, the driver's profile, the options); the
// tables at the end list them in the order they run, the errno table with
// the errno each of its cases wants on each kernel. Where the drivers and
// the kernels they run on differ (MANAGE's errnos, upstream 7.3's bug and
// its fix) is that table's and the Profile's, in one place: a case asks
// them, never which driver runs.
// Usage: qaic-nnc-tests [--card I] [--crc 0|1] [--upstream 0|6.12|7.3]
//                       [--big-mib N] [--users N] [--rounds N]
//                       [--fixed status-padding]
// --card picks the I-th AIC100 function (PCI order); --crc says whether the
// card was started with crc=on; --upstream 6.12|7.3 notes that the driver is
// that release of upstream Linux's qaic (the uapi and the checks are the
// same); --fixed NAME, that its module carries the fix of one of upstream's
// bugs (patches/linux/0002-* for the padded STATUS).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver_under_test.h"
#include "guest_util.h"
#include "ktap.h"
#include "nnc_client.h"
#include "qaic.h"

namespace {

using namespace aic100::nnc::cmd;
using qaic::Manage;
using qaic::Nnc;

struct Options {
	unsigned card = 0;
	int crc = -1; // unknown
	DriverUnderTest driver = DriverUnderTest::Ours;
	std::vector<std::string> fixed; // upstream bugs its module has the fix of (--fixed NAME)
	unsigned big_mib = 256;
	unsigned users = 8;
	unsigned rounds = 3;
};

constexpr double kOnlineTimeout = 60; // seconds; TCG guests are slow

// ---- the drivers under test ------------------------------------------------------
//
// §8.7, the driver's validation of MANAGE: one errno per case and kernel,
// the same under both drivers: ours answers as the upstream qaic of the
// kernel it runs on (qaic_compat.h), read from upstream's sources.
//
// Linux 6.12: a transaction refused before it is consumed (no room left in
// the message, a DMA range that cannot be pinned) leaves part of the user's
// message unencoded, which makes the answer EINVAL whatever the refusal was
// (§8.7 lists ENOSPC and EFAULT). A DEACTIVATE is consumed before its DBC's
// owner is checked, so EPERM comes back only when it is the last
// transaction. STATUS and ACTIVATE must fit in 4096 bytes of wire message.
//
// Linux 7.3 ("accel/qaic: Fix incorrect error return path", 6.19, and
// "accel/qaic: rename constant for clarity", taken to be 6.19 too; see
// qaic_compat.h): a refusal keeps its errno,
// and STATUS and ACTIVATE are checked against the 64 KiB wire length, so
// an ACTIVATE after a 4064-byte passthrough goes out and the card
// activates.
//
// One upstream bug ours does not copy (docs/upstream-bugs.md): 7.3 encodes
// a STATUS as an 8-byte wire transaction whose header, and the message's,
// count the user's whole length. A 4072-byte STATUS then goes out as a
// message that claims 4072 bytes it does not carry; the card drops it as
// malformed and the ioctl waits out control_resp_timeout_s (ETIMEDOUT).
// Ours sends the 4072 bytes its header counts and the card answers.

// The errno a case wants on each kernel (0: the message goes through).
struct Want {
	int linux_6_12;
	int linux_7_3;
};

// The errnos of the errno table (kErrnoTable), by why they are what they are.
constexpr Want kEinval{EINVAL, EINVAL};
constexpr Want kEperm{EPERM, EPERM};
constexpr Want kEfault{EFAULT, EFAULT};
// A STATUS or ACTIVATE beyond 4096 bytes of wire message: refused by 6.12,
// sent by 7.3.
constexpr Want kWireOver4096{EINVAL, 0};
// A DEACTIVATE of a DBC not the user's, not the last transaction: EPERM
// only from 7.3.
constexpr Want kUnownedNotLast{EINVAL, EPERM};
// A DMA range that cannot be pinned: EFAULT only from 7.3.
constexpr Want kUnpinnable{EINVAL, EFAULT};

// An upstream bug our driver does not copy.
struct KnownBug {
	int want;      // its errno
	bool no_reply; // the card drops what it sends: the ioctl waits control_resp_timeout_s
	const char *why;
	const char *fix; // its name for --fixed (the patch of patches/linux that fixes it)
};

const KnownBug kStatusPadding{ETIMEDOUT, true,
			      "7.3's wire header counts the STATUS's 4072 bytes without sending them: the card "
			      "drops the message as malformed",
			      "status-padding"};

// Upstream Linux 7.3's qaic's bugs (those of its module --fixed names aside).
const KnownBug *const kUpstream73Bugs[] = {&kStatusPadding};

// Where the driver under test, and the kernel it runs on, differ as this
// suite sees them (kselftest_harness.h's FIXTURE_VARIANT): a case asks its
// fixture's profile, never which driver it runs against.
struct Profile {
	const char *driver; // "our" or "upstream" (card_online's note)
	// MANAGE's errnos are Linux 7.3's: the guest runs Linux 6.19 or later,
	// where upstream's changed (of the kernels tested, 7.3); 6.12's otherwise.
	bool errnos_7_3;
	std::vector<std::string> bugs; // the fixes (names of --fixed) its module lacks

	// The errno a case wants of this driver on this kernel.
	int errno_of(const Want &w) const { return errnos_7_3 ? w.linux_7_3 : w.linux_6_12; }
	// Whether the driver has the bug (none: no).
	bool has(const KnownBug *bug) const
	{
		return bug && std::find(bugs.begin(), bugs.end(), bug->fix) != bugs.end();
	}
};

Profile profile_of(const Options &o, bool kernel_7_3)
{
	Profile p{o.driver == DriverUnderTest::Ours ? "our" : "upstream", kernel_7_3, {}};
	if (o.driver == DriverUnderTest::Upstream73)
		for (const KnownBug *b : kUpstream73Bugs)
			if (std::find(o.fixed.begin(), o.fixed.end(), b->fix) == o.fixed.end())
				p.bugs.push_back(b->fix);
	return p;
}

// ---- the fixture -------------------------------------------------------------------

// What card_online found out; the cases after it, forked, inherit it.
struct Found {
	std::string bdf;
	bool online = false;
	std::string manage_why; // empty: MANAGE works
	std::string nnc_why;    // empty: the card answers NNC commands
	ResourceInfo initial{}; // the device pool before any case ran
};

// What every case is given (kselftest_harness.h's FIXTURE with its variant).
struct Fixture {
	Options o;
	Profile p;
	Found *found; // filled in by card_online, the first case
};

// ---- plumbing ------------------------------------------------------------------

bool write_attr(const std::string &path, const std::string &value)
{
	std::ofstream f(path);
	f << value;
	f.flush();
	return static_cast<bool>(f);
}

bool wait_for(const std::function<bool()> &cond, double timeout_s)
{
	const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	while (std::chrono::steady_clock::now() < end) {
		if (cond())
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return cond();
}

std::optional<qaic::Card> card_at(const std::string &bdf)
{
	for (auto &c : qaic::find_cards())
		if (c.bdf == bdf)
			return c;
	return std::nullopt;
}

std::optional<qaic::Device> open_card(const Fixture &f, int *err = nullptr)
{
	auto c = card_at(f.found->bdf);
	if (!c || !c->accel_minor) {
		if (err)
			*err = ENOENT;
		return std::nullopt;
	}
	return qaic::Device::open(*c->accel_minor, err);
}

// ONLINE is what users see: open() succeeds (ENODEV before).
bool is_online(const Fixture &f)
{
	return open_card(f).has_value();
}

// The device for a case, or a failed expectation.
std::optional<qaic::Device> device(ktap::Case &t, const Fixture &f)
{
	int err = 0;
	auto d = open_card(f, &err);
	t.expect(d.has_value(), "open %s: %s", f.found->bdf.c_str(), std::strerror(err));
	return d;
}

// Cases that need a working MANAGE (or the card's NNC commands) fail at
// once, with the reason the probe found, instead of each waiting out the
// same failure.
bool need_manage(ktap::Case &t, const Fixture &f)
{
	if (!f.found->online)
		t.expect(false, "the card never came ONLINE");
	else if (!f.found->manage_why.empty())
		t.expect(false, "MANAGE does not work: %s", f.found->manage_why.c_str());
	return !t.failed();
}

bool need_nnc(ktap::Case &t, const Fixture &f)
{
	if (need_manage(t, f) && !f.found->nnc_why.empty())
		t.expect(false, "the card answers no NNC command: %s", f.found->nnc_why.c_str());
	return !t.failed();
}

// What a case needs working before it opens the card.
enum Needs { kManage, kNncCommands };

// A case's fd on the card and an NNC client over it (FIXTURE_SETUP), once
// the probe found what it needs working; not ok(): the case has failed,
// saying why.
struct Session {
	std::optional<qaic::Device> dev;
	std::optional<Nnc> nnc;

	Session(ktap::Case &t, const Fixture &f, Needs needs = kNncCommands)
	{
		if (!(needs == kManage ? need_manage(t, f) : need_nnc(t, f)))
			return;
		dev = device(t, f);
		if (dev)
			nnc.emplace(*dev);
	}
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;
	bool ok() const { return nnc.has_value(); }
};

std::string ename(int err)
{
	return err ? qaic::errno_name(-err) : "success";
}

void expect_errno(ktap::Case &t, int got, int want, const char *what)
{
	t.expect(got == -want, "%s: %s, want %s", what, ename(got).c_str(), qaic::errno_name(want).c_str());
}

void expect_ok(ktap::Case &t, const qaic::NncResult &r, const char *what)
{
	t.expect(r.ok(), "%s: %s", what, r.describe().c_str());
}

void expect_status(ktap::Case &t, const qaic::NncResult &r, int32_t want, const char *what)
{
	t.expect(!r.err && r.answered && r.status == want, "%s: %s, want nnc=%d (%s)", what, r.describe().c_str(), want,
		 qaic::nnc_status_name(want));
}

// A transaction header followed by `body` bytes, for hand-made messages.
std::vector<uint8_t> trans(uint32_t type, uint32_t len, std::vector<uint8_t> body = {})
{
	std::vector<uint8_t> t(8 + body.size());
	std::memcpy(t.data(), &type, 4);
	std::memcpy(t.data() + 4, &len, 4);
	if (!body.empty())
		std::memcpy(t.data() + 8, body.data(), body.size());
	return t;
}

template <typename T> std::vector<uint8_t> bytes_of(const T &v)
{
	const auto *p = reinterpret_cast<const uint8_t *>(&v);
	return {p, p + sizeof(v)};
}

// A minimal ELF64 little-endian executable header for the NSP (e_machine
// 164, QDSP6), padded to `size` bytes with a pattern.
std::vector<uint8_t> make_elf(size_t size, uint16_t machine = 164, uint8_t elf_class = 2)
{
	std::vector<uint8_t> e(std::max<size_t>(size, 64));
	for (size_t i = 64; i < e.size(); i++)
		e[i] = static_cast<uint8_t>(i * 7 + 3);
	const uint8_t ident[16] = {0x7f, 'E', 'L', 'F', elf_class, 1 /* LE */, 1 /* version */};
	std::memcpy(e.data(), ident, sizeof(ident));
	const uint16_t type = 2 /* EXEC */, ehsize = 64;
	const uint32_t version = 1;
	std::memcpy(e.data() + 16, &type, 2);
	std::memcpy(e.data() + 18, &machine, 2);
	std::memcpy(e.data() + 20, &version, 4);
	std::memcpy(e.data() + 52, &ehsize, 2);
	return e;
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed)
{
	std::vector<uint8_t> v(n);
	std::mt19937 rng(seed);
	for (auto &b : v)
		b = static_cast<uint8_t>(rng());
	return v;
}

std::optional<ResourceInfo> resources(ktap::Case &t, Nnc &nnc, int32_t group = -1)
{
	auto r = nnc.resource_info(group);
	t.expect(r.ok(), "RESOURCE_INFO(%d): %s", group, r.describe().c_str());
	if (!r.ok())
		return std::nullopt;
	return r.resp.info;
}

// Free counts equal (totals are checked elsewhere).
bool same_free(ktap::Case &t, const ResourceInfo &a, const ResourceInfo &b, const char *what)
{
	const bool same = a.dram_free_mb == b.dram_free_mb && a.vc_free == b.vc_free && a.nsp_free == b.nsp_free &&
			  a.mcid_free == b.mcid_free && a.sem_free == b.sem_free;
	t.expect(same,
		 "%s: free DDR %u MiB, VCs %u, NSPs %u, MCIDs %u, semaphores %u; want %u, %u, %u, %u, %u", what,
		 b.dram_free_mb, b.vc_free, b.nsp_free, b.mcid_free, b.sem_free, a.dram_free_mb, a.vc_free,
		 a.nsp_free, a.mcid_free, a.sem_free);
	return same;
}

// The device pool back where it started, allowing a TERMINATE in flight.
void expect_all_free(ktap::Case &t, const Fixture &f, Nnc &nnc, const char *what)
{
	const ResourceInfo &initial = f.found->initial;
	std::optional<ResourceInfo> now;
	wait_for([&] {
		auto r = nnc.resource_info(-1);
		if (r.ok())
			now = r.resp.info;
		return now && now->dram_free_mb == initial.dram_free_mb && now->vc_free == initial.vc_free &&
		       now->nsp_free == initial.nsp_free && now->sem_free == initial.sem_free &&
		       now->mcid_free == initial.mcid_free;
	}, 10);
	t.expect(now.has_value(), "%s: RESOURCE_INFO failed", what);
	if (now)
		same_free(t, initial, *now, what);
}

// ---- the card ------------------------------------------------------------------------

// Whether MANAGE works (STATUS_FROM_USR answered with STATUS_FROM_DEV 5.0)
// and the card answers NNC commands, and the device pool before any case.
void probe(ktap::Case &t, const Fixture &f)
{
	Found &c = *f.found;
	auto dev = open_card(f);
	if (!dev) {
		c.manage_why = "cannot open the device";
		return;
	}
	Manage m;
	m.status();
	const int err = m.send(*dev);
	const auto st = m.reply().status();
	if (err)
		c.manage_why = "STATUS_FROM_USR gave " + ename(err);
	else if (!st || st->major != 5 || st->minor != 0 || st->status)
		c.manage_why = "STATUS_FROM_USR got no STATUS_FROM_DEV 5.0 with status 0";
	if (!c.manage_why.empty()) {
		c.nnc_why = c.manage_why;
		t.note("probe: %s", c.manage_why.c_str());
		return;
	}
	Nnc nnc(*dev);
	auto s = nnc.status();
	auto r = nnc.resource_info(-1);
	if (!s.ok())
		c.nnc_why = "STATUS command: " + s.describe();
	else if (!r.ok())
		c.nnc_why = "RESOURCE_INFO command: " + r.describe();
	else
		c.initial = r.resp.info;
	t.note("probe: MANAGE works; NNC commands: %s", c.nnc_why.empty() ? "answered" : c.nnc_why.c_str());
}

// The card (--card) comes ONLINE, and the probe finds out for the cases
// after this one what works.
void card_online(ktap::Case &t, const Fixture &f)
{
	const auto cards = qaic::find_cards();
	t.expect(f.o.card < cards.size(), "no AIC100 card %u (%zu found)", f.o.card, cards.size());
	if (f.o.card >= cards.size())
		return;
	Found &c = *f.found;
	c.bdf = cards[f.o.card].bdf;
	t.note("card %s, %s driver, MANAGE errnos of Linux %s", c.bdf.c_str(), f.p.driver,
	       f.p.errnos_7_3 ? "7.3" : "6.12");
	c.online = wait_for([&] { return is_online(f); }, kOnlineTimeout);
	t.expect(c.online, "%s not ONLINE after %.0f s", c.bdf.c_str(), kOnlineTimeout);
	if (c.online)
		probe(t, f);
}

// ---- the protocol ------------------------------------------------------------------

// STATUS_FROM_USR is answered by STATUS_FROM_DEV 5.0, status 0, whose CRC
// flag is what the card was started with (--crc).
void status_transaction(ktap::Case &t, const Fixture &f)
{
	Session se(t, f, kManage);
	if (!se.ok())
		return;
	Manage m;
	m.status();
	expect_errno(t, m.send(*se.dev), 0, "STATUS_FROM_USR");
	const auto &r = m.reply();
	t.expect(r.ok(), "reply: %s", r.error.c_str());
	t.expect(r.count == 1 && r.len == 24, "reply of %u transactions, %u bytes; want 1, 24", r.count, r.len);
	const auto st = r.status();
	t.expect(st.has_value(), "no STATUS_FROM_DEV");
	if (!st)
		return;
	t.expect(st->major == 5 && st->minor == 0, "version %u.%u, want 5.0", st->major, st->minor);
	t.expect(st->status == 0, "status %u", st->status);
	const bool crc = st->status_flags & 1;
	if (f.o.crc >= 0)
		t.expect(crc == (f.o.crc == 1), "status_flags 0x%llx: CRC %s, but the card was started with crc=%s",
			 (unsigned long long)st->status_flags, crc ? "on" : "off", f.o.crc ? "on" : "off");
	t.note("status_flags 0x%llx (CRC %s)", (unsigned long long)st->status_flags, crc ? "on" : "off");
}

template <size_t N> bool terminated(const char (&s)[N])
{
	return strnlen(s, N) < N;
}

// STATUS's strings: a serial of 8 hex digits, the board's made of it, the
// image strings NUL-terminated, the firmware's not empty, sbl.bin.
void expect_status_strings(ktap::Case &t, const StatusResp &r, const guest_util::CardFamily &family)
{
	const auto &dv = r.dev;
	t.expect(terminated(dv.serial) && std::strlen(dv.serial) == 8 &&
			 std::strspn(dv.serial, "0123456789ABCDEF") == 8,
		 "serial '%.16s' is not 8 hex digits", dv.serial);
	t.expect(terminated(dv.board_serial) && std::string(dv.board_serial) == std::string(family.name) + "-" + dv.serial,
		 "board serial '%.32s'", dv.board_serial);
	for (const auto &[what, ok] : std::initializer_list<std::pair<const char *, bool>>{
		     {"fwQCImageVersionString", terminated(dv.fw_qc_image_version)},
		     {"fwOEMImageVersionString", terminated(dv.fw_oem_image_version)},
		     {"fwImageVariantString", terminated(dv.fw_image_variant)},
		     {"sbl_image_name", terminated(dv.sbl_image_name)},
		     {"NSP qc version", terminated(r.nsp.qc_image_version)},
		     {"NSP oem version", terminated(r.nsp.oem_image_version)},
		     {"NSP variant", terminated(r.nsp.image_variant)}})
		t.expect(ok, "%s is not NUL-terminated", what);
	t.expect(dv.fw_qc_image_version[0] && r.nsp.qc_image_version[0], "empty firmware version strings");
	t.expect(std::string(dv.sbl_image_name, strnlen(dv.sbl_image_name, 24)) == "sbl.bin",
		 "sbl_image_name '%.24s'", dv.sbl_image_name);
}

// STATUS's numbers: the NSPs there are, and the same resource and
// performance info as RESOURCE_INFO and PERFORMANCE_INFO give.
void expect_status_numbers(ktap::Case &t, Nnc &nnc, const StatusResp &r)
{
	const auto &dv = r.dev;
	const auto &ri = dv.resource_info;
	// The UMD reads nsp_pgmask as the defective (power-gated) NSPs.
	const uint64_t mask = ~((1ull << ri.nsp_total) - 1) & 0xFFFF;
	t.expect(dv.nsp_pgmask == mask, "nsp_pgmask 0x%llx for %u NSPs", (unsigned long long)dv.nsp_pgmask,
		 ri.nsp_total);
	// The same numbers as RESOURCE_INFO and PERFORMANCE_INFO.
	auto res = nnc.resource_info(-1);
	auto perf = nnc.performance_info();
	expect_ok(t, res, "RESOURCE_INFO");
	expect_ok(t, perf, "PERFORMANCE_INFO");
	if (res.ok())
		t.expect(std::memcmp(&ri, &res.resp.info, sizeof(ri)) == 0,
			 "STATUS resource_info differs from RESOURCE_INFO");
	if (perf.ok())
		t.expect(std::memcmp(&dv.perf_info, &perf.resp.info, sizeof(dv.perf_info)) == 0,
			 "STATUS perf_info differs from PERFORMANCE_INFO");
}

// The STATUS command's answer as the UMD reads it: format 12, NNC 17.0,
// the card's versions, SKU, strings and numbers.
void status_fields(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	auto s = se.nnc->status();
	expect_ok(t, s, "STATUS");
	if (!s.ok())
		return;
	// The UMD reads 504 bytes in place of its 24-byte request.
	const auto &pt = s.reply.transactions[0];
	t.expect(pt.bytes.size() >= 8 + sizeof(StatusResp) && pt.bytes.size() % 8 == 0,
		 "passthrough of %zu bytes, want >= 512 and a multiple of 8", pt.bytes.size());
	const auto &r = s.resp;
	const auto &dv = r.dev;
	t.expect(r.format_version == 12, "format_version %u, want 12", r.format_version);
	t.expect(dv.nnc_major == 17 && dv.nnc_minor == 0, "NNC %u.%u, want 17.0", dv.nnc_major, dv.nnc_minor);
	t.expect(dv.meta_ver_major == 1 && dv.meta_ver_minor == 0, "metadata %u.%u, want 1.0", dv.meta_ver_major,
		 dv.meta_ver_minor);
	t.expect(dv.hw_version == 0x00020000, "hwVersion 0x%08x, want 0x00020000", dv.hw_version);
	t.expect(dv.sku_type == 3, "SKU %u, want 3, PCIe Pro (docs/qsm.md)", dv.sku_type);
	expect_status_strings(t, r, guest_util::family_of_bdf(f.found->bdf));
	expect_status_numbers(t, *se.nnc, r);
	t.note("firmware %u.%u.%u.%u '%s', NSP '%s', serial %s, %u NSPs", dv.fw_version[0], dv.fw_version[1],
	       dv.fw_version[2], dv.fw_version[3], dv.fw_qc_image_version, r.nsp.qc_image_version, dv.serial,
	       dv.resource_info.nsp_total);
}

// RESOURCE_INFO of the device pool: the card's totals, all free on an idle
// card; of no group: not found.
void resource_info(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	auto r = nnc.resource_info(-1);
	expect_ok(t, r, "RESOURCE_INFO(-1)");
	if (!r.ok())
		return;
	t.expect(r.resp.res_grp_id == -1, "res_grp_id %d, want -1", r.resp.res_grp_id);
	const auto &i = r.resp.info;
	t.expect(i.vc_total == 16 && i.mcid_total == 256 && i.sem_total == 32u * 16 && i.pc_total == 8,
		 "totals: %u VCs, %u MCIDs, %u semaphores, %u PCs; want 16, 256, 512, 8", i.vc_total,
		 i.mcid_total, i.sem_total, i.pc_total);
	t.expect(i.nsp_total >= 1 && i.nsp_total <= 16, "%u NSPs", i.nsp_total);
	t.expect(i.dram_total_mb >= 64, "%u MiB of DDR", i.dram_total_mb);
	// Nothing is loaded by anyone yet.
	t.expect(i.dram_free_mb == i.dram_total_mb && i.vc_free == i.vc_total && i.nsp_free == i.nsp_total &&
			 i.mcid_free == i.mcid_total && i.sem_free == i.sem_total,
		 "not everything is free on an idle card");
	expect_status(t, nnc.resource_info(999), kErrNotFound, "RESOURCE_INFO of no group");
	t.note("DDR %u MiB, %u NSPs", i.dram_total_mb, i.nsp_total);
}

// PERFORMANCE_INFO: the card's clocks, its peak for its NSPs, no DDR
// traffic on an idle card.
void performance_info(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	auto p = nnc.performance_info();
	auto r = nnc.resource_info(-1);
	expect_ok(t, p, "PERFORMANCE_INFO");
	if (!p.ok() || !r.ok())
		return;
	const auto &i = p.resp.info;
	t.expect(i.nsp_frequency_hz == 1'450'000'000, "NSP clock %u Hz", i.nsp_frequency_hz);
	t.expect(i.ddr_frequency_hz == 2'133'000'000, "DDR clock %u Hz", i.ddr_frequency_hz);
	t.expect(i.peak_compute == r.resp.info.nsp_total * 8'000'000'000'000ull, "peak %llu for %u NSPs",
		 (unsigned long long)i.peak_compute, r.resp.info.nsp_total);
	// Measured DDR traffic of the DMA Bridge: nothing moves here.
	t.expect(i.dram_bw_kbps == 0, "DDR bandwidth %llu KB/s on an idle card", (unsigned long long)i.dram_bw_kbps);
}

// What lifecycle loads: constants the way the UMD loads them (EX reserves,
// PAYLOAD fills static then dynamic), plain constants, and an ELF.
struct Loaded {
	qaic::LoadResult ex, plain, elf;
};

// Loads them, 1 MiB each but the 2 MiB of EX; false: one failed.
bool load_images(ktap::Case &t, Nnc &nnc, Loaded &l)
{
	constexpr size_t kMiB = 1 << 20;
	l.ex = nnc.load_constants_ex(kMiB, kMiB);
	expect_ok(t, l.ex, "LOAD_CONSTANTS_EX");
	t.expect(l.ex.id >= 1, "constants_id %u", l.ex.id);
	const auto stat = pattern(kMiB, 1), dyn = pattern(kMiB, 2);
	expect_ok(t, nnc.load_constants_payload(l.ex.id, 0, stat), "PAYLOAD (static)");
	expect_ok(t, nnc.load_constants_payload(l.ex.id, kMiB, dyn), "PAYLOAD (dynamic)");
	l.plain = nnc.load_constants(pattern(kMiB, 3));
	expect_ok(t, l.plain, "LOAD_CONSTANTS");
	t.expect(l.plain.id >= 1 && l.plain.id != l.ex.id, "constants ids %u and %u", l.ex.id, l.plain.id);
	l.elf = nnc.load_elf(make_elf(kMiB));
	expect_ok(t, l.elf, "LOAD_ELF");
	t.expect(l.elf.id >= 1, "elf_id %u", l.elf.id);
	return !t.failed();
}

// The loaded images in the device pool's DDR and STATUS's counts (r0, s0:
// before them); returns the pool now.
std::optional<ResourceInfo> expect_loaded(ktap::Case &t, Nnc &nnc, const ResourceInfo &r0,
					  const qaic::StatusResult &s0)
{
	auto r1 = resources(t, nnc);
	auto s1 = nnc.status();
	if (r1)
		t.expect(r0.dram_free_mb - r1->dram_free_mb == 4, "4 MiB loaded, DDR free went %u -> %u MiB",
			 r0.dram_free_mb, r1->dram_free_mb);
	t.expect(s1.ok() && s1.resp.dev.num_loaded_nws == s0.resp.dev.num_loaded_nws + 1 &&
			 s1.resp.dev.num_loaded_consts == s0.resp.dev.num_loaded_consts + 2,
		 "STATUS counts %u networks, %u constants after loading 1 and 2", s1.resp.dev.num_loaded_nws,
		 s1.resp.dev.num_loaded_consts);
	return r1;
}

// An activation: its ids and ACTIVATE_FROM_DEV, what it took of the pool
// (r1: before it), STATUS's count of active networks (s0: before any).
void expect_activation(ktap::Case &t, Nnc &nnc, const qaic::ActivateResult &act,
		       const std::optional<ResourceInfo> &r1, const qaic::StatusResult &s0)
{
	t.expect(act.activation_id >= 1, "activation_id %u", act.activation_id);
	t.expect(act.dbc_id < 16, "virtual_channel_id %u", act.dbc_id);
	t.expect(act.reply.count == 2 && act.from_dev && act.from_dev->dbc_id == act.dbc_id &&
			 act.from_dev->status == 0,
		 "reply count %u, ACTIVATE_FROM_DEV %s", act.reply.count, act.from_dev ? "present" : "missing");
	t.expect(act.resp.nsp_mask != 0, "nsp_mask 0");
	auto r2 = resources(t, nnc);
	if (r1 && r2)
		t.expect(r2->vc_free == r1->vc_free - 1 && r2->nsp_free == r1->nsp_free - 1 &&
				 r2->sem_free == r1->sem_free - 32 && r2->mcid_free < r1->mcid_free &&
				 r2->dram_free_mb == r1->dram_free_mb - 16,
			 "an activation took %d VCs, %d NSPs, %d semaphores, %d MCIDs, %d MiB; want 1, 1, 32, >0, "
			 "16 (the window of an ELF that is not a workload, docs/qsm.md)",
			 r1->vc_free - r2->vc_free, r1->nsp_free - r2->nsp_free, (int)(r1->sem_free - r2->sem_free),
			 (int)(r1->mcid_free - r2->mcid_free), (int)(r1->dram_free_mb - r2->dram_free_mb));
	auto s2 = nnc.status();
	t.expect(s2.ok() && s2.resp.dev.num_active_nws == s0.resp.dev.num_active_nws + 1,
		 "STATUS counts %u active networks", s2.resp.dev.num_active_nws);
}

// Everything unloads, once; the pool and STATUS's counts are back where
// they started (r0, s0).
void expect_unloaded(ktap::Case &t, Nnc &nnc, const Loaded &l, const ResourceInfo &r0,
		     const qaic::StatusResult &s0)
{
	expect_ok(t, nnc.unload_elf(l.elf.id), "UNLOAD_ELF");
	expect_ok(t, nnc.unload_constants(l.ex.id), "UNLOAD_CONSTANTS (EX)");
	expect_ok(t, nnc.unload_constants(l.plain.id), "UNLOAD_CONSTANTS (plain)");
	expect_status(t, nnc.unload_elf(l.elf.id), kErrNotFound, "UNLOAD_ELF twice");
	auto r3 = resources(t, nnc);
	if (r3)
		same_free(t, r0, *r3, "after unloading");
	auto s3 = nnc.status();
	t.expect(s3.ok() && s3.resp.dev.num_loaded_nws == s0.resp.dev.num_loaded_nws &&
			 s3.resp.dev.num_active_nws == s0.resp.dev.num_active_nws &&
			 s3.resp.dev.num_loaded_consts == s0.resp.dev.num_loaded_consts,
		 "STATUS counts not back to their start");
}

// Load, activate (twice), deactivate and unload as the UMD does, with what
// each step takes and gives back; busy images stay, a released DBC is
// nobody's.
void lifecycle(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	const auto r0 = resources(t, nnc);
	const auto s0 = nnc.status();
	if (!r0 || !s0.ok())
		return;
	Loaded l;
	if (!load_images(t, nnc, l))
		return;
	const auto r1 = expect_loaded(t, nnc, *r0, s0);
	auto act = nnc.activate(l.elf.id, l.ex.id);
	expect_ok(t, act, "ACTIVATE");
	if (!act.ok())
		return;
	expect_activation(t, nnc, act, r1, s0);

	// A second activation of the same ELF, on the plain constants.
	auto act2 = nnc.activate(l.elf.id, l.plain.id);
	expect_ok(t, act2, "second ACTIVATE");
	t.expect(!act2.ok() || act2.dbc_id != act.dbc_id, "two activations share DBC %u", act.dbc_id);

	// Busy images stay.
	expect_status(t, nnc.unload_elf(l.elf.id), kErrNotPermitted, "UNLOAD_ELF while active");
	expect_status(t, nnc.unload_constants(l.ex.id), kErrNotPermitted, "UNLOAD_CONSTANTS while active");

	auto de = nnc.deactivate(act.activation_id, act.dbc_id);
	expect_ok(t, de, "DEACTIVATE");
	if (act2.ok())
		expect_ok(t, nnc.deactivate(act2.activation_id, act2.dbc_id), "second DEACTIVATE");
	// The driver released the DBC: it is nobody's now.
	Manage again;
	again.deactivate(act.dbc_id);
	expect_errno(t, again.send(*se.dev), EPERM, "DEACTIVATE_FROM_USR of the released DBC");
	expect_status(t, nnc.deactivate(act.activation_id, std::nullopt), kErrNotFound, "DEACTIVATE twice");
	expect_unloaded(t, nnc, l, *r0, s0);
}

// Ids nobody handed out, or of another kind: not found.
void unknown_ids(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	expect_status(t, nnc.unload_elf(999999), kErrNotFound, "UNLOAD_ELF of no ELF");
	expect_status(t, nnc.unload_constants(999999), kErrNotFound, "UNLOAD_CONSTANTS of no constants");
	expect_status(t, nnc.deactivate(999999, std::nullopt), kErrNotFound, "DEACTIVATE of no activation");
	expect_status(t, nnc.activate(999999), kErrNotFound, "ACTIVATE without an ELF");
	expect_status(t, nnc.load_constants_payload(999999, 0, pattern(64, 4)), kErrNotFound,
		      "PAYLOAD to no constants");
	expect_status(t, nnc.release_resource_group(999), kErrNotFound, "RELEASE_RESOURCE_GROUP of no group");
	auto elf = nnc.load_elf(make_elf(4096));
	expect_ok(t, elf, "LOAD_ELF");
	expect_status(t, nnc.activate(elf.id, 999999), kErrNotFound, "ACTIVATE with unknown constants");
	// An ELF id is not a constants id.
	expect_status(t, nnc.unload_constants(elf.id), kErrNotFound, "UNLOAD_CONSTANTS of an ELF id");
	expect_ok(t, nnc.unload_elf(elf.id), "UNLOAD_ELF");
}

// Objects belong to the fd that loaded them: another fd finds none of them.
void other_users_objects(ktap::Case &t, const Fixture &f)
{
	if (!need_nnc(t, f))
		return;
	auto a = device(t, f), b = device(t, f);
	if (!a || !b)
		return;
	Nnc na(*a), nb(*b);
	auto elf = na.load_elf(make_elf(4096));
	auto cst = na.load_constants(pattern(4096, 5));
	expect_ok(t, elf, "LOAD_ELF");
	expect_ok(t, cst, "LOAD_CONSTANTS");
	// Objects belong to the fd that loaded them.
	expect_status(t, nb.activate(elf.id), kErrNotFound, "ACTIVATE of another user's ELF");
	expect_status(t, nb.unload_elf(elf.id), kErrNotFound, "UNLOAD_ELF of another user's ELF");
	expect_status(t, nb.unload_constants(cst.id), kErrNotFound, "UNLOAD_CONSTANTS of another user's");
	auto act = na.activate(elf.id, cst.id);
	expect_ok(t, act, "ACTIVATE");
	if (act.ok()) {
		expect_status(t, nb.deactivate(act.activation_id, std::nullopt), kErrNotFound,
			      "DEACTIVATE of another user's activation");
		expect_ok(t, na.deactivate(act.activation_id, act.dbc_id), "DEACTIVATE");
	}
	expect_ok(t, na.unload_elf(elf.id), "UNLOAD_ELF");
	expect_ok(t, na.unload_constants(cst.id), "UNLOAD_CONSTANTS");
}

// ELF images the NSP cannot run are refused, and take nothing.
void bad_elf(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	expect_status(t, nnc.load_elf(make_elf(4096, 62)), kErrParameter, "ELF for x86-64 (e_machine 62)");
	expect_status(t, nnc.load_elf(make_elf(4096, 164, 1)), kErrParameter, "ELF32");
	auto not_elf = make_elf(4096);
	not_elf[1] = 'X';
	expect_status(t, nnc.load_elf(not_elf), kErrParameter, "bad ELF magic");
	auto be = make_elf(4096);
	be[5] = 2; // big-endian
	expect_status(t, nnc.load_elf(be), kErrParameter, "big-endian ELF");
	auto tiny = make_elf(64);
	tiny.resize(32);
	expect_status(t, nnc.load_elf(tiny), kErrParameter, "32-byte image");
	auto r = resources(t, nnc);
	if (r)
		same_free(t, f.found->initial, *r, "after refused loads");
}

// Loads whose data never came, came short or on the wrong tag, and
// PAYLOADs beyond the reserved area: refused.
void missing_dma(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	// LOAD_ELF whose data never came, or came short.
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.data_length = 4096;
	Manage none;
	none.passthrough(Nnc::payload_of(Nnc::bytes(req)));
	auto r = nnc.transact(none, kLoadElfResp, offsetof(LoadElfResp, status));
	t.expect(!r.err && r.answered && r.status != 0, "LOAD_ELF without DMA: %s, want a refusal",
		 r.describe().c_str());
	const auto elf = make_elf(2048);
	Manage shorter;
	shorter.passthrough(Nnc::payload_of(Nnc::bytes(req))).dma_xfer(kTagElf, elf.data(), elf.size());
	r = nnc.transact(shorter, kLoadElfResp, offsetof(LoadElfResp, status));
	t.expect(!r.err && r.answered && r.status != 0, "LOAD_ELF of 4096 bytes with 2048 sent: %s",
		 r.describe().c_str());
	const auto whole = make_elf(4096);
	Manage wrong_tag;
	wrong_tag.passthrough(Nnc::payload_of(Nnc::bytes(req))).dma_xfer(kTagConstants, whole.data(), whole.size());
	r = nnc.transact(wrong_tag, kLoadElfResp, offsetof(LoadElfResp, status));
	t.expect(!r.err && r.answered && r.status != 0, "LOAD_ELF with its data on tag 300: %s",
		 r.describe().c_str());
	// PAYLOAD beyond the reserved area.
	auto ex = nnc.load_constants_ex(4096, 0);
	expect_ok(t, ex, "LOAD_CONSTANTS_EX");
	auto p = nnc.load_constants_payload(ex.id, 4096, pattern(16, 6));
	t.expect(!p.err && p.answered && p.status != 0, "PAYLOAD past the area: %s", p.describe().c_str());
	p = nnc.load_constants_payload(ex.id, 0, pattern(8192, 6));
	t.expect(!p.err && p.answered && p.status != 0, "PAYLOAD larger than the area: %s", p.describe().c_str());
	expect_ok(t, nnc.load_constants_payload(ex.id, 0, pattern(4096, 6)), "PAYLOAD that fits");
	expect_ok(t, nnc.unload_constants(ex.id), "UNLOAD_CONSTANTS");
}

// ACTIVATEs the card cannot carry out (no ACTIVATE_FROM_USR, the state
// 'deactivated'): refused, without ACTIVATE_FROM_DEV, keeping no VC.
void bad_activate(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	auto elf = nnc.load_elf(make_elf(4096));
	expect_ok(t, elf, "LOAD_ELF");
	ActivateReq req{};
	req.type = kActivate;
	req.elf_id = elf.id;
	req.resource_res_id = -1;
	req.vc_res_id = -1;
	req.opt_vc_setup = 1;
	req.initial_state = 1;
	// Without ACTIVATE_FROM_USR the card has no FIFOs for the DBC.
	Manage alone;
	alone.passthrough(Nnc::payload_of(Nnc::bytes(req)));
	expect_status(t, nnc.transact(alone, kActivateResp), kErrParameter, "ACTIVATE without ACTIVATE_FROM_USR");
	req.initial_state = 2;
	Manage deactivated;
	deactivated.passthrough(Nnc::payload_of(Nnc::bytes(req))).activate(512);
	auto r = nnc.transact(deactivated, kActivateResp);
	expect_status(t, r, kErrParameter, "ACTIVATE in state 'deactivated'");
	t.expect(!r.reply.activate(), "a refused ACTIVATE came with ACTIVATE_FROM_DEV");
	auto res = resources(t, nnc);
	if (res)
		t.expect(res->vc_free == f.found->initial.vc_free, "a refused ACTIVATE kept a VC");
	expect_ok(t, nnc.unload_elf(elf.id), "UNLOAD_ELF");
}

// DEVICE_CONFIG and a type nobody defined: answered, refused.
void undefined_command(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	for (uint32_t type : {uint32_t{kDeviceConfig}, 1000u}) {
		std::vector<uint8_t> req(16);
		std::memcpy(req.data(), &type, 4);
		expect_status(t, se.nnc->command(req, type + 1), kErrUndefinedRequest,
			      ("request type " + std::to_string(type)).c_str());
	}
}

// ---- §8.7: the driver's validation of MANAGE ---------------------------------------
//
// Each case of the errno table is the message it sends, a function of the
// case's name that returns MANAGE's answer (0 or -errno); kErrnoTable says
// what each wants (the comment at Want says why).

// Sets upstream's control_resp_timeout_s for a case and puts it back: a
// message the card never answers then costs seconds, not a minute.
class RespTimeout {
public:
	explicit RespTimeout(unsigned seconds)
	{
		old_ = read_param();
		ok_ = !old_.empty() && write_param(std::to_string(seconds));
	}
	~RespTimeout()
	{
		if (ok_)
			write_param(old_);
	}
	bool ok() const { return ok_; }

private:
	static constexpr const char *kParam = "/sys/module/qaic/parameters/control_resp_timeout_s";
	static std::string read_param()
	{
		std::string v;
		if (FILE *f = std::fopen(kParam, "r")) {
			char buf[32] = {};
			if (std::fgets(buf, sizeof(buf), f))
				v = buf;
			std::fclose(f);
		}
		return v;
	}
	static bool write_param(const std::string &v)
	{
		FILE *f = std::fopen(kParam, "w");
		if (!f)
			return false;
		const bool ok = std::fputs(v.c_str(), f) >= 0;
		return std::fclose(f) == 0 && ok;
	}
	std::string old_;
	bool ok_ = false;
};

int send_raw(const qaic::Device &d, std::initializer_list<std::vector<uint8_t>> ts, std::optional<uint32_t> len = {},
	     std::optional<uint32_t> count = {})
{
	Manage m;
	for (const auto &x : ts)
		m.raw(x);
	return m.send_as(d, len.value_or(m.length()), count.value_or(m.count()));
}

// User transactions as the cases build them.
std::vector<uint8_t> status_trans()
{
	return trans(QAIC_TRANS_STATUS_FROM_USR, 8);
}

std::vector<uint8_t> activate_trans(uint32_t queue, uint32_t pad)
{
	qaic_manage_trans_activate_to_dev a{{QAIC_TRANS_ACTIVATE_FROM_USR, sizeof(a)}, queue, 0, 0, pad};
	return bytes_of(a);
}

std::vector<uint8_t> deactivate_trans(uint32_t dbc, uint32_t pad)
{
	qaic_manage_trans_deactivate a{{QAIC_TRANS_DEACTIVATE_FROM_USR, sizeof(a)}, dbc, pad};
	return bytes_of(a);
}

std::vector<uint8_t> dma_trans(uint64_t addr, uint64_t size)
{
	qaic_manage_trans_dma_xfer x{{QAIC_TRANS_DMA_XFER_FROM_USR, sizeof(x)}, 300, 0, addr, size};
	return bytes_of(x);
}

// A message longer than 4096 bytes.
int errno_len_over_4096(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {status_trans()}, 4097, 1);
}

// More than 512 transactions.
int errno_count_over_512(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {status_trans()}, 8, 513);
}

// No transaction.
int errno_count_zero(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {status_trans()}, 8, 0);
}

// A message shorter than a transaction header.
int errno_len_under_8(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {status_trans()}, 4, 1);
}

// A transaction shorter than its header.
int errno_transaction_len_under_8(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {trans(QAIC_TRANS_STATUS_FROM_USR, 4, {0, 0, 0, 0})}, 12, 1);
}

// A transaction longer than the message.
int errno_transaction_overruns(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {trans(QAIC_TRANS_PASSTHROUGH_FROM_USR, 64, std::vector<uint8_t>(8))});
}

// The message's length is not its transactions'.
int errno_lengths_do_not_sum(ktap::Case &t, const qaic::Device &d, const Profile &)
{
	// More bytes than transactions, then more transactions than bytes.
	const int a = send_raw(d, {status_trans(), std::vector<uint8_t>(8)}, 16, 1);
	expect_errno(t, a, EINVAL, "len 16, one 8-byte transaction");
	return send_raw(d, {status_trans()}, 8, 2);
}

// A transaction type that is not a user's.
int errno_unknown_type(ktap::Case &t, const qaic::Device &d, const Profile &)
{
	// Device-to-host and unused codes are not user transactions either.
	for (uint32_t type : {0u, 2u, 3u, 4u, 6u, 8u, 9u, 11u, 13u, 14u, 15u, 16u, 17u, 18u, 19u, 20u, 99u})
		expect_errno(t, send_raw(d, {trans(type, 8)}), EINVAL, ("type " + std::to_string(type)).c_str());
	return send_raw(d, {trans(0xFFFFFFFF, 8)});
}

// A passthrough whose length is not a multiple of 8.
int errno_passthrough_len_not_multiple_of_8(ktap::Case &t, const qaic::Device &d, const Profile &)
{
	expect_errno(t, send_raw(d, {trans(QAIC_TRANS_PASSTHROUGH_FROM_USR, 12, {13, 0, 0, 0})}), EINVAL,
		     "12-byte passthrough");
	return send_raw(d, {trans(QAIC_TRANS_PASSTHROUGH_FROM_USR, 20, std::vector<uint8_t>(12))});
}

// A STATUS of 4072 bytes.
int errno_status_too_long(ktap::Case &, const qaic::Device &d, const Profile &)
{
	// 32-byte wire header + 4072: over 4096, within 64 KiB.
	return send_raw(d, {trans(QAIC_TRANS_STATUS_FROM_USR, 4072, std::vector<uint8_t>(4064))});
}

// An ACTIVATE after a passthrough that fills 4096 bytes of wire message.
int errno_activate_no_room(ktap::Case &, const qaic::Device &d, const Profile &)
{
	// A 4064-byte passthrough fills 4096 bytes of wire message; ACTIVATE_TO_DEV is 40 more.
	std::vector<uint8_t> body(4056);
	const uint32_t st = kStatus;
	std::memcpy(body.data(), &st, 4);
	return send_raw(d, {trans(QAIC_TRANS_PASSTHROUGH_FROM_USR, 4064, body), activate_trans(512, 0)});
}

// An ACTIVATE of no queue.
int errno_activate_queue_size_zero(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {activate_trans(0, 0)});
}

// An ACTIVATE with its pad set.
int errno_activate_pad(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {activate_trans(512, 1)});
}

// An ACTIVATE of a queue whose size overflows.
int errno_activate_size_overflow(ktap::Case &t, const qaic::Device &d, const Profile &)
{
	// 68 bytes per element: 0x4000000 elements overflow 32 bits.
	expect_errno(t, send_raw(d, {activate_trans(0x4000000, 0)}), EINVAL, "queue_size 0x4000000");
	return send_raw(d, {activate_trans(0xFFFFFFFF, 0)});
}

// A DEACTIVATE of a DBC the card does not have.
int errno_deactivate_dbc_out_of_range(ktap::Case &t, const qaic::Device &d, const Profile &)
{
	expect_errno(t, send_raw(d, {deactivate_trans(16, 0)}), EINVAL, "dbc 16");
	return send_raw(d, {deactivate_trans(0xFFFFFFFF, 0)});
}

// A DEACTIVATE with its pad set.
int errno_deactivate_pad(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {deactivate_trans(0, 1)});
}

// A DEACTIVATE of a DBC not the user's.
int errno_deactivate_unowned_dbc(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {deactivate_trans(15, 0)});
}

// The same, followed by a STATUS.
int errno_deactivate_unowned_dbc_not_last(ktap::Case &, const qaic::Device &d, const Profile &)
{
	return send_raw(d, {deactivate_trans(15, 0), status_trans()});
}

// A DMA transfer of no bytes, and one that wraps.
int errno_dma_bad_range(ktap::Case &t, const qaic::Device &d, const Profile &)
{
	static const uint8_t data[64] = {};
	expect_errno(t, send_raw(d, {dma_trans(reinterpret_cast<uintptr_t>(data), 0)}), EINVAL, "size 0");
	return send_raw(d, {dma_trans(~0ull - 4095, 8192)}); // wraps
}

// A DMA transfer of memory partly unmapped (and of memory wholly unmapped).
int errno_dma_partially_unmapped(ktap::Case &t, const qaic::Device &d, const Profile &p)
{
	const size_t pg = sysconf(_SC_PAGESIZE);
	auto *m = static_cast<uint8_t *>(
		mmap(nullptr, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if (m == MAP_FAILED) {
		t.expect(false, "mmap: %s", std::strerror(errno));
		return -ENOMEM;
	}
	std::memset(m, 1, 4 * pg);
	munmap(m + 2 * pg, 2 * pg); // the second half goes away
	const int partial = send_raw(d, {dma_trans(reinterpret_cast<uintptr_t>(m), 4 * pg)});
	const int none = send_raw(d, {dma_trans(reinterpret_cast<uintptr_t>(m + 2 * pg), 2 * pg)});
	munmap(m, 2 * pg);
	expect_errno(t, none, p.errno_of(kUnpinnable), "wholly unmapped range");
	return partial;
}

// A message whose data the driver cannot copy in.
int errno_message_copy_fault(ktap::Case &, const qaic::Device &d, const Profile &)
{
	qaic_manage_msg msg{8, 1, 0x10}; // data points at nothing
	return d.ioctl(DRM_IOCTL_QAIC_MANAGE, &msg);
}

// A row of the errno table: a case's message (ERRNO_CASE names the case
// after it), the errno it wants on each kernel, and the known bug that
// makes a driver answer otherwise (none: no bug does).
struct ErrnoCase {
	const char *name;
	int (*send)(ktap::Case &, const qaic::Device &, const Profile &);
	Want want;
	const KnownBug *bug = nullptr;
};
#define ERRNO_CASE(fn, ...) {#fn, fn, __VA_ARGS__}

constexpr unsigned kErrnoTimeout = 60; // seconds, each errno table case

// An errno table case: MANAGE answers the message with the errno the case
// wants on this kernel, or with the bug's where the driver has it; the fd
// still works after.
void expect_errno_case(ktap::Case &t, const Fixture &f, const ErrnoCase &c)
{
	Session se(t, f, kManage);
	if (!se.ok())
		return;
	const qaic::Device &d = *se.dev;
	if (f.p.has(c.bug)) {
		t.note("upstream 7.3's bug: %s", c.bug->why);
		std::optional<RespTimeout> shorter;
		if (c.bug->no_reply) {
			shorter.emplace(3);
			t.expect(shorter->ok(), "cannot set qaic's control_resp_timeout_s");
		}
		expect_errno(t, c.send(t, d, f.p), c.bug->want, c.name);
	} else {
		expect_errno(t, c.send(t, d, f.p), f.p.errno_of(c.want), c.name);
	}
	// The fd is still good after the message.
	Manage m;
	m.status();
	expect_errno(t, m.send(d), 0, "STATUS after the message");
}

// One fd's DEACTIVATE of another fd's DBC: EPERM, the owner's activation
// untouched.
void errno_deactivate_other_users_dbc(ktap::Case &t, const Fixture &f)
{
	if (!need_nnc(t, f))
		return;
	auto a = device(t, f), b = device(t, f);
	if (!a || !b)
		return;
	Nnc na(*a);
	auto elf = na.load_elf(make_elf(4096));
	expect_ok(t, elf, "LOAD_ELF");
	auto act = na.activate(elf.id);
	expect_ok(t, act, "ACTIVATE");
	if (!act.ok())
		return;
	Manage m;
	m.deactivate(act.dbc_id);
	expect_errno(t, m.send(*b), EPERM, "another fd's DEACTIVATE of the DBC");
	// The owner's activation is untouched.
	expect_ok(t, na.deactivate(act.activation_id, act.dbc_id), "the owner's DEACTIVATE");
	expect_ok(t, na.unload_elf(elf.id), "UNLOAD_ELF");
}

// A message whose answers do not fit in a reply: the card refuses it
// (STATUS_FROM_DEV status 4), the driver returns ECANCELED.
void errno_device_status_ecanceled(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	// Eight STATUS commands answer 8 x 512 bytes: more than a reply can
	// hold, so the card refuses the message with STATUS_FROM_DEV
	// status 4 (docs/qsm.md), which the driver returns as ECANCELED
	// with the reply copied out.
	const StatusReq req{kStatus, 0, {}};
	Manage m;
	for (int i = 0; i < 8; i++)
		m.passthrough(Nnc::payload_of(Nnc::bytes(req)));
	const int err = m.send(*se.dev);
	expect_errno(t, err, ECANCELED, "8 STATUS commands in one message");
	const auto st = m.reply().status();
	t.expect(st.has_value(), "no STATUS_FROM_DEV copied out (reply: %u transactions, %u bytes; %s)",
		 m.reply().count, m.reply().len, m.reply().error.c_str());
	if (st)
		t.expect(st->status == 4 && st->major == 5 && st->minor == 0,
			 "STATUS_FROM_DEV %u.%u status %u, want 5.0 status 4", st->major, st->minor, st->status);
	// Seven fit.
	Manage seven;
	for (int i = 0; i < 7; i++)
		seven.passthrough(Nnc::payload_of(Nnc::bytes(req)));
	expect_errno(t, seven.send(*se.dev), 0, "7 STATUS commands in one message");
	t.expect(seven.reply().transactions.size() == 7, "%zu transactions answer 7 STATUS commands",
		 seven.reply().transactions.size());
}

// ---- big images --------------------------------------------------------------------

// Memory whose pages are not physically contiguous, so that the driver
// needs one DMA pair per page and, past ~4000 pairs, DMA continuations
// (unless an IOMMU merges them). Pages of a second mapping are faulted in
// between and then dropped.
struct Scattered {
	uint8_t *p = nullptr;
	size_t n = 0;
	explicit Scattered(size_t size) : n(size)
	{
		const size_t pg = sysconf(_SC_PAGESIZE);
		void *a = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void *b = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (a == MAP_FAILED || b == MAP_FAILED)
			return;
		madvise(a, size, MADV_NOHUGEPAGE);
		madvise(b, size, MADV_NOHUGEPAGE);
		p = static_cast<uint8_t *>(a);
		auto *q = static_cast<uint8_t *>(b);
		for (size_t off = 0; off < size; off += pg) {
			std::memset(p + off, static_cast<int>(off / pg), pg);
			q[off] = 1;
		}
		munmap(b, size);
	}
	~Scattered()
	{
		if (p)
			munmap(p, n);
	}
};

// Physically contiguous runs in [p, p + size), from /proc/self/pagemap
// (root only); 0 if unreadable. Without an IOMMU each run is one DMA pair.
size_t physical_runs(const uint8_t *p, size_t size)
{
	const size_t pg = sysconf(_SC_PAGESIZE), n = size / pg;
	std::ifstream f("/proc/self/pagemap", std::ios::binary);
	f.seekg(static_cast<std::streamoff>(reinterpret_cast<uintptr_t>(p) / pg * 8));
	std::vector<uint64_t> e(n);
	if (!f.read(reinterpret_cast<char *>(e.data()), static_cast<std::streamsize>(n * 8)))
		return 0;
	size_t runs = 0;
	uint64_t prev = 0;
	for (uint64_t x : e) {
		const uint64_t pfn = x & ((1ull << 55) - 1);
		if (!pfn)
			return 0; // not shown to us
		runs += pfn != prev + 1;
		prev = pfn;
	}
	return runs;
}

// `mib` MiB loaded as an ELF and as plain constants, from one buffer or
// from scattered pages: the DDR they take, given back when unloaded.
void big_load(ktap::Case &t, const Fixture &f, size_t mib, bool scattered)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	const size_t size = mib << 20;
	std::vector<uint8_t> flat;
	std::optional<Scattered> sc;
	uint8_t *data;
	if (scattered) {
		sc.emplace(size);
		t.expect(sc->p != nullptr, "cannot map %zu MiB", mib);
		if (!sc->p)
			return;
		data = sc->p;
		if (const size_t runs = physical_runs(data, size))
			t.note("%zu MiB in %zu physically contiguous runs", mib, runs);
	} else {
		flat = pattern(size, 7);
		data = flat.data();
	}
	const auto hdr = make_elf(64);
	std::memcpy(data, hdr.data(), hdr.size());
	const auto start = std::chrono::steady_clock::now();
	auto elf = nnc.load_elf(std::span<const uint8_t>(data, size));
	const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	expect_ok(t, elf, "LOAD_ELF");
	t.note("%zu MiB loaded in %.2f s (%.0f MiB/s)", mib, secs, mib / secs);
	const auto &i0 = f.found->initial;
	auto r = resources(t, nnc);
	if (r)
		t.expect(i0.dram_free_mb - r->dram_free_mb == mib, "DDR free went %u -> %u MiB for %zu MiB",
			 i0.dram_free_mb, r->dram_free_mb, mib);
	// The same area again as plain constants, and as a payload.
	auto c = nnc.load_constants(std::span<const uint8_t>(data, size));
	expect_ok(t, c, "LOAD_CONSTANTS");
	if (elf.ok())
		expect_ok(t, nnc.unload_elf(elf.id), "UNLOAD_ELF");
	if (c.ok())
		expect_ok(t, nnc.unload_constants(c.id), "UNLOAD_CONSTANTS");
	expect_all_free(t, f, nnc, "after unloading");
}

// 1 MiB from one buffer.
void load_1mib(ktap::Case &t, const Fixture &f)
{
	big_load(t, f, 1, false);
}

// --big-mib MiB (256) from scattered pages: DMA continuations.
void load_big(ktap::Case &t, const Fixture &f)
{
	big_load(t, f, f.o.big_mib, true);
}

// ---- several users -----------------------------------------------------------------

// One user's load/activate/deactivate/unload; false with a message on stdout.
bool user_round(Nnc &nnc, unsigned who, unsigned round)
{
	auto fail = [&](const char *what, const qaic::NncResult &r) {
		std::printf("    # user %u round %u: %s: %s\n", who, round, what, r.describe().c_str());
		std::fflush(stdout);
		return false;
	};
	auto elf = nnc.load_elf(make_elf(64 << 10));
	if (!elf.ok())
		return fail("LOAD_ELF", elf);
	auto ex = nnc.load_constants_ex(64 << 10, 0);
	if (!ex.ok())
		return fail("LOAD_CONSTANTS_EX", ex);
	auto pay = nnc.load_constants_payload(ex.id, 0, pattern(64 << 10, who));
	if (!pay.ok())
		return fail("PAYLOAD", pay);
	auto act = nnc.activate(elf.id, ex.id);
	if (!act.ok())
		return fail("ACTIVATE", act);
	auto de = nnc.deactivate(act.activation_id, act.dbc_id);
	if (!de.ok())
		return fail("DEACTIVATE", de);
	auto ue = nnc.unload_elf(elf.id);
	if (!ue.ok())
		return fail("UNLOAD_ELF", ue);
	auto uc = nnc.unload_constants(ex.id);
	if (!uc.ok())
		return fail("UNLOAD_CONSTANTS", uc);
	return true;
}

// User `u` of parallel_users, in a process of its own: --rounds rounds,
// exit status 0 when all went through.
[[noreturn]] void parallel_user(const Fixture &f, unsigned u)
{
	bool ok = true;
	for (unsigned round = 0; round < f.o.rounds && ok; round++) {
		// A new fd per round: closing it is part of the test.
		auto dev = open_card(f);
		if (!dev) {
			std::printf("    # user %u: open failed\n", u);
			ok = false;
			break;
		}
		Nnc nnc(*dev);
		ok = user_round(nnc, u, round);
		// On failure the close's TERMINATE cleans up.
	}
	std::fflush(stdout);
	_exit(ok ? 0 : 1);
}

// --users processes (8) at once, each loading, activating, deactivating
// and unloading: all go through, and the pool is all free after them.
void parallel_users(ktap::Case &t, const Fixture &f)
{
	if (!need_nnc(t, f))
		return;
	std::fflush(stdout);
	std::vector<pid_t> kids;
	for (unsigned u = 0; u < f.o.users; u++) {
		const pid_t pid = fork();
		if (pid == 0)
			parallel_user(f, u);
		kids.push_back(pid);
	}
	unsigned failed = 0;
	for (pid_t pid : kids) {
		int st = 0;
		waitpid(pid, &st, 0);
		failed += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	t.expect(failed == 0, "%u of %u users failed", failed, f.o.users);
	auto d = device(t, f);
	if (!d)
		return;
	Nnc nnc(*d);
	expect_all_free(t, f, nnc, "after the users closed");
}

// The user killed_user_cleanup kills, in a process of its own: loads an
// ELF and constants, takes a resource group, activates, writes its DBC
// (as '0' + DBC % 16) or 'F' to `ready`, and waits.
[[noreturn]] void killed_user(const Fixture &f, int ready)
{
	auto dev = open_card(f);
	char c = 'F';
	if (dev) {
		Nnc nnc(*dev);
		auto elf = nnc.load_elf(make_elf(1 << 20));
		auto cst = nnc.load_constants(pattern(1 << 20, 8));
		qaic::GroupSpec g;
		g.nsp = 1;
		g.vc = 1;
		g.sem = 32;
		g.mcid = 1;
		g.mem = 16 << 20;
		auto grp = nnc.create_resource_group(g);
		auto act = elf.ok() ? nnc.activate(elf.id, cst.id) : qaic::ActivateResult{};
		if (elf.ok() && cst.ok() && grp.ok() && act.ok())
			c = static_cast<char>('0' + act.dbc_id % 16);
		else
			std::printf("    # child: %s / %s / %s / %s\n", elf.describe().c_str(), cst.describe().c_str(),
				    grp.describe().c_str(), act.describe().c_str());
	}
	std::fflush(stdout);
	[[maybe_unused]] ssize_t w = write(ready, &c, 1);
	pause();
	_exit(0);
}

// The driver let go of the killed user's DBC: an activation may take it
// again (the driver waits for a DBC still in use, so a leak hangs here).
// got, c: what the killed user wrote.
void expect_dbc_free_again(ktap::Case &t, Nnc &nnc, bool got, char c)
{
	auto elf = nnc.load_elf(make_elf(4096));
	auto act = elf.ok() ? nnc.activate(elf.id) : qaic::ActivateResult{};
	expect_ok(t, act, "ACTIVATE after the kill");
	if (act.ok() && got && c != 'F')
		t.note("the killed user had DBC %d; now DBC %u", c - '0', act.dbc_id);
	if (act.ok())
		expect_ok(t, nnc.deactivate(act.activation_id, act.dbc_id), "DEACTIVATE");
	if (elf.ok())
		expect_ok(t, nnc.unload_elf(elf.id), "UNLOAD_ELF");
}

// A user killed with an activation, images and a group: its fd's close
// (the driver's TERMINATE) gives everything back, its DBC too.
void killed_user_cleanup(ktap::Case &t, const Fixture &f)
{
	if (!need_nnc(t, f))
		return;
	int ready[2];
	if (pipe(ready))
		return t.expect(false, "pipe");
	std::fflush(stdout);
	const pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		killed_user(f, ready[1]);
	}
	close(ready[1]);
	char c = 0;
	const bool got = read(ready[0], &c, 1) == 1;
	close(ready[0]);
	auto d = device(t, f);
	if (!d) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		return;
	}
	Nnc nnc(*d);
	t.expect(got && c != 'F', "the child could not set up");
	auto busy = resources(t, nnc);
	if (busy)
		t.expect(busy->vc_free < f.found->initial.vc_free && busy->dram_free_mb < f.found->initial.dram_free_mb,
			 "the child's activation does not show (%u VCs free)", busy->vc_free);
	kill(pid, SIGKILL);
	int st = 0;
	waitpid(pid, &st, 0);
	t.expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the child was not killed");
	// Its fd closed on exit; the driver's TERMINATE made the card drop
	// the activation, images and group.
	expect_all_free(t, f, nnc, "after the user was killed");
	expect_dbc_free_again(t, nnc, got, c);
}

// ---- resource groups and exhaustion --------------------------------------------------

// A new group of 2 NSPs, 2 VCs, 64 semaphores, 2 MCIDs and 64 MiB: taken
// from the device pool, all free in the group. Returns the pool after.
std::optional<ResourceInfo> expect_new_group(ktap::Case &t, const Fixture &f, Nnc &nnc, int32_t group)
{
	const auto &i0 = f.found->initial;
	auto dev1 = resources(t, nnc);
	if (dev1)
		t.expect(dev1->nsp_free == i0.nsp_free - 2 && dev1->vc_free == i0.vc_free - 2 &&
				 dev1->sem_free == i0.sem_free - 64 && dev1->mcid_free == i0.mcid_free - 2 &&
				 dev1->dram_free_mb == i0.dram_free_mb - 64,
			 "the device pool did not give up the group's share");
	auto gi = nnc.resource_info(group);
	expect_ok(t, gi, "RESOURCE_INFO(group)");
	if (gi.ok()) {
		const auto &i = gi.resp.info;
		t.expect(gi.resp.res_grp_id == group, "res_grp_id %d", gi.resp.res_grp_id);
		t.expect(i.nsp_total == 2 && i.vc_total == 2 && i.sem_total == 64 && i.mcid_total == 2 &&
				 i.dram_total_mb == 64,
			 "group totals: %u NSPs, %u VCs, %u semaphores, %u MCIDs, %u MiB", i.nsp_total, i.vc_total,
			 i.sem_total, i.mcid_total, i.dram_total_mb);
		t.expect(i.nsp_free == 2 && i.vc_free == 2 && i.sem_free == 64 && i.mcid_free == 2 &&
				 i.dram_free_mb == 64,
			 "an unused group is not all free");
	}
	return dev1;
}

// A resource group: carved out of the device pool, activations in it take
// from it alone, busy it stays, released it is gone.
void resource_groups(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	qaic::GroupSpec g;
	g.nsp = 2;
	g.vc = 2;
	g.sem = 64;
	g.mcid = 2;
	g.mem = 64 << 20;
	auto grp = nnc.create_resource_group(g);
	expect_ok(t, grp, "CREATE_RESOURCE_GROUP");
	if (!grp.ok())
		return;
	t.expect(grp.id >= 1, "res_grp_id %d", grp.id);
	const auto dev1 = expect_new_group(t, f, nnc, grp.id);

	auto elf = nnc.load_elf(make_elf(4096));
	expect_ok(t, elf, "LOAD_ELF");
	auto a1 = nnc.activate(elf.id, 0, 512, grp.id);
	auto a2 = nnc.activate(elf.id, 0, 512, grp.id);
	expect_ok(t, a1, "ACTIVATE in the group");
	expect_ok(t, a2, "second ACTIVATE in the group");
	// Two VCs in the group: a third activation does not fit there.
	expect_status(t, nnc.activate(elf.id, 0, 512, grp.id), kErrVcAlloc, "third ACTIVATE in the group");
	auto gi = nnc.resource_info(grp.id);
	if (gi.ok())
		t.expect(gi.resp.info.vc_free == 0 && gi.resp.info.nsp_free == 0 && gi.resp.info.sem_free == 0,
			 "the group shows %u VCs, %u NSPs, %u semaphores free with two activations",
			 gi.resp.info.vc_free, gi.resp.info.nsp_free, gi.resp.info.sem_free);
	auto dev2 = resources(t, nnc);
	if (dev1 && dev2)
		t.expect(dev2->vc_free == dev1->vc_free && dev2->nsp_free == dev1->nsp_free,
			 "activations in the group took from the device pool");
	expect_status(t, nnc.release_resource_group(grp.id), kErrNotPermitted, "RELEASE of a busy group");
	for (auto *a : {&a1, &a2})
		if (a->ok())
			expect_ok(t, nnc.deactivate(a->activation_id, a->dbc_id), "DEACTIVATE");
	expect_ok(t, nnc.release_resource_group(grp.id), "RELEASE_RESOURCE_GROUP");
	expect_status(t, nnc.resource_info(grp.id), kErrNotFound, "RESOURCE_INFO of the released group");
	expect_status(t, nnc.activate(elf.id, 0, 512, grp.id), kErrNotFound, "ACTIVATE in the released group");
	expect_ok(t, nnc.unload_elf(elf.id), "UNLOAD_ELF");
	expect_all_free(t, f, nnc, "after releasing the group");
}

// Activations until the DBCs or the NSPs run out: each DBC handed out
// once, the next activation refused for what ran out.
void exhaust_activations(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	auto elf = nnc.load_elf(make_elf(4096));
	expect_ok(t, elf, "LOAD_ELF");
	if (!elf.ok())
		return;
	// One NSP each: the 16 DBCs run out first on a 16-NSP card, the
	// NSPs on a smaller one.
	const unsigned nsps = f.found->initial.nsp_free, fit = std::min(16u, nsps);
	std::vector<qaic::ActivateResult> acts;
	uint32_t dbcs = 0;
	for (unsigned k = 0; k < fit; k++) {
		auto a = nnc.activate(elf.id, 0, 64);
		t.expect(a.ok(), "ACTIVATE %u of %u: %s", k + 1, fit, a.describe().c_str());
		if (!a.ok())
			break;
		t.expect(!(dbcs & (1u << a.dbc_id)), "DBC %u handed out twice", a.dbc_id);
		dbcs |= 1u << a.dbc_id;
		acts.push_back(a);
	}
	const int32_t want = fit == 16 ? kErrVcAlloc : kErrNspAlloc;
	expect_status(t, nnc.activate(elf.id, 0, 64), want, ("ACTIVATE " + std::to_string(fit + 1)).c_str());
	auto full = resources(t, nnc);
	if (full)
		t.expect(full->vc_free == 16 - fit && full->nsp_free == nsps - fit,
			 "%u VCs and %u NSPs free with %u activations", full->vc_free, full->nsp_free, fit);
	for (const auto &a : acts)
		expect_ok(t, nnc.deactivate(a.activation_id, a.dbc_id), "DEACTIVATE");
	expect_ok(t, nnc.unload_elf(elf.id), "UNLOAD_ELF");
	expect_all_free(t, f, nnc, "after deactivating all");
}

// More DDR, NSPs or VCs than the card has: refused; nearly all DDR fits
// once.
void exhaust_memory(ktap::Case &t, const Fixture &f)
{
	Session se(t, f);
	if (!se.ok())
		return;
	Nnc &nnc = *se.nnc;
	const uint64_t ddr = uint64_t{f.found->initial.dram_total_mb} << 20;
	expect_status(t, nnc.load_constants_ex(ddr, 4096), kErrMemory, "LOAD_CONSTANTS_EX beyond DDR");
	expect_status(t, nnc.load_constants_ex(64ull << 30, 0), kErrMemory, "LOAD_CONSTANTS_EX of 64 GiB");
	expect_status(t, nnc.load_constants_ex(~0ull - 100, 200), kErrMemory, "LOAD_CONSTANTS_EX wrapping");
	qaic::GroupSpec g;
	g.mem = ddr + (1 << 20);
	expect_status(t, nnc.create_resource_group(g), kErrMemory, "a group of more DDR than the card has");
	g = {};
	g.nsp = f.found->initial.nsp_total + 1;
	expect_status(t, nnc.create_resource_group(g), kErrNspAlloc, "a group of too many NSPs");
	g = {};
	g.vc = 17;
	expect_status(t, nnc.create_resource_group(g), kErrVcAlloc, "a group of 17 VCs");
	// Nearly all DDR fits once.
	auto big = nnc.load_constants_ex(ddr - (64 << 20), 0);
	expect_ok(t, big, "LOAD_CONSTANTS_EX of all but 64 MiB");
	expect_status(t, nnc.load_constants_ex(128 << 20, 0), kErrMemory, "then 128 MiB more");
	if (big.ok())
		expect_ok(t, nnc.unload_constants(big.id), "UNLOAD_CONSTANTS");
	expect_all_free(t, f, nnc, "after the refusals");
}

// ---- leaving ONLINE ------------------------------------------------------------------

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

// While the card reboots from a SoC reset (`attr`): MANAGE on the open fd
// `d` gives ENODEV, as does open().
void expect_enodev_while_rebooting(ktap::Case &t, const Fixture &f, const std::string &attr, const qaic::Device &d)
{
	t.expect(write_attr(attr, "1"), "soc_reset write failed");
	bool manage_enodev = false, open_enodev = false;
	std::vector<int> seen;
	wait_for([&] {
		Manage m;
		m.status();
		const int err = m.send(d);
		if (seen.empty() || seen.back() != err)
			seen.push_back(err);
		manage_enodev |= err == -ENODEV;
		int oerr = 0;
		if (!open_card(f, &oerr))
			open_enodev |= oerr == ENODEV;
		return manage_enodev && open_enodev;
	}, 30);
	std::string trail;
	for (int e : seen)
		trail += " " + ename(e);
	t.expect(manage_enodev, "MANAGE never gave ENODEV while the card rebooted; it gave:%s", trail.c_str());
	t.expect(open_enodev, "open() never gave ENODEV while the card rebooted");
	t.note("MANAGE on the open fd gave:%s", trail.c_str());
}

// A SoC reset takes the card out of ONLINE until it has booted again;
// MANAGE on an open fd then gives ENODEV, as does open(). ONLINE again, a
// new fd works; so does the old one, or it says the device went.
void errno_not_online(ktap::Case &t, const Fixture &f)
{
	if (!need_manage(t, f))
		return;
	auto c = card_at(f.found->bdf);
	const std::string attr = c ? soc_reset_attr(*c) : "";
	t.expect(!attr.empty(), "no soc_reset attribute");
	auto d = device(t, f);
	if (attr.empty() || !d)
		return;
	expect_enodev_while_rebooting(t, f, attr, *d);
	t.expect(wait_for([&] { return is_online(f); }, kOnlineTimeout), "not ONLINE again after the SoC reset");
	auto fresh = open_card(f);
	if (fresh) {
		Nnc nnc(*fresh);
		expect_ok(t, nnc.status(), "STATUS on a new fd after the reset");
	}
	Manage m;
	m.status();
	const int old = m.send(*d);
	t.expect(old == 0 || old == -ENODEV, "MANAGE on the old fd: %s", ename(old).c_str());
}

// ---- the suite ---------------------------------------------------------------------

// The cases after card_online and before the errno table, in the order
// they run.
const ktap::Def<Fixture> kProtocolCases[] = {
	KTAP_CASE(status_transaction, 60),
	KTAP_CASE(status_fields, 60),
	KTAP_CASE(resource_info, 60),
	KTAP_CASE(performance_info, 60),
	KTAP_CASE(lifecycle, 120),
	KTAP_CASE(unknown_ids, 60),
	KTAP_CASE(other_users_objects, 60),
	KTAP_CASE(bad_elf, 60),
	KTAP_CASE(missing_dma, 60),
	KTAP_CASE(bad_activate, 60),
	KTAP_CASE(undefined_command, 60),
};

// The errno table: every case's message and the errno it wants on each
// kernel, and upstream 7.3's bug where it answers otherwise; in the order
// they run, each for kErrnoTimeout.
const ErrnoCase kErrnoTable[] = {
	ERRNO_CASE(errno_len_over_4096, kEinval),
	ERRNO_CASE(errno_count_over_512, kEinval),
	ERRNO_CASE(errno_count_zero, kEinval),
	ERRNO_CASE(errno_len_under_8, kEinval),
	ERRNO_CASE(errno_transaction_len_under_8, kEinval),
	ERRNO_CASE(errno_transaction_overruns, kEinval),
	ERRNO_CASE(errno_lengths_do_not_sum, kEinval),
	ERRNO_CASE(errno_unknown_type, kEinval),
	ERRNO_CASE(errno_passthrough_len_not_multiple_of_8, kEinval),
	ERRNO_CASE(errno_status_too_long, kWireOver4096, &kStatusPadding),
	ERRNO_CASE(errno_activate_no_room, kWireOver4096),
	ERRNO_CASE(errno_activate_queue_size_zero, kEinval),
	ERRNO_CASE(errno_activate_pad, kEinval),
	ERRNO_CASE(errno_activate_size_overflow, kEinval),
	ERRNO_CASE(errno_deactivate_dbc_out_of_range, kEinval),
	ERRNO_CASE(errno_deactivate_pad, kEinval),
	ERRNO_CASE(errno_deactivate_unowned_dbc, kEperm),
	ERRNO_CASE(errno_deactivate_unowned_dbc_not_last, kUnownedNotLast),
	ERRNO_CASE(errno_dma_bad_range, kEinval),
	ERRNO_CASE(errno_dma_partially_unmapped, kUnpinnable),
	ERRNO_CASE(errno_message_copy_fault, kEfault),
};

// The cases after the errno table, in the order they run. errno_not_online
// is last: it resets the card.
const ktap::Def<Fixture> kCases[] = {
	KTAP_CASE(errno_deactivate_other_users_dbc, 120),
	KTAP_CASE(errno_device_status_ecanceled, 60),
	KTAP_CASE(load_1mib, 120),
	KTAP_CASE(load_big, 600),
	KTAP_CASE(parallel_users, 600),
	KTAP_CASE(killed_user_cleanup, 120),
	KTAP_CASE(resource_groups, 120),
	KTAP_CASE(exhaust_activations, 180),
	KTAP_CASE(exhaust_memory, 60),
	KTAP_CASE(errno_not_online, 180),
};

// Every case in the order it runs: card_online first, in this process (the
// cases after it run in processes of their own, which inherit what it
// found), then the tables'.
void add_cases(ktap::Suite &s, const Fixture &f)
{
	s.add("card_online", [f](ktap::Case &t) { card_online(t, f); });
	for (const auto &c : kProtocolCases)
		s.add(c, f);
	for (const auto &e : kErrnoTable)
		s.add_isolated(e.name, kErrnoTimeout, [f, e](ktap::Case &t) { expect_errno_case(t, f, e); });
	for (const auto &c : kCases)
		s.add(c, f);
}

// False: the usage was wrong (said on stderr).
bool parse_options(int argc, char **argv, Options &o)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--card")
			o.card = std::stoul(v);
		else if (k == "--crc")
			o.crc = v == "1" || v == "on";
		else if (k == "--upstream") {
			const auto d = parse_driver_under_test(v);
			if (!d)
				return false;
			o.driver = *d;
		} else if (k == "--fixed") {
			const auto named = [&](const KnownBug *b) { return v == b->fix; };
			if (std::none_of(std::begin(kUpstream73Bugs), std::end(kUpstream73Bugs), named)) {
				std::fprintf(stderr, "--fixed %s: the known fix is status-padding\n", v.c_str());
				return false;
			}
			o.fixed.push_back(v);
		} else if (k == "--big-mib")
			o.big_mib = std::stoul(v);
		else if (k == "--users")
			o.users = std::stoul(v);
		else if (k == "--rounds")
			o.rounds = std::stoul(v);
		else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return false;
		}
	}
	return true;
}

// The running kernel's major and minor version.
std::optional<std::pair<unsigned, unsigned>> running_kernel()
{
	utsname u{};
	unsigned major = 0, minor = 0;
	if (uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return std::nullopt;
	return std::make_pair(major, minor);
}

// Whether the running kernel is Linux 6.19 or later, where upstream's
// MANAGE errnos changed; nothing (said on stderr) if that cannot be told or
// the kernel and --upstream disagree.
std::optional<bool> kernel_is_7_3(const Options &o)
{
	const auto kernel = running_kernel();
	if (!kernel) {
		std::fprintf(stderr, "cannot read the running kernel's version from uname()\n");
		return std::nullopt;
	}
	const bool kernel_7_3 = *kernel >= std::make_pair(6u, 19u);
	const bool upstream_73 = o.driver == DriverUnderTest::Upstream73;
	if (o.driver != DriverUnderTest::Ours && kernel_7_3 != upstream_73) {
		std::fprintf(stderr, "--upstream %s on Linux %u.%u: the kernel and the driver disagree\n",
			     upstream_73 ? "7.3" : "6.12", kernel->first, kernel->second);
		return std::nullopt;
	}
	return kernel_7_3;
}

} // namespace

int main(int argc, char **argv)
{
	const bool listing = ktap::take_list_option(argc, argv);
	Options o;
	if (!parse_options(argc, argv, o))
		return 2;
	// --list runs on the host, whose kernel is not the guest's; the cases
	// are the same on every kernel.
	const auto kernel_7_3 = listing ? std::optional<bool>(o.driver == DriverUnderTest::Upstream73) : kernel_is_7_3(o);
	if (!kernel_7_3)
		return 2;
	Found found;
	const Fixture f{o, profile_of(o, *kernel_7_3), &found};
	ktap::Suite s;
	add_cases(s, f);
	return s.run_or_list(listing);
}
