/*
 * qtest for the aic100 device: the card as QEMU sees it, with no guest.
 *
 * The test plays firmware and driver itself: it numbers the root port's
 * bus and opens its memory window, maps the card's BARs, and brings MHI
 * to M0 with contexts in guest memory, so that the card writes its first
 * events (M0, then the execution environment) by DMA. Pointing that event
 * ring elsewhere aims the card's DMA at config space (ECAM), at another
 * card's registers or at its own; unplugging or resetting the card while
 * it works checks what QEMU does around the device.
 *
 * Built inside QEMU's tree (scripts/build-qemu links it into tests/qtest)
 * and run by scripts/qtest.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci-pc.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"

#define ECAM_BASE 0xb0000000ull
#define WINDOW_BASE 0xe0000000u
#define WINDOW_SIZE 0x10000000u

/* Root ports on bus 0 (devices 0x10, 0x11), each with one card behind it. */
#define RP_DEVFN(i) QPCI_DEVFN(0x10 + (i), 0)
#define CARD_DEVFN(i) (((i) + 1) << 8)
#define ECAM_OF(bus, devfn) (ECAM_BASE + ((uint64_t)(bus) << 20) + ((devfn) << 12))

/* MHI registers (BAR0) and wire formats, as the upstream driver uses them. */
#define MHIVER 0x08
#define MHICFG 0x10
#define MHICTRL 0x38
#define MHISTATUS 0x48
#define CCABAP 0x58
#define ECABAP 0x60
#define CRCBAP 0x68
#define BHI_EXECENV 0x128
#define CRDB 0x70
#define CHDB(ch) (0x400 + 8 * (ch))
#define ERDB0 0x800
#define MHI_STATE_READY 1
#define MHI_STATE_M0 2
#define EE_AMSS 2
#define EVT_STATE_CHANGE 0x20
#define EVT_EXEC_ENV 0x40
#define CTX_SIZE 44
#define EVENTS 32

typedef struct Card {
    QPCIDevice *rp, *dev;
    QPCIBar bar0;
    uint64_t bar0_addr;
} Card;

typedef struct Rig {
    QOSState *qs;
    QTestState *qts;
    Card card[2];
    int ncards;
    int mhi_bar; /* 0 on aic100, 1 on aic200 */
} Rig;

static const char *qemu_extra(void)
{
    const char *extra = getenv("AIC100_QTEST_QEMU_ARGS");

    return extra ? extra : "";
}

/* What firmware would do: MMCONFIG on, bus 1+i behind root port i. */
static void open_root_port(Rig *r, int i)
{
    QPCIDevice *rp = qpci_device_find(r->qs->pcibus, RP_DEVFN(i));
    uint32_t base = WINDOW_BASE + i * (WINDOW_SIZE / 2);
    uint32_t limit = base + WINDOW_SIZE / 2 - 1;

    g_assert(rp);
    qpci_config_writeb(rp, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(rp, PCI_SECONDARY_BUS, 1 + i);
    qpci_config_writeb(rp, PCI_SUBORDINATE_BUS, 1 + i);
    qpci_config_writew(rp, PCI_MEMORY_BASE, (base >> 16) & 0xfff0);
    qpci_config_writew(rp, PCI_MEMORY_LIMIT, (limit >> 16) & 0xfff0);
    qpci_config_writew(rp, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    g_free(r->card[i].rp); /* opened again after a bus reset */
    r->card[i].rp = rp;
}

static void map_card(Rig *r, int i)
{
    Card *c = &r->card[i];
    uint64_t size;

    c->dev = qpci_device_find(r->qs->pcibus, CARD_DEVFN(i));
    g_assert(c->dev);
    r->qs->pcibus->mmio_alloc_ptr = WINDOW_BASE + i * (WINDOW_SIZE / 2);
    c->bar0 = qpci_iomap(c->dev, r->mhi_bar, &size);
    g_assert_cmpuint(size, ==, 4096);
    c->bar0_addr = qpci_config_readl(c->dev, PCI_BASE_ADDRESS_0 + 4 * r->mhi_bar) & ~0xfu;
    qpci_device_enable(c->dev);
}

/*
 * The root ports' slots are unplugged natively (Slot Control), or, with
 * acpi_hotplug, by ACPI as Linux on q35 does it (QEMU's default).
 */
static Rig *rig_new_with(const char *model, int ncards, const char *card_args,
                         bool acpi_hotplug)
{
    Rig *r = g_new0(Rig, 1);
    GString *cmd = g_string_new("-machine q35 -nodefaults -display none ");
    QPCIDevice *mch;

    for (int i = 0; i < ncards; i++) {
        g_string_append_printf(cmd,
            "-device pcie-root-port,id=rp%d,bus=pcie.0,chassis=%d,addr=0x%x "
            "-device %s,id=card%d,bus=rp%d,boot=amss,nsps=2,ddr-size=64M%s ",
            i, i + 1, 0x10 + i, model, i, i, card_args);
    }
    g_string_append_printf(cmd, "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=%s ",
                           acpi_hotplug ? "on" : "off");
    r->mhi_bar = strcmp(model, "aic200") ? 0 : 1;
    g_string_append(cmd, qemu_extra());
    r->qs = qtest_pc_boot("%s", cmd->str);
    g_string_free(cmd, true);
    r->qts = r->qs->qts;
    r->ncards = ncards;
    mch = qpci_device_find(r->qs->pcibus, 0);
    qpci_config_writel(mch, 0x64, 0);
    qpci_config_writel(mch, 0x60, ECAM_BASE | 1); /* PCIEXBAR: 256 MiB, on */
    g_free(mch);
    for (int i = 0; i < ncards; i++) {
        open_root_port(r, i);
        map_card(r, i);
    }
    return r;
}

static Rig *rig_new_of(const char *model, int ncards, const char *card_args)
{
    return rig_new_with(model, ncards, card_args, false);
}

static Rig *rig_new(int ncards, const char *card_args)
{
    return rig_new_of("aic100", ncards, card_args);
}

static void rig_free(Rig *r)
{
    for (int i = 0; i < r->ncards; i++) {
        g_free(r->card[i].dev);
        g_free(r->card[i].rp);
    }
    qtest_shutdown(r->qs);
    g_free(r);
}

static uint32_t mhi_read(Rig *r, int i, uint32_t off)
{
    return qpci_io_readl(r->card[i].dev, r->card[i].bar0, off);
}

static void mhi_write(Rig *r, int i, uint32_t off, uint32_t val)
{
    qpci_io_writel(r->card[i].dev, r->card[i].bar0, off, val);
}

static void mhi_write64(Rig *r, int i, uint32_t off, uint64_t val)
{
    mhi_write(r, i, off, (uint32_t)val);
    mhi_write(r, i, off + 4, val >> 32);
}

static unsigned mhi_state(Rig *r, int i)
{
    return (mhi_read(r, i, MHISTATUS) >> 8) & 0xff;
}

/*
 * Waits, as a driver polls, until card i's MHI state is `want`: the card
 * works on its own thread, so the test lets time pass (virtual clock for
 * the card's timers, and a bounded number of polls for its thread).
 */
#define POLLS 20000

/* One poll's worth of time: the card's timers, then its thread's turn. */
static void let_time_pass(Rig *r)
{
    qtest_clock_step(r->qts, 100 * 1000);
    g_usleep(100);
}

static bool await_state(Rig *r, int i, unsigned want)
{
    for (int n = 0; n < POLLS && mhi_state(r, i) != want; n++) {
        let_time_pass(r);
    }
    return mhi_state(r, i) == want;
}

static char *card_state(Rig *r, int i)
{
    g_autofree char *path = g_strdup_printf("card%d", i);
    QDict *rsp = qtest_qmp(r->qts,
        "{'execute': 'qom-get', 'arguments': {'path': %s, 'property': 'state'}}", path);
    char *state;

    g_assert(qdict_haskey(rsp, "return"));
    state = g_strdup(qdict_get_str(rsp, "return"));
    qobject_unref(rsp);
    return state;
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = v >> (8 * i);
    }
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = v >> (8 * i);
    }
}

/* A ring context: the 44 bytes of an event or command ring context. */
static void write_ctx(Rig *r, uint64_t at, uint32_t w0, uint32_t w1,
                      uint64_t base, uint64_t len)
{
    uint8_t ctx[CTX_SIZE] = { 0 };

    put_le32(ctx, w0);
    put_le32(ctx + 4, w1);
    put_le64(ctx + 12, base);
    put_le64(ctx + 20, len);
    put_le64(ctx + 28, base); /* rp */
    put_le64(ctx + 36, base); /* wp */
    qtest_memwrite(r->qts, at, ctx, sizeof(ctx));
}

/* What the test keeps of an MHI host's set-up, per card. */
typedef struct MhiHost {
    uint64_t ccabap, crcbap, cmds, cmd_wp;
} MhiHost;

static MhiHost hosts[2];

/*
 * Contexts in guest memory, event ring 0 at `events` (anywhere the test
 * wants the card's first DMA writes to go), then, once the card is READY,
 * M0: the card posts STATE_CHANGE(M0) and EXEC_ENV(AMSS) there.
 */
static void start_m0(Rig *r, int i, uint64_t events)
{
    QGuestAllocator *a = &r->qs->alloc;
    MhiHost *h = &hosts[i];
    uint64_t ecabap = guest_alloc(a, CTX_SIZE);
    uint64_t credit = events + (EVENTS - 1) * 16;

    g_assert_true(await_state(r, i, MHI_STATE_READY));
    h->ccabap = guest_alloc(a, 128 * CTX_SIZE);
    h->crcbap = guest_alloc(a, CTX_SIZE);
    h->cmds = guest_alloc(a, 16 * 16);
    h->cmd_wp = h->cmds;
    qtest_memset(r->qts, h->ccabap, 0, 128 * CTX_SIZE);
    write_ctx(r, ecabap, 0, 1, events, EVENTS * 16);
    qtest_memwrite(r->qts, ecabap + 36, &credit, 8);
    write_ctx(r, h->crcbap, 0, 0, h->cmds, 16 * 16);
    mhi_write64(r, i, CCABAP, h->ccabap);
    mhi_write64(r, i, ECABAP, ecabap);
    mhi_write64(r, i, CRCBAP, h->crcbap);
    mhi_write(r, i, MHICFG, (mhi_read(r, i, MHICFG) & 0xffff) | (1u << 16));
    mhi_write64(r, i, ERDB0, credit);
    mhi_write(r, i, MHICTRL, MHI_STATE_M0 << 8);
}

static void write_element(Rig *r, uint64_t at, uint64_t ptr, uint32_t w0,
                          uint32_t w1)
{
    uint8_t e[16];

    put_le64(e, ptr);
    put_le32(e + 8, w0);
    put_le32(e + 12, w1);
    qtest_memwrite(r->qts, at, e, sizeof(e));
}

/* START_CHAN for channel `ch` of card i, its ring of 4 elements at `ring`. */
static void start_channel(Rig *r, int i, unsigned ch, uint64_t ring)
{
    MhiHost *h = &hosts[i];
    uint64_t ctx = h->ccabap + ch * CTX_SIZE;

    write_ctx(r, ctx, 1 | (2u << 8), (ch & 1) ? 2 : 1, ring, 4 * 16);
    write_element(r, h->cmd_wp, 0, 0, (ch << 24) | (0x12u << 16));
    h->cmd_wp += 16;
    qtest_memwrite(r->qts, h->crcbap + 36, &h->cmd_wp, 8);
    mhi_write64(r, i, CRDB, h->cmd_wp);
    for (int n = 0; n < POLLS && (qtest_readl(r->qts, ctx) & 0xff) != 2; n++) {
        let_time_pass(r);
    }
    g_assert_cmpuint(qtest_readl(r->qts, ctx) & 0xff, ==, 2); /* RUNNING */
}

/*
 * One TRE (IEOT) on channel `ch`'s ring at `ring`, and the doorbell's high
 * half; returns the low half, which completes the doorbell.
 */
static uint32_t put_tre(Rig *r, int i, unsigned ch, uint64_t ring,
                        uint64_t buf, uint32_t len)
{
    uint64_t wp = ring + 16;

    write_element(r, ring, buf, len, (0x02u << 16) | (1u << 9));
    qtest_memwrite(r->qts, hosts[i].ccabap + ch * CTX_SIZE + 36, &wp, 8);
    mhi_write(r, i, CHDB(ch) + 4, wp >> 32);
    return (uint32_t)wp;
}

/* One TRE on channel `ch`'s ring at `ring`, and its doorbell. */
static void queue_tre(Rig *r, int i, unsigned ch, uint64_t ring,
                      uint64_t buf, uint32_t len)
{
    mhi_write(r, i, CHDB(ch), put_tre(r, i, ch, ring, buf, len));
}

/*
 * The test's end of the qtest socket. libqtest keeps it to itself; it is
 * the socket whose name is libqtest's qtest-PID.sock (QMP's is .qmp).
 */
static int qtest_socket(void)
{
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_un a;
        socklen_t len = sizeof(a);

        if (!getsockname(fd, (struct sockaddr *)&a, &len) &&
            a.sun_family == AF_UNIX && g_str_has_suffix(a.sun_path, ".sock")) {
            return fd;
        }
    }
    g_assert_not_reached();
}

/*
 * qtest commands in one write: QEMU's main loop reads them at once and runs
 * them one after the other without letting the BQL go in between, which
 * libqtest's one command, one answer cannot do. Each must answer OK.
 */
static void qtest_batch(const char *cmds)
{
    int fd = qtest_socket();
    size_t left = strlen(cmds), lines = 0;
    GString *answers = g_string_new(NULL);
    g_auto(GStrv) answer = NULL;
    char c;

    for (const char *p = cmds; *p; p++) {
        lines += *p == '\n';
    }
    while (left) {
        ssize_t n = write(fd, cmds, left);

        g_assert_cmpint(n, >, 0);
        cmds += n;
        left -= n;
    }
    while (lines && read(fd, &c, 1) == 1) {
        g_string_append_c(answers, c);
        lines -= c == '\n';
    }
    g_assert_cmpuint(lines, ==, 0);
    answer = g_strsplit(answers->str, "\n", -1);
    for (char **l = answer; *l && **l; l++) {
        g_assert_true(g_str_has_prefix(*l, "OK"));
    }
    g_string_free(answers, true);
}

/* Brings card i to M0 with its event ring in guest memory; returns it. */
static uint64_t card_to_m0(Rig *r, int i)
{
    uint64_t events = guest_alloc(&r->qs->alloc, EVENTS * 16);

    qtest_memset(r->qts, events, 0, EVENTS * 16);
    start_m0(r, i, events);
    g_assert_true(await_state(r, i, MHI_STATE_M0));
    return events;
}

static uint8_t event_type(Rig *r, uint64_t events, int n)
{
    return qtest_readb(r->qts, events + n * 16 + 14);
}

/* ---- cases --------------------------------------------------------- */

static void test_pci_identity(void)
{
    Rig *r = rig_new(1, "");
    QPCIDevice *d = r->card[0].dev;
    uint8_t msi = qpci_find_capability(d, PCI_CAP_ID_MSI, 0);

    g_assert_cmphex(qpci_config_readw(d, PCI_VENDOR_ID), ==, 0x17cb);
    g_assert_cmphex(qpci_config_readw(d, PCI_DEVICE_ID), ==, 0xa100);
    g_assert_cmphex(qpci_config_readw(d, PCI_CLASS_DEVICE), ==, 0x1200);
    g_assert_cmpuint(qpci_config_readb(d, PCI_INTERRUPT_PIN), ==, 0);
    for (int bar = 0; bar < 6; bar += 2) {
        uint32_t lo = qpci_config_readl(d, PCI_BASE_ADDRESS_0 + bar * 4);

        g_assert_cmphex(lo & 0x7, ==, PCI_BASE_ADDRESS_MEM_TYPE_64);
    }
    g_assert_cmpuint(msi, !=, 0);
    /* 32 vectors offered (Multiple Message Capable = 5), 64-bit, maskable. */
    g_assert_cmphex((qpci_config_readw(d, msi + PCI_MSI_FLAGS) >> 1) & 7, ==, 5);
    g_assert_cmpuint(qpci_find_capability(d, PCI_CAP_ID_MSIX, 0), ==, 0);
    g_assert_cmpuint(qpci_find_capability(d, PCI_CAP_ID_EXP, 0), !=, 0);
    rig_free(r);
}

/*
 * AIC200 as upstream qaic's bar_mask 0x17 wants it: BAR0 and BAR1 32-bit
 * memory (MHI in BAR1, the MSI-X table in BAR0), BAR2 and BAR4 64-bit;
 * MSI-X with room for the 17 vectors upstream asks for, and MSI.
 */
static void test_aic200_pci_identity(void)
{
    Rig *r = rig_new_of("aic200", 1, "");
    QPCIDevice *d = r->card[0].dev;
    uint8_t msix = qpci_find_capability(d, PCI_CAP_ID_MSIX, 0);

    g_assert_cmphex(qpci_config_readw(d, PCI_DEVICE_ID), ==, 0xa110);
    g_assert_cmphex(qpci_config_readw(d, PCI_SUBSYSTEM_ID), ==, 0xa110);
    g_assert_cmphex(qpci_config_readw(d, PCI_CLASS_DEVICE), ==, 0x1200);
    for (int bar = 0; bar < 2; bar++) {
        uint32_t lo = qpci_config_readl(d, PCI_BASE_ADDRESS_0 + bar * 4);

        g_assert_cmphex(lo & 0x7, ==, PCI_BASE_ADDRESS_MEM_TYPE_32);
    }
    for (int bar = 2; bar < 6; bar += 2) {
        uint32_t lo = qpci_config_readl(d, PCI_BASE_ADDRESS_0 + bar * 4);

        g_assert_cmphex(lo & 0x7, ==, PCI_BASE_ADDRESS_MEM_TYPE_64);
    }
    g_assert_cmpuint(msix, !=, 0);
    g_assert_cmpuint((qpci_config_readw(d, msix + PCI_MSIX_FLAGS) & PCI_MSIX_FLAGS_QSIZE) + 1, >=, 17);
    g_assert_cmpuint(qpci_config_readl(d, msix + PCI_MSIX_TABLE) & PCI_MSIX_TABLE_BIR, ==, 0);
    g_assert_cmpuint(qpci_find_capability(d, PCI_CAP_ID_MSI, 0), !=, 0);
    rig_free(r);
}

static void mhi_reaches_m0_on(const char *model)
{
    Rig *r = rig_new_of(model, 1, "");
    uint64_t events;

    g_assert_cmphex(mhi_read(r, 0, MHIVER), ==, 0x01000000);
    g_assert_cmpuint(mhi_read(r, 0, BHI_EXECENV), ==, EE_AMSS);
    events = card_to_m0(r, 0);
    g_assert_cmphex(event_type(r, events, 0), ==, EVT_STATE_CHANGE);
    g_assert_cmphex(event_type(r, events, 1), ==, EVT_EXEC_ENV);
    g_assert_cmpuint(qtest_readb(r->qts, events + 16 + 11), ==, EE_AMSS);
    rig_free(r);
}

static void test_mhi_reaches_m0_and_posts_its_events(void)
{
    mhi_reaches_m0_on("aic100");
}

/* The same MHI, through BAR1. */
static void test_aic200_mhi_reaches_m0_through_bar1(void)
{
    mhi_reaches_m0_on("aic200");
}

/*
 * The card's first events aimed at its root port's config space: the
 * second one (EXEC_ENV, type 0x40 in byte 14) lands on Bridge Control
 * (0x3e) and sets Secondary Bus Reset (0x40). QEMU resets the card from
 * inside the card's own pass; the card must finish the pass first, then
 * come back from the reset, and QEMU must survive.
 */
static void test_dma_into_root_port_resets_the_card(void)
{
    Rig *r = rig_new(1, "");
    uint64_t rp_ecam = ECAM_OF(0, RP_DEVFN(0));
    g_autofree char *state = NULL;

    start_m0(r, 0, rp_ecam + 0x20);
    for (int n = 0; n < POLLS && !(qpci_config_readw(r->card[0].rp,
                                    PCI_BRIDGE_CONTROL) & PCI_BRIDGE_CTL_BUS_RESET); n++) {
        let_time_pass(r);
    }
    g_assert_cmphex(qpci_config_readw(r->card[0].rp, PCI_BRIDGE_CONTROL) &
                    PCI_BRIDGE_CTL_BUS_RESET, ==, PCI_BRIDGE_CTL_BUS_RESET);
    /* Out of reset, as firmware would put it back: the card comes up. */
    qpci_config_writew(r->card[0].rp, PCI_BRIDGE_CONTROL, 0);
    open_root_port(r, 0);
    g_free(r->card[0].dev);
    map_card(r, 0);
    state = card_state(r, 0);
    g_assert_null(strstr(state, "state=M0"));
    card_to_m0(r, 0);
    rig_free(r);
}

/* Card 0's events land in card 1's MHI registers: card 1 keeps working. */
static void test_dma_into_another_cards_bar(void)
{
    Rig *r = rig_new(2, "");

    start_m0(r, 0, r->card[1].bar0_addr + 0x100);
    g_assert_true(await_state(r, 0, MHI_STATE_M0));
    g_assert_cmphex(mhi_read(r, 1, MHIVER), ==, 0x01000000);
    card_to_m0(r, 1);
    rig_free(r);
}

/*
 * A card's events aimed at its own BAR0: QEMU's re-entrancy guard refuses
 * the DMA, so event ring 0 is unusable and the card enters SYS_ERR (0xff),
 * its registers still answering.
 */
static void test_dma_into_own_bar_is_refused(void)
{
    Rig *r = rig_new(1, "");

    start_m0(r, 0, r->card[0].bar0_addr + 0x40);
    g_assert_true(await_state(r, 0, 0xff));
    g_assert_cmphex(mhi_read(r, 0, MHIVER), ==, 0x01000000);
    rig_free(r);
}

/* ACPI PCI hotplug's registers on q35 (QEMU's hw/acpi/pcihp.c). */
#define PCIHP_BASE 0x0cc0
#define PCIHP_EJECT (PCIHP_BASE + 0x08)
#define PCIHP_SELECT (PCIHP_BASE + 0x10)

/* The ACPI hotplug number QEMU gave root port i's bus at reset. */
static int64_t acpi_bus_select(Rig *r, int i)
{
    g_autofree char *bus = g_strdup_printf("/machine/peripheral/rp%d/rp%d", i, i);
    QDict *rsp = qtest_qmp(r->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': 'acpi-pcihp-bsel'}}", bus);
    int64_t bsel;

    g_assert(qdict_haskey(rsp, "return"));
    bsel = qdict_get_int(rsp, "return");
    qobject_unref(rsp);
    return bsel;
}

/*
 * device_del while the card works: the test ejects it as the guest's ACPI
 * code would, and the card goes while its thread and timers run. A BAR0
 * access after that reaches no core.
 *
 * Meanwhile another thread waits for the BQL to touch the card, as a vCPU
 * does. It cannot be a thread of the test: QEMU runs every qtest command on
 * its main loop, one after the other, and the unplug too, so a second test
 * thread's access lands before or after the unplug, never inside it. It is
 * card 1's worker: one batch rings card 1's doorbell (the worker wakes and
 * waits for the BQL) and ejects card 0. Card 1's loopback then copies two
 * zero bytes into card 0's COMMAND register through ECAM. Were the BQL let
 * go in the middle of card 0's unrealize, that write would find card 0 on
 * the bus with its BARs already unmapped, and QEMU's pci_update_mappings()
 * would unmap them again (an assertion). Once the unplug is whole, it
 * finds no device. (The eject is ACPI's, not Slot Control's: a config
 * write would hold the host bridge's re-entrancy guard across the unplug,
 * and QEMU would refuse card 1's write to ECAM for that alone.)
 */
static void test_unplug_while_working(void)
{
    Rig *r = rig_new_with("aic100", 2, "", true);
    QGuestAllocator *a = &r->qs->alloc;
    uint64_t ul = guest_alloc(a, 64), dl = guest_alloc(a, 64);
    uint64_t zeros = guest_alloc(a, 16);
    g_autofree char *batch = NULL;
    uint32_t doorbell;
    QDict *rsp;

    card_to_m0(r, 0);
    card_to_m0(r, 1);
    start_channel(r, 1, 0, ul);
    start_channel(r, 1, 1, dl);
    qtest_writew(r->qts, zeros, 0);
    queue_tre(r, 1, 1, dl, ECAM_OF(1, 0) + PCI_COMMAND, 2);
    doorbell = put_tre(r, 1, 0, ul, zeros, 2);
    qtest_qmp_device_del_send(r->qts, "card0");
    qtest_outl(r->qts, PCIHP_SELECT, acpi_bus_select(r, 0));
    batch = g_strdup_printf("writel 0x%" PRIx64 " 0x%x\n"
                            "outl 0x%x 0x1\n",
                            r->card[1].bar0_addr + CHDB(0), doorbell,
                            PCIHP_EJECT);
    qtest_batch(batch);
    qtest_qmp_eventwait(r->qts, "DEVICE_DELETED");
    rsp = qtest_qmp(r->qts, "{'execute': 'query-status'}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    g_assert_cmphex(qpci_config_readw(r->card[0].dev, PCI_VENDOR_ID), ==, 0xffff);
    g_assert_cmphex(mhi_read(r, 0, MHIVER), !=, 0x01000000);
    g_assert_cmphex(mhi_read(r, 1, MHIVER), ==, 0x01000000);
    g_assert_cmpuint(mhi_state(r, 1), ==, MHI_STATE_M0);
    rig_free(r);
}

/*
 * The card's loopback copies what the host sends on channel 0 into the
 * buffer queued on channel 1: a buffer at the root port's Slot Control
 * (through ECAM) and two bytes that power the slot off. QEMU unplugs the
 * card on the card's own thread, inside its pass; the card must go once
 * the pass ends (no self-join, no use of freed config space).
 */
static void test_dma_powers_off_its_own_slot(void)
{
    Rig *r = rig_new(1, "");
    QPCIDevice *rp = r->card[0].rp;
    uint8_t exp = qpci_find_capability(rp, PCI_CAP_ID_EXP, 0);
    uint64_t sltctl_at = ECAM_OF(0, RP_DEVFN(0)) + exp + PCI_EXP_SLTCTL;
    uint16_t off = qpci_config_readw(rp, exp + PCI_EXP_SLTCTL) |
                   PCI_EXP_SLTCTL_PWR_OFF | PCI_EXP_SLTCTL_PWR_IND_OFF;
    QGuestAllocator *a = &r->qs->alloc;
    uint64_t ul = guest_alloc(a, 64), dl = guest_alloc(a, 64);
    uint64_t data = guest_alloc(a, 16);
    QDict *rsp;

    card_to_m0(r, 0);
    start_channel(r, 0, 0, ul);
    start_channel(r, 0, 1, dl);
    qtest_writew(r->qts, data, off);
    queue_tre(r, 0, 1, dl, sltctl_at, 2);
    queue_tre(r, 0, 0, ul, data, 2);
    qtest_qmp_eventwait(r->qts, "DEVICE_DELETED");
    /* The deferred free runs in the main loop; QEMU is still there. */
    qtest_clock_step(r->qts, 1000 * 1000);
    rsp = qtest_qmp(r->qts, "{'execute': 'query-status'}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    g_assert_cmphex(qpci_config_readw(r->card[0].dev, PCI_VENDOR_ID), ==, 0xffff);
    rig_free(r);
}

/* One card, in a QEMU whose glibc fills what it frees. */
static Rig *rig_poisoning_frees(void)
{
    Rig *r;

    /* A use of freed memory then shows without ASan. */
    g_setenv("MALLOC_PERTURB_", "165", true);
    r = rig_new(1, "");
    g_unsetenv("MALLOC_PERTURB_");
    return r;
}

/*
 * The guest aims the card's MSI at its root port's Slot Control, with
 * data that powers the slot off; then the host operator injects SYS_ERR
 * (qom-set ... inject syserr). The card posts SYS_ERR and raises the MSI:
 * QEMU unplugs the card from inside the injection. The card must go once
 * the injection ends, not under it (the core freed while it runs).
 */
static void test_inject_whose_msi_powers_off_the_slot(void)
{
    Rig *r = rig_poisoning_frees();
    QPCIDevice *rp = r->card[0].rp, *dev = r->card[0].dev;
    uint8_t exp = qpci_find_capability(rp, PCI_CAP_ID_EXP, 0);
    uint8_t msi = qpci_find_capability(dev, PCI_CAP_ID_MSI, 0);
    uint64_t sltctl_at = ECAM_OF(0, RP_DEVFN(0)) + exp + PCI_EXP_SLTCTL;
    uint16_t off = qpci_config_readw(rp, exp + PCI_EXP_SLTCTL) |
                   PCI_EXP_SLTCTL_PWR_OFF | PCI_EXP_SLTCTL_PWR_IND_OFF;
    QDict *rsp;

    card_to_m0(r, 0);
    qpci_config_writel(dev, msi + PCI_MSI_ADDRESS_LO, (uint32_t)sltctl_at);
    qpci_config_writel(dev, msi + PCI_MSI_ADDRESS_HI, sltctl_at >> 32);
    qpci_config_writew(dev, msi + PCI_MSI_DATA_64, off);
    qpci_config_writew(dev, msi + PCI_MSI_FLAGS, PCI_MSI_FLAGS_ENABLE);
    rsp = qtest_qmp(r->qts, "{'execute': 'qom-set', 'arguments': "
                    "{'path': 'card0', 'property': 'inject', 'value': 'syserr'}}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_qmp_eventwait(r->qts, "DEVICE_DELETED");
    rsp = qtest_qmp(r->qts, "{'execute': 'query-status'}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    g_assert_cmphex(qpci_config_readw(dev, PCI_VENDOR_ID), ==, 0xffff);
    rig_free(r);
}

/*
 * Not the card's: QEMU's intel-iommu asserted on an 8-byte write to a
 * 32-bit register, which generic-fuzz found on the card's IOMMU
 * configuration (patches/qemu/0003). QEMU must stay up.
 */
static void test_iommu_wide_write_to_32bit_register(void)
{
    QTestState *qts = qtest_initf("-machine q35 -nodefaults -display none "
                                  "-device intel-iommu,intremap=off %s", qemu_extra());
    QDict *rsp;

    qtest_writeq(qts, 0xfed900a0, 0); /* IECTL */
    qtest_writeq(qts, 0xfed9009c, 0); /* ICS */
    rsp = qtest_qmp(qts, "{'execute': 'query-status'}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_quit(qts);
}

static void add_case(const char *name, void (*fn)(void))
{
    g_autofree char *path = g_strdup_printf("/aic100/%s", name);

    qtest_add_func(path, fn);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    add_case("pci-identity", test_pci_identity);
    add_case("mhi-m0-events", test_mhi_reaches_m0_and_posts_its_events);
    add_case("dma-into-root-port-sbr", test_dma_into_root_port_resets_the_card);
    add_case("dma-into-another-card", test_dma_into_another_cards_bar);
    add_case("dma-into-own-bar", test_dma_into_own_bar_is_refused);
    add_case("unplug-while-working", test_unplug_while_working);
    add_case("dma-powers-off-own-slot", test_dma_powers_off_its_own_slot);
    add_case("inject-msi-powers-off-slot",
             test_inject_whose_msi_powers_off_the_slot);
    add_case("iommu-wide-write", test_iommu_wide_write_to_32bit_register);
    add_case("aic200-pci-identity", test_aic200_pci_identity);
    add_case("aic200-mhi-m0-through-bar1", test_aic200_mhi_reaches_m0_through_bar1);
    return g_test_run();
}
