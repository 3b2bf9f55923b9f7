// SPDX-License-Identifier: GPL-2.0-or-later
// Host-visible register layout of the AIC100: BAR0 (MHI + BHI + QTIMER) and
// BAR2 (DMA Bridge). Offsets the upstream host stack depends on are fixed by
// drivers/bus/mhi/common.h and qaic; the placement of the BHI block and the
// doorbell arrays is ours, inside the ranges the host checks.
#pragma once

#include <cstdint>

#include "aic100/pci_identity.h"

namespace aic100::regs {

// ---- BAR sizes (the PCI view of them: aic100/pci_identity.h) ---------------
inline constexpr uint64_t kBar0Size = AIC100_PCI_MHI_BAR_SIZE;
inline constexpr uint64_t kBar2Size = AIC100_PCI_DMA_BRIDGE_BAR_SIZE;
inline constexpr uint64_t kBar4DefaultSize = AIC100_PCI_BAR4_DEFAULT_SIZE;

// ---- BAR0: MHI register block ----------------------------------------------
inline constexpr uint32_t MHIREGLEN = 0x00;
inline constexpr uint32_t MHIVER = 0x08;
inline constexpr uint32_t MHICFG = 0x10;
inline constexpr uint32_t CHDBOFF = 0x18;
inline constexpr uint32_t ERDBOFF = 0x20;
inline constexpr uint32_t BHIOFF = 0x28;
inline constexpr uint32_t BHIEOFF = 0x2C;
inline constexpr uint32_t DEBUGOFF = 0x30;
inline constexpr uint32_t MHICTRL = 0x38;
inline constexpr uint32_t MHISTATUS = 0x48;
inline constexpr uint32_t CCABAP_LOWER = 0x58;
inline constexpr uint32_t CCABAP_HIGHER = 0x5C;
inline constexpr uint32_t ECABAP_LOWER = 0x60;
inline constexpr uint32_t ECABAP_HIGHER = 0x64;
inline constexpr uint32_t CRCBAP_LOWER = 0x68;
inline constexpr uint32_t CRCBAP_HIGHER = 0x6C;
inline constexpr uint32_t CRDB_LOWER = 0x70;
inline constexpr uint32_t CRDB_HIGHER = 0x74;
inline constexpr uint32_t MHICTRLBASE_LOWER = 0x80;
inline constexpr uint32_t MHICTRLBASE_HIGHER = 0x84;
inline constexpr uint32_t MHICTRLLIMIT_LOWER = 0x88;
inline constexpr uint32_t MHICTRLLIMIT_HIGHER = 0x8C;
inline constexpr uint32_t MHIDATABASE_LOWER = 0x98;
inline constexpr uint32_t MHIDATABASE_HIGHER = 0x9C;
inline constexpr uint32_t MHIDATALIMIT_LOWER = 0xA0;
inline constexpr uint32_t MHIDATALIMIT_HIGHER = 0xA4;
inline constexpr uint32_t MHI_SOC_RESET_REQ = 0xB0;
inline constexpr uint32_t QTIMER_LO = 0xA28;
inline constexpr uint32_t QTIMER_HI = 0xA2C;

// Our placement of the BHI block and doorbell arrays.
inline constexpr uint32_t kBhiBase = 0x100;
inline constexpr uint32_t kBhiSize = 0xA4; // through OEMPKHASH[15]
// The BHIe block (aic100/bhie.h), on AIC200 only: BHIEOFF reads 0 on AIC100.
inline constexpr uint32_t kBhieBase = 0x200;
inline constexpr uint32_t kChdbBase = 0x400;
inline constexpr uint32_t kNumChannels = 128;
inline constexpr uint32_t kErdbBase = 0x800;
inline constexpr uint32_t kMaxEventRings = 8;

inline constexpr uint32_t kMhiRegLen = 0x100;
inline constexpr uint32_t kMhiVersion = 0x01000000; // MHI 1.0

// MHICFG fields.
inline constexpr uint32_t MHICFG_NCH_MASK = 0x000000FF;
inline constexpr uint32_t MHICFG_NHWCH_MASK = 0x0000FF00;
inline constexpr uint32_t MHICFG_NER_MASK = 0x00FF0000;
inline constexpr uint32_t MHICFG_NHWER_MASK = 0xFF000000;

// MHICTRL / MHISTATUS fields.
inline constexpr uint32_t MHICTRL_RESET = 1u << 1;
inline constexpr uint32_t MHICTRL_STATE_MASK = 0xFF00;
inline constexpr uint32_t MHISTATUS_READY = 1u << 0;
inline constexpr uint32_t MHISTATUS_SYSERR = 1u << 2;
inline constexpr uint32_t MHISTATUS_STATE_MASK = 0xFF00;
inline constexpr unsigned kStateShift = 8;

// ---- BHI block (offsets relative to kBhiBase) ------------------------------
inline constexpr uint32_t BHI_VERSION_MINOR = 0x00;
inline constexpr uint32_t BHI_VERSION_MAJOR = 0x04;
inline constexpr uint32_t BHI_IMGADDR_LOW = 0x08;
inline constexpr uint32_t BHI_IMGADDR_HIGH = 0x0C;
inline constexpr uint32_t BHI_IMGSIZE = 0x10;
inline constexpr uint32_t BHI_IMGTXDB = 0x18;
inline constexpr uint32_t BHI_INTVEC = 0x20;
inline constexpr uint32_t BHI_EXECENV = 0x28;
inline constexpr uint32_t BHI_STATUS = 0x2C;
inline constexpr uint32_t BHI_ERRCODE = 0x30;
inline constexpr uint32_t BHI_ERRDBG1 = 0x34;
inline constexpr uint32_t BHI_ERRDBG2 = 0x38;
inline constexpr uint32_t BHI_ERRDBG3 = 0x3C;
inline constexpr uint32_t BHI_SERIALNU = 0x40;
inline constexpr uint32_t BHI_OEMPKHASH0 = 0x64;
inline constexpr unsigned kOemPkHashWords = 16;

// ---- Enumerations ------------------------------------------------------------
enum class MhiState : uint8_t { Reset = 0, Ready = 1, M0 = 2, M1 = 3, M2 = 4, M3 = 5, Bhi = 7, SysErr = 0xFF };
enum class ExecEnv : uint8_t { Pbl = 0, Sbl = 1, Amss = 2, Rddm = 3, Wfw = 4, Pthru = 5, Edl = 6, Fp = 7 };

// ---- BAR2: DMA Bridge ------------------------------------------------------------
inline constexpr uint32_t kDbcBase = 0x20000;
inline constexpr uint32_t kDbcStride = 0x1000;
inline constexpr unsigned kNumDbc = 16;
inline constexpr uint32_t DBC_REQHP = 0x0;
inline constexpr uint32_t DBC_REQTP = 0x4;
inline constexpr uint32_t DBC_RSPHP = 0x8;
inline constexpr uint32_t DBC_RSPTP = 0xC;

// QTIMER frequency: 19.2 MHz.
inline constexpr uint64_t kQtimerHz = 19'200'000;

} // namespace aic100::regs
