# The devices of our qemu-system-x86_64: what the scripts, suites, bench and
# fuzzers put in a machine, and nothing else. scripts/build-qemu links this
# file into QEMU's tree as configs/devices/x86_64-softmmu/aic100.mak and
# configures with --without-default-devices --with-devices-x86_64=aic100,
# which builds a small fraction of QEMU's default device set. Kconfig's
# "default" and "imply" do not apply then: a device is built only if it is
# named here or selected by one that is. A device missing from the build
# makes QEMU say "'NAME' is not a valid device model name"; add its symbol
# here (hw/*/Kconfig names them) and run scripts/build-qemu again.

# The machine: q35 (vm-run, the qtest, qemu-fuzz). It selects its chipset:
# ICH9 LPC and AHCI, the 8259/8254/RTC, the ISA serial port that carries the
# guest's console, ACPI, fw_cfg.
CONFIG_Q35=y
# What q35 has in QEMU's default build besides (the HPET, a clocksource
# with its ACPI table; VMware's I/O port and mouse behind the i8042): kept,
# so that the guest sees the machine it always saw.
CONFIG_HPET=y
CONFIG_VMPORT=y
CONFIG_VMMOUSE=y

# intel-iommu: vm-run --msi 32, qemu-fuzz's q35-iommu, the qtest.
CONFIG_VTD=y
# pcie-root-port: each card sits behind one (vm-run, the qtest).
CONFIG_PCIE_PORT=y

# virtio-9p-pci: the guest's root file system, its run folder and
# vm-run --share.
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_9P=y

# nvme: the baseline of bench/run and bench/profile-requests (on a null-co
# block node; block drivers are not devices and are always built).
CONFIG_NVME_PCI=y
# The NVMe's SPDM responder link, which QEMU 10.0.2's nvme calls but does
# not select (without it the emulator does not link).
CONFIG_SPDM_SOCKET=y

# The cards: aic100 and aic200 (hw/misc/Kconfig's AIC100, which build-qemu
# adds; its "default y if PCI_DEVICES" does not apply here).
CONFIG_AIC100=y
