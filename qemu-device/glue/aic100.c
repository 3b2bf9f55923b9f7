/*
 * QEMU glue for the virtual Qualcomm Cloud AI 100 (AIC100) card, and for
 * its AIC200 sibling (-device aic200, a subtype with the same properties).
 *
 * The card's behaviour lives in the C++ device core (../core); this file only
 * wires it to QEMU: PCI identity and capabilities, the BARs, MSI (and MSI-X
 * on AIC200), DMA through the device's PCI address space (so an IOMMU
 * translates it), the virtual clock and reset.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/thread.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "system/dma.h"
#include "trace.h"

#include "aic100/aic100_core.h"
#include "aic100/pci_identity.h"

#define TYPE_AIC100 "aic100"
OBJECT_DECLARE_SIMPLE_TYPE(Aic100State, AIC100)


/*
 * AIC200 (docs/aic200.md): upstream qaic asks for 17 vectors, MSI-X first,
 * so the table has more; it sits in BAR0 after the PCIe capability's end.
 */
#define TYPE_AIC200 "aic200"

struct Aic100State {
    PCIDevice parent_obj;

    MemoryRegion bar0; /* MHI */
    MemoryRegion bar2; /* DMA Bridge */
    MemoryRegion bar4; /* no function, or the test mailbox */
    /* AIC200: MHI moves to BAR1; BAR0 holds the MSI-X table and PBA. */
    MemoryRegion bar1;
    MemoryRegion msix_bar;
    Aic100Family family; /* set by the type: aic100 or aic200 */

    Aic100Core *core;
    QEMUBH *work_bh;   /* runs the work register writes queued */
    QEMUTimer *timer;  /* the core's timed work */
    /*
     * With worker-thread=on the queued work runs on a thread of the card's
     * own instead of the bottom half: a doorbell then waits for that
     * thread to get the BQL, not for QEMU's main loop to come round. The
     * thread holds a reference to the card and ends on its own once told
     * to (worker_stop): no one waits for it.
     */
    QemuThread worker;
    QemuEvent worker_event; /* set: work is queued, or the worker must end */
    bool worker_running;
    bool worker_stop;
    /*
     * With dbc-lockless=on, vCPUs access BAR2 without the BQL (the DMA
     * Bridge locks for itself): the BQL no longer keeps those accesses
     * from overlapping the core's end, so they are counted, and the core
     * is freed once none is left.
     */
    unsigned bar2_users;
    bool bar2_closed;
    /*
     * The card's own DMA or MSI can reach QEMU's config space (ECAM) and
     * so unplug the card from inside its pass (a slot powered off through
     * the root port); an injection counts as a pass. in_pass is set while
     * the pass runs (under the BQL); an unrealize that finds it set leaves
     * the core to the pass's end (free_after_pass) and cuts the core off
     * from QEMU at once (gone).
     */
    bool in_pass;
    bool free_after_pass;
    bool gone;
    /*
     * The card's name in the QOM tree, for messages: looked up once, since
     * a BAR2 access without the BQL may report a guest error and the QOM
     * tree is the BQL's.
     */
    const char *name;

    /* properties */
    uint16_t device_id;
    uint32_t nsp_count;
    uint64_t ddr_size;
    uint64_t bar4_size;
    uint32_t serial;
    char *boot;
    bool worker_thread;
    bool dbc_lockless;
    bool crc;
    bool test_mailbox;
    int64_t soc_temp, board_temp, ddr_temp, board_power;
};

/* ---- host interface for the core ---------------------------------------- */

static int aic100_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    Aic100State *s = opaque;
    MemTxResult r;

    if (s->gone) {
        return 1;
    }
    r = pci_dma_read(PCI_DEVICE(s), addr, buf, len);

    if (r != MEMTX_OK) {
        trace_aic100_err_dma("read", addr, len, r);
    }
    return r != MEMTX_OK;
}

static int aic100_dma_write(void *opaque, uint64_t addr, const void *buf,
                            size_t len)
{
    Aic100State *s = opaque;
    MemTxResult r;

    if (s->gone) {
        return 1;
    }
    r = pci_dma_write(PCI_DEVICE(s), addr, buf, len);

    if (r != MEMTX_OK) {
        trace_aic100_err_dma("write", addr, len, r);
    }
    return r != MEMTX_OK;
}

/*
 * Where the card's DMA at `addr` lands, through the IOMMU if there is one:
 * outside RAM QEMU dispatches every few bytes on its own, so the core
 * limits how many such bytes one pass may move.
 */
static uint64_t aic100_dma_ram_extent(void *opaque, uint64_t addr,
                                      uint64_t len, bool is_write, bool *ram)
{
    Aic100State *s = opaque;
    AddressSpace *as;
    MemoryRegion *mr;
    hwaddr xlat, l = len;

    if (s->gone) {
        *ram = true; /* the DMA fails at once, dispatching nothing */
        return len;
    }
    as = pci_get_address_space(PCI_DEVICE(s));
    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(as, addr, &xlat, &l, is_write,
                                 MEMTXATTRS_UNSPECIFIED);
    *ram = memory_access_is_direct(mr, is_write, MEMTXATTRS_UNSPECIFIED);
    return MAX(MIN(l, len), 1);
}

/*
 * MSI-X has no Multiple Message Enable: the vectors the host set up are the
 * entries it programmed, from 0. Upstream qaic falls back to a single
 * vector when it cannot have 17, and then waits on vector 0 for all.
 */
static unsigned aic200_msix_vectors_set_up(PCIDevice *pdev)
{
    unsigned n = msix_nr_vectors_allocated(pdev);

    while (n > 1 && !msix_get_message(pdev, n - 1).address) {
        n--;
    }
    return n;
}

static unsigned aic100_msi_vectors_enabled(void *opaque)
{
    Aic100State *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);

    if (s->gone) {
        return 0; /* config space is freed after unrealize */
    }
    if (msix_enabled(pdev)) {
        return aic200_msix_vectors_set_up(pdev);
    }
    return msi_enabled(pdev) ? msi_nr_vectors_allocated(pdev) : 0;
}

static void aic100_raise_msi(void *opaque, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);
    unsigned nr = aic100_msi_vectors_enabled(opaque);

    if (!nr) {
        trace_aic100_msi_disabled(vector);
        return;
    }
    if (vector >= nr) {
        vector = 0; /* the core folds vectors; stay safe if it did not */
    }
    trace_aic100_msi(vector);
    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
        return;
    }
    msi_notify(pdev, vector);
}

static uint64_t aic100_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static const char *aic100_name(Aic100State *s)
{
    return s->name ? s->name : object_get_canonical_path_component(OBJECT(s));
}

static void aic100_guest_error(void *opaque, const char *msg)
{
    const char *card = aic100_name(opaque);

    trace_aic100_guest_error(card, msg);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s\n", card, msg);
}

static void aic100_kick(void *opaque)
{
    Aic100State *s = opaque;

    if (s->worker_running) {
        qemu_event_set(&s->worker_event);
    } else {
        qemu_bh_schedule(s->work_bh);
    }
}

static void aic100_arm_timer(void *opaque, uint64_t deadline_ns)
{
    Aic100State *s = opaque;

    if (deadline_ns == UINT64_MAX) {
        timer_del(s->timer);
    } else {
        timer_mod(s->timer, MIN(deadline_ns, (uint64_t)INT64_MAX));
    }
}

static void aic100_trace_note(void *opaque, const char *msg)
{
    trace_aic100_core(aic100_name(opaque), msg);
}

static void aic100_free_core(Aic100State *s);

/* The rest of an unrealize that came from inside the card's pass. */
static void aic100_free_after_pass(void *opaque)
{
    Aic100State *s = opaque;

    trace_aic100_core(s->name, "freed after the pass that unplugged it");
    aic100_free_core(s);
    object_unref(OBJECT(s));
}

/* The end of a pass: the rest of an unplug that came from inside it. */
static void aic100_end_pass(Aic100State *s)
{
    s->in_pass = false;
    if (s->free_after_pass) {
        /*
         * Not here: the core's own frames (and, on the worker, this
         * thread's) are still below us. The main loop does it.
         */
        s->free_after_pass = false;
        aio_bh_schedule_oneshot(qemu_get_aio_context(), aic100_free_after_pass,
                                s);
    }
}

static void aic100_work(void *opaque)
{
    Aic100State *s = opaque;

    if (!s->core || s->gone) {
        return;
    }
    s->in_pass = true;
    aic100_core_process(s->core);
    aic100_end_pass(s);
}

/*
 * Timed work goes where the rest goes (the bottom half or the worker): only
 * there does it run under the device's re-entrancy guard, which keeps the
 * card's own DMA out of its BARs while it works.
 */
static void aic100_timer_expired(void *opaque)
{
    aic100_kick(opaque);
}

/*
 * The worker thread: the core's work under the BQL, as the bottom half
 * runs it, and under the device's re-entrancy guard, as a guarded bottom
 * half sets it. The BQL also orders it with the vCPUs' register accesses,
 * reset and the MSI. It ends when told to, and drops its reference to the
 * card (under the BQL, as the card may go with it).
 */
static void *aic100_worker(void *opaque)
{
    Aic100State *s = opaque;
    MemReentrancyGuard *guard = &DEVICE(s)->mem_reentrancy_guard;
    bool engaged;

    for (;;) {
        qemu_event_wait(&s->worker_event);
        /* Work queued from here on sets the event again. */
        qemu_event_reset(&s->worker_event);
        if (qatomic_read(&s->worker_stop)) {
            break;
        }
        bql_lock();
        engaged = guard->engaged_in_io;
        guard->engaged_in_io = true;
        aic100_work(s);
        guard->engaged_in_io = engaged;
        bql_unlock();
    }
    /* No one sets the event now: the core and its NSP threads are gone. */
    qemu_event_destroy(&s->worker_event);
    bql_lock();
    object_unref(OBJECT(s));
    bql_unlock();
    return NULL;
}

static void aic100_worker_start(Aic100State *s)
{
    qemu_event_init(&s->worker_event, false);
    s->worker_stop = false;
    object_ref(OBJECT(s)); /* the worker's, until it ends */
    qemu_thread_create(&s->worker, "aic100-worker", aic100_worker, s,
                       QEMU_THREAD_DETACHED);
    s->worker_running = true;
}

/*
 * Tells the worker to end, and does not wait: the caller holds the BQL,
 * which the worker may be waiting for, and an unrealize must not let it
 * go (a vCPU, or another card's pass, would then find this card half
 * unplugged). With the core gone, a turn the worker still takes does
 * nothing.
 */
static void aic100_worker_stop(Aic100State *s)
{
    if (!s->worker_running) {
        return;
    }
    s->worker_running = false;
    qatomic_set(&s->worker_stop, true);
    qemu_event_set(&s->worker_event);
}

static const Aic100HostOps aic100_host_ops = {
    .dma_read = aic100_dma_read,
    .dma_write = aic100_dma_write,
    .raise_msi = aic100_raise_msi,
    .msi_vectors_enabled = aic100_msi_vectors_enabled,
    .now_ns = aic100_now_ns,
    .guest_error = aic100_guest_error,
    .kick = aic100_kick,
    .arm_timer = aic100_arm_timer,
    .trace = aic100_trace_note,
    .dma_ram_extent = aic100_dma_ram_extent,
};

/* ---- BARs ---------------------------------------------------------- */

/*
 * s->core is NULL once the card is unplugged: a vCPU that found the BAR
 * before it was unmapped, and then waited for the BQL, still comes here.
 */
static uint64_t aic100_bar_read(Aic100State *s, unsigned bar, hwaddr addr,
                                unsigned size)
{
    uint64_t val;

    if (!s->core) {
        trace_aic100_mmio_after_unplug(bar, addr, size);
        return 0;
    }
    val = aic100_core_bar_read(s->core, bar, addr, size);

    trace_aic100_mmio_read(bar, addr, size, val);
    return val;
}

static void aic100_bar_write(Aic100State *s, unsigned bar, hwaddr addr,
                             uint64_t val, unsigned size)
{
    trace_aic100_mmio_write(bar, addr, size, val);
    if (!s->core) {
        trace_aic100_mmio_after_unplug(bar, addr, size);
        return;
    }
    aic100_core_bar_write(s->core, bar, addr, val, size);
}

#define AIC100_BAR_OPS(n)                                                      \
    static uint64_t aic100_bar##n##_read(void *opaque, hwaddr addr,            \
                                         unsigned size)                        \
    {                                                                          \
        return aic100_bar_read(opaque, n, addr, size);                         \
    }                                                                          \
    static void aic100_bar##n##_write(void *opaque, hwaddr addr, uint64_t val, \
                                      unsigned size)                           \
    {                                                                          \
        aic100_bar_write(opaque, n, addr, val, size);                          \
    }

AIC100_BAR_OPS(0)
AIC100_BAR_OPS(1)
AIC100_BAR_OPS(4)

/* BAR2 may be accessed without the BQL (dbc-lockless): see bar2_users. */
static uint64_t aic100_bar2_read(void *opaque, hwaddr addr, unsigned size)
{
    Aic100State *s = opaque;
    uint64_t val = 0;

    qatomic_inc(&s->bar2_users);
    if (!qatomic_read(&s->bar2_closed)) {
        val = aic100_bar_read(s, 2, addr, size);
    }
    qatomic_dec(&s->bar2_users);
    return val;
}

static void aic100_bar2_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    Aic100State *s = opaque;

    qatomic_inc(&s->bar2_users);
    if (!qatomic_read(&s->bar2_closed)) {
        aic100_bar_write(s, 2, addr, val, size);
    }
    qatomic_dec(&s->bar2_users);
}

/*
 * No BAR2 access is in flight or can start: the core may go. Under the
 * BQL the only such accesses are vCPUs' without it, which take nothing
 * but the DMA Bridge's own lock, and no one holds that for long without
 * the BQL: they end.
 */
static void aic100_close_bar2(Aic100State *s)
{
    qatomic_set(&s->bar2_closed, true);
    /* Flag, then count: a user increments (a full barrier), then reads it. */
    smp_mb();
    while (qatomic_read(&s->bar2_users)) {
        sched_yield();
    }
}

/* BAR0 is 32-bit registers plus the 64-bit QTIMER read. */
static const MemoryRegionOps aic100_bar0_ops = {
    .read = aic100_bar0_read,
    .write = aic100_bar0_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* AIC200's MHI BAR: the same registers as AIC100's BAR0. */
static const MemoryRegionOps aic100_bar1_ops = {
    .read = aic100_bar1_read,
    .write = aic100_bar1_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static const MemoryRegionOps aic100_bar2_ops = {
    .read = aic100_bar2_read,
    .write = aic100_bar2_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static const MemoryRegionOps aic100_bar4_ops = {
    .read = aic100_bar4_read,
    .write = aic100_bar4_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ---- QOM ----------------------------------------------------------- */

static void aic100_free_core(Aic100State *s)
{
    aic100_close_bar2(s);
    /*
     * The core first: freeing it stops the NSP threads, which schedule the
     * bottom half or wake the worker (kick) until they end.
     */
    aic100_core_free(s->core);
    s->core = NULL;
    aic100_worker_stop(s);
    if (s->timer) {
        timer_free(s->timer);
        s->timer = NULL;
    }
    if (s->work_bh) {
        qemu_bh_delete(s->work_bh);
        s->work_bh = NULL;
    }
}

/*
 * "inject": write a fault name to trigger it (qom-set from the monitor).
 * It runs as the card's pass does, under the re-entrancy guard and with
 * in_pass set: a fault's DMA and MSI go where the guest aimed them, and
 * an unplug or reset they cause takes effect once the injection ends.
 */
static void aic100_set_inject(Object *obj, const char *value, Error **errp)
{
    Aic100State *s = AIC100(obj);
    MemReentrancyGuard *guard = &DEVICE(s)->mem_reentrancy_guard;
    bool engaged = guard->engaged_in_io;
    char err[160];
    int failed;

    if (!s->core || s->gone) {
        error_setg(errp, "aic100: faults can be injected once the card runs");
        return;
    }
    trace_aic100_inject(s->name, value);
    guard->engaged_in_io = true;
    s->in_pass = true;
    failed = aic100_core_inject(s->core, value, err, sizeof(err));
    guard->engaged_in_io = engaged;
    aic100_end_pass(s);
    if (failed) {
        error_setg(errp, "aic100: %s", err);
    }
}

/* "state": where the card is (execution environment, MHI state, stage). */
static char *aic100_get_state(Object *obj, Error **errp)
{
    Aic100State *s = AIC100(obj);
    char buf[128];

    if (!s->core) {
        return g_strdup("not realized");
    }
    aic100_core_describe(s->core, buf, sizeof(buf));
    return g_strdup(buf);
}

/*
 * AIC200's MSI-X table and PBA, in BAR0, which the driver never maps. Every
 * vector is in use from the start: the core signals whichever the host has
 * set up.
 */
static bool aic200_init_msix(Aic100State *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned vector;

    if (msix_init(pdev, AIC200_PCI_MSIX_VECTORS, &s->msix_bar, 0, 0,
                  &s->msix_bar, 0, AIC200_PCI_MSIX_PBA_OFFSET,
                  AIC200_PCI_MSIX_OFFSET, errp)) {
        return false;
    }
    for (vector = 0; vector < AIC200_PCI_MSIX_VECTORS; vector++) {
        msix_vector_use(pdev, vector);
    }
    return true;
}

/* The core's configuration from the properties; false on a bad value. */
static bool aic100_make_config(Aic100State *s, Aic100Config *cfg,
                               Error **errp)
{
    aic100_core_default_config(cfg);
    cfg->family = s->family;
    cfg->device_id = s->device_id;
    cfg->nsp_count = s->nsp_count;
    cfg->ddr_size = s->ddr_size;
    cfg->bar4_size = s->bar4_size;
    if (!s->boot || !strcmp(s->boot, "full")) {
        cfg->boot_amss = false;
    } else if (!strcmp(s->boot, "amss")) {
        cfg->boot_amss = true;
    } else {
        error_setg(errp, "aic100: boot=%s: must be 'full' or 'amss'", s->boot);
        return false;
    }
    cfg->nnc_crc = s->crc;
    cfg->test_mailbox = s->test_mailbox;
    cfg->soc_temp_mc = s->soc_temp;
    cfg->board_temp_mc = s->board_temp;
    cfg->ddr_temp_mc = s->ddr_temp;
    cfg->board_power_uw = s->board_power;
    if (s->serial) {
        cfg->serial_number = s->serial;
    } else {
        /* Distinct per card and stable for a given command line. */
        g_autofree char *path = object_get_canonical_path(OBJECT(s));
        cfg->serial_number = 0xA1000000u | (g_str_hash(path) & 0x00FFFFFFu);
    }
    return true;
}

/* The core, and where its work runs: the bottom half or the worker. */
static bool aic100_start_core(Aic100State *s, const Aic100Config *cfg,
                              Error **errp)
{
    char err[160];

    s->name = object_get_canonical_path_component(OBJECT(s));
    s->work_bh = qemu_bh_new_guarded(aic100_work, s,
                                     &DEVICE(s)->mem_reentrancy_guard);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, aic100_timer_expired, s);
    if (s->worker_thread) {
        aic100_worker_start(s);
    }
    s->core = aic100_core_new(cfg, &aic100_host_ops, s, err, sizeof(err));
    if (!s->core) {
        error_setg(errp, "aic100: %s", err);
        return false;
    }
    return true;
}

static void aic100_init_config_space(PCIDevice *pdev, uint16_t device_id)
{
    pci_config_set_device_id(pdev->config, device_id);
    pci_config_set_class(pdev->config, AIC100_PCI_CLASS_ACCEL);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_VENDOR_ID, AIC100_PCI_VENDOR_ID);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_ID, device_id);
    /* MSI (and MSI-X on AIC200) only: no INTx pin. */
    pdev->config[PCI_INTERRUPT_PIN] = 0;
}

/* The memory behind each BAR; which BAR shows which is the ABI's table. */
static void aic100_init_regions(Aic100State *s)
{
    memory_region_init_io(&s->bar0, OBJECT(s), &aic100_bar0_ops, s,
                          "aic100-mhi", AIC100_PCI_MHI_BAR_SIZE);
    if (s->family == AIC100_FAMILY_AIC200) {
        memory_region_init_io(&s->bar1, OBJECT(s), &aic100_bar1_ops, s,
                              "aic200-mhi", AIC100_PCI_MHI_BAR_SIZE);
        memory_region_init(&s->msix_bar, OBJECT(s), "aic200-msix",
                           AIC200_PCI_MSIX_BAR_SIZE);
    }
    memory_region_init_io(&s->bar2, OBJECT(s), &aic100_bar2_ops, s,
                          "aic100-dma-bridge", AIC100_PCI_DMA_BRIDGE_BAR_SIZE);
    /*
     * A doorbell (REQTP) or a response pointer (RSPTP, RSPHP) then waits
     * for the DMA Bridge alone, not for whoever holds the BQL. The card
     * refuses its own DMA into BAR2 itself (the re-entrancy guard is off
     * for a lockless region).
     */
    if (s->dbc_lockless) {
        memory_region_enable_lockless_io(&s->bar2);
    }
    memory_region_init_io(&s->bar4, OBJECT(s), &aic100_bar4_ops, s,
                          "aic100-bar4", s->bar4_size);
}

static MemoryRegion *aic100_bar_region(Aic100State *s,
                                       enum aic100_pci_bar_role role)
{
    switch (role) {
    case AIC100_PCI_BAR_MHI:
        return s->family == AIC100_FAMILY_AIC200 ? &s->bar1 : &s->bar0;
    case AIC100_PCI_BAR_DMA_BRIDGE:
        return &s->bar2;
    case AIC100_PCI_BAR_BAR4:
        return &s->bar4;
    case AIC100_PCI_BAR_MSIX:
        return &s->msix_bar;
    default:
        return NULL;
    }
}

/*
 * The family's BARs (aic100_pci_bars): the AIC200's BAR0 and BAR1 are
 * 32-bit, as upstream qaic's bar_mask 0x17 insists (a 64-bit BAR0 would
 * take slot 1).
 */
static bool aic100_init_bars(Aic100State *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    bool aic200 = s->family == AIC100_FAMILY_AIC200;
    struct aic100_pci_bar bars[AIC100_PCI_BARS];
    MemoryRegion *mr;
    int i;

    aic100_init_regions(s);
    aic100_pci_bars(aic200, s->bar4_size, bars);
    for (i = 0; i < AIC100_PCI_BARS; i++) {
        mr = aic100_bar_region(s, bars[i].role);
        if (mr) {
            pci_register_bar(pdev, i, PCI_BASE_ADDRESS_SPACE_MEMORY |
                             (bars[i].is64 ? PCI_BASE_ADDRESS_MEM_TYPE_64 : 0),
                             mr);
        }
    }
    return !aic200 || aic200_init_msix(s, errp);
}

/* MSI and the PCI Express capability. */
static bool aic100_init_capabilities(PCIDevice *pdev, Error **errp)
{
    if (msi_init(pdev, AIC100_PCI_MSI_OFFSET, AIC100_PCI_MSI_VECTORS, true,
                 true, errp)) {
        return false;
    }
    if (pcie_endpoint_cap_init(pdev, AIC100_PCI_PCIE_OFFSET) < 0) {
        error_setg(errp, "aic100: cannot add the PCI Express capability");
        return false;
    }
    /* AIC100_PCI_LINK_WIDTH and _GTS: x8, 16 GT/s. No FLR capability. */
    QEMU_BUILD_BUG_ON(AIC100_PCI_LINK_WIDTH != 8 || AIC100_PCI_LINK_GTS != 16);
    pcie_cap_fill_link_ep_usp(pdev, QEMU_PCI_EXP_LNK_X8,
                              QEMU_PCI_EXP_LNK_16GT);
    return true;
}

static void aic100_realize(PCIDevice *pdev, Error **errp)
{
    Aic100State *s = AIC100(pdev);
    Aic100Config cfg;

    if (!aic100_make_config(s, &cfg, errp)) {
        return;
    }
    if (!aic100_start_core(s, &cfg, errp)) {
        goto fail;
    }
    aic100_init_config_space(pdev, s->device_id);
    if (!aic100_init_bars(s, errp) || !aic100_init_capabilities(pdev, errp)) {
        goto fail;
    }
    return;

fail:
    msi_uninit(pdev);
    msix_uninit(pdev, &s->msix_bar, &s->msix_bar);
    aic100_free_core(s);
}

static void aic100_exit(PCIDevice *pdev)
{
    Aic100State *s = AIC100(pdev);

    pcie_cap_exit(pdev);
    msi_uninit(pdev);
    msix_uninit(pdev, &s->msix_bar, &s->msix_bar);
    s->gone = true;
    if (s->in_pass) {
        /* The pass is using the core: it goes when the pass ends. */
        trace_aic100_core(s->name,
                          "unplugged by its own DMA or MSI: freed after the pass");
        s->free_after_pass = true;
        object_ref(OBJECT(s));
        return;
    }
    aic100_free_core(s);
}

static void aic100_reset_hold(Object *obj, ResetType type)
{
    Aic100State *s = AIC100(obj);

    if (s->core) {
        aic100_core_reset(s->core);
    }
}

static const Property aic100_props[] = {
    DEFINE_PROP_UINT16("device-id", Aic100State, device_id,
                       AIC100_PCI_DEVICE_ID),
    DEFINE_PROP_UINT32("nsps", Aic100State, nsp_count, 16),
    DEFINE_PROP_SIZE("ddr-size", Aic100State, ddr_size, 16 * GiB),
    DEFINE_PROP_SIZE("bar4-size", Aic100State, bar4_size,
                     AIC100_PCI_BAR4_DEFAULT_SIZE),
    DEFINE_PROP_UINT32("serial", Aic100State, serial, 0),
    /* "full": PBL, BHI, SBL and Sahara; "amss": start in mission mode. */
    DEFINE_PROP_STRING("boot", Aic100State, boot),
    /* The card's work on a thread of its own (else in QEMU's main loop). */
    DEFINE_PROP_BOOL("worker-thread", Aic100State, worker_thread, true),
    /* vCPUs access the DMA Bridge's registers without the BQL. */
    DEFINE_PROP_BOOL("dbc-lockless", Aic100State, dbc_lockless, true),
    /* The QSM asks the host to protect NNC messages with CRC-32. */
    DEFINE_PROP_BOOL("crc", Aic100State, crc, false),
    /* A fault-injection mailbox in BAR4 for guest-side tests. */
    DEFINE_PROP_BOOL("test-mailbox", Aic100State, test_mailbox, false),
    /* Sensors pinned from power-on, in m°C and µW; 0: modelled. */
    DEFINE_PROP_INT64("soc-temp", Aic100State, soc_temp, 0),
    DEFINE_PROP_INT64("board-temp", Aic100State, board_temp, 0),
    DEFINE_PROP_INT64("ddr-temp", Aic100State, ddr_temp, 0),
    DEFINE_PROP_INT64("board-power", Aic100State, board_power, 0),
};

static const VMStateDescription aic100_vmstate = {
    .name = TYPE_AIC100,
    /* Rings, DMA Bridge queues and running workloads are not migrated. */
    .unmigratable = 1,
};

static void aic100_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    pc->realize = aic100_realize;
    pc->exit = aic100_exit;
    pc->vendor_id = AIC100_PCI_VENDOR_ID;
    pc->device_id = AIC100_PCI_DEVICE_ID;
    pc->class_id = AIC100_PCI_CLASS_ACCEL;
    pc->revision = 0;
    rc->phases.hold = aic100_reset_hold;
    dc->desc = "Qualcomm Cloud AI 100 (virtual)";
    dc->vmsd = &aic100_vmstate;
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    device_class_set_props(dc, aic100_props);
    object_class_property_add_str(klass, "inject", NULL, aic100_set_inject);
    object_class_property_set_description(klass, "inject",
        "write a fault to inject it: syserr; "
        "crash dbc=N|nsp=N [hold=1] [reason=TEXT]; ssr release; "
        "ras ce|ue|ue_nf source=S [addr=A] [nsp=N] [temp=MC] [threshold=T]; "
        "sensor NAME=VALUE|auto; bootlog hold [ack_delay_ms=MS]|normal "
        "(docs/health.md)");
    object_class_property_add_str(klass, "state", aic100_get_state, NULL);
    object_class_property_set_description(klass, "state",
        "execution environment, MHI state and firmware stage");
}

static const TypeInfo aic100_info = {
    .name = TYPE_AIC100,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(Aic100State),
    .class_init = aic100_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

/*
 * -device aic200: the same card model and properties, of the AIC200 family
 * (the core picks BARs, boot and channels by it). device-id defaults to
 * AIC200_PCI_DEVICE_ID here, set per instance: the property's default is
 * the parent's.
 */
static void aic200_instance_init(Object *obj)
{
    Aic100State *s = AIC100(obj);

    s->family = AIC100_FAMILY_AIC200;
    s->device_id = AIC200_PCI_DEVICE_ID;
}

static const VMStateDescription aic200_vmstate = {
    .name = TYPE_AIC200,
    .unmigratable = 1,
};

static void aic200_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);

    pc->device_id = AIC200_PCI_DEVICE_ID;
    dc->desc = "Qualcomm Cloud AI 200 (virtual)";
    dc->vmsd = &aic200_vmstate;
}

static const TypeInfo aic200_info = {
    .name = TYPE_AIC200,
    .parent = TYPE_AIC100,
    .instance_init = aic200_instance_init,
    .class_init = aic200_class_init,
};

static void aic100_register_types(void)
{
    type_register_static(&aic100_info);
    type_register_static(&aic200_info);
}

type_init(aic100_register_types)
