/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * C interface to the AIC100 device core, for the QEMU glue. Plain C types
 * only: the glue includes this, never the C++ headers.
 */
#ifndef AIC100_CORE_H
#define AIC100_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Aic100Core Aic100Core;

typedef struct Aic100HostOps {
    /* Return 0 on success, non-zero when the bus access failed. */
    int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
    void (*raise_msi)(void *opaque, unsigned vector);
    unsigned (*msi_vectors_enabled)(void *opaque);
    uint64_t (*now_ns)(void *opaque);
    void (*guest_error)(void *opaque, const char *msg);
    /* Call aic100_core_process() soon, from the event loop. */
    void (*kick)(void *opaque);
    /* Call aic100_core_process() at `deadline_ns`; UINT64_MAX cancels. */
    void (*arm_timer)(void *opaque, uint64_t deadline_ns);
    /* Notable device events, for tracing; may be NULL. */
    void (*trace)(void *opaque, const char *msg);
    /*
     * Whether a DMA at `addr` lands in RAM (*ram true) or not (device
     * registers or nothing, one dispatch per few bytes), and for how many
     * bytes from `addr` that holds: 1 to `len`. May be NULL: all RAM.
     */
    uint64_t (*dma_ram_extent)(void *opaque, uint64_t addr, uint64_t len, bool is_write,
                               bool *ram);
} Aic100HostOps;

/*
 * The card family. AIC200: MHI in BAR1 (BAR0 is the glue's: the MSI-X
 * table), SBL over BHIe, streaming Sahara, its own channel table.
 */
typedef enum Aic100Family {
    AIC100_FAMILY_AIC100 = 0, /* AIC100 and AIC080 */
    AIC100_FAMILY_AIC200 = 1,
} Aic100Family;

typedef struct Aic100Config {
    Aic100Family family;
    uint16_t device_id;
    uint32_t nsp_count;
    uint64_t ddr_size;
    uint64_t bar4_size;
    uint32_t serial_number;
    /* Start in AMSS rather than going through PBL and SBL. */
    bool boot_amss;
    /* The QSM asks the host for CRC-32 on NNC messages. */
    bool nnc_crc;
    /* The fault-injection mailbox in BAR4, for guest-side tests. */
    bool test_mailbox;
    /* Sensors pinned from power-on (m°C, µW); 0 leaves them modelled. */
    int64_t soc_temp_mc, board_temp_mc, ddr_temp_mc, board_power_uw;
} Aic100Config;

/* Fills `cfg` with the card's defaults. */
void aic100_core_default_config(Aic100Config *cfg);

/*
 * Creates a card. Returns NULL and writes a reason into `err` (if non-NULL)
 * when the configuration is not usable.
 */
Aic100Core *aic100_core_new(const Aic100Config *cfg, const Aic100HostOps *ops, void *opaque,
                            char *err, size_t err_len);
void aic100_core_free(Aic100Core *core);
void aic100_core_reset(Aic100Core *core);

uint64_t aic100_core_bar_read(Aic100Core *core, unsigned bar, uint64_t offset, unsigned size);
void aic100_core_bar_write(Aic100Core *core, unsigned bar, uint64_t offset, uint64_t value,
                           unsigned size);

/* Does the work queued by register accesses and expired timers. */
void aic100_core_process(Aic100Core *core);

/*
 * Injects a fault: "syserr", "crash dbc=N", "ras ce source=ddr", "sensor
 * soc_temp=90000"... (docs/health.md). Returns 0, or -1 with a reason in `err`.
 */
int aic100_core_inject(Aic100Core *core, const char *fault, char *err,
                       size_t err_len);

/* One line describing the card's state, for monitors and tests. */
void aic100_core_describe(Aic100Core *core, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* AIC100_CORE_H */
