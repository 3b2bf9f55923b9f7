// SPDX-License-Identifier: GPL-2.0-or-later
// Guest side of the reproducer of QEMU's stale TLB section numbers
// (docs/qemu-bugs.md, 0004), run by tests/scripts/qemu-stale-iotlb.
//
// One thread, on CPU 1, reads a register of the card's BAR in long runs of
// loads with no branch between them, so that each run is one translation
// block with many MMIO accesses. Another, on CPU 0, turns the card's memory
// decoding off and on through its config space: every change unmaps or maps
// the BARs, and QEMU flushes the reader's TLB only at the end of its block.
// The reader's config-space peer holds the BQL while the map changes, and
// the reader's next load waits for it, so most changes land inside a run.
//
// A correct QEMU gives the reader only the register's value or what an
// unmapped address reads. QEMU 10.0.13 without our patch 0004 looks the
// rest of the run's loads up in the new map with the old map's section
// numbers: it aborts in iotlb_to_section(), or the loads reach another
// region and read something else, which this program reports.
//
// Usage: qemu_stale_iotlb [--card BDF] [--bar N] [--offset HEX] [--seconds S]
// Exit: 0 clean, 1 an unexpected value was read, 2 set-up failed.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define QCOM_VENDOR 0x17cb
#define PCI_COMMAND 0x04
#define PCI_COMMAND_MEMORY 0x2
#define RUN_LOADS 64

struct options {
	char card[256];
	int bar;
	unsigned offset;
	int seconds;
};

struct shared {
	volatile uint32_t *reg;
	uint32_t mapped_value, unmapped_value;
	atomic_bool stop;
	unsigned long runs, unexpected;
	uint32_t first_unexpected;
};

static int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

// The first Qualcomm device: the card, with no driver bound.
static int find_card(char *bdf, size_t len)
{
	DIR *dir = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	int found = -1;

	while (dir && found && (e = readdir(dir))) {
		char path[512], vendor[16] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(vendor, sizeof(vendor), f) && strtoul(vendor, NULL, 16) == QCOM_VENDOR) {
			snprintf(bdf, len, "%s", e->d_name);
			found = 0;
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return found;
}

static int set_decoding(int config_fd, uint16_t command, int on)
{
	uint16_t value = on ? (command | PCI_COMMAND_MEMORY) : (command & ~PCI_COMMAND_MEMORY);

	return pwrite(config_fd, &value, sizeof(value), PCI_COMMAND) == sizeof(value) ? 0 : -1;
}

// One translation block's worth of loads: straight-line code, the values
// kept in RAM and looked at after the run.
#define LOAD4(i) v[i] = *reg; v[i + 1] = *reg; v[i + 2] = *reg; v[i + 3] = *reg;
#define LOAD16(i) LOAD4(i) LOAD4(i + 4) LOAD4(i + 8) LOAD4(i + 12)

static void *reader(void *arg)
{
	struct shared *s = arg;
	volatile uint32_t *reg = s->reg;
	uint32_t v[RUN_LOADS];

	if (pin_to_cpu(1))
		perror("reader: pin to CPU 1");
	while (!atomic_load(&s->stop)) {
		LOAD16(0) LOAD16(16) LOAD16(32) LOAD16(48)
		for (int i = 0; i < RUN_LOADS; i++) {
			if (v[i] != s->mapped_value && v[i] != s->unmapped_value) {
				if (!s->unexpected++)
					s->first_unexpected = v[i];
			}
		}
		s->runs++;
	}
	return NULL;
}

static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){.bar = 0, .offset = 0x8, .seconds = 30};
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--card"))
			snprintf(o->card, sizeof(o->card), "%s", argv[i + 1]);
		else if (!strcmp(argv[i], "--bar"))
			o->bar = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--offset"))
			o->offset = strtoul(argv[i + 1], NULL, 16);
		else if (!strcmp(argv[i], "--seconds"))
			o->seconds = atoi(argv[i + 1]);
		else
			return -1;
	}
	return (argc % 2 == 1 && o->seconds > 0 && o->offset % 4 == 0) ? 0 : -1;
}

static volatile uint32_t *map_register(const struct options *o)
{
	char path[512];
	void *bar;
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource%d", o->card, o->bar);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		perror(path);
		return NULL;
	}
	bar = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (bar == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	return (volatile uint32_t *)((char *)bar + o->offset);
}

// Toggles the decoding for the given time; returns the number of changes.
static unsigned long toggle(int config_fd, uint16_t command, int seconds)
{
	struct timespec start, now;
	unsigned long changes = 0;

	if (pin_to_cpu(0))
		perror("toggler: pin to CPU 0");
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if (set_decoding(config_fd, command, 0) || set_decoding(config_fd, command, 1)) {
			perror("config write");
			break;
		}
		changes += 2;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < seconds);
	return changes;
}

int main(int argc, char **argv)
{
	struct shared s = {0};
	struct options o;
	char path[512];
	uint16_t command;
	unsigned long changes;
	pthread_t thread;
	int config_fd;

	if (parse(argc, argv, &o) || (!o.card[0] && find_card(o.card, sizeof(o.card)))) {
		fprintf(stderr, "usage: %s [--card BDF] [--bar N] [--offset HEX] [--seconds S] (no card found?)\n",
			argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", o.card);
	config_fd = open(path, O_RDWR);
	if (config_fd < 0 || pread(config_fd, &command, sizeof(command), PCI_COMMAND) != sizeof(command)) {
		perror(path);
		return 2;
	}
	s.reg = map_register(&o);
	if (!s.reg || set_decoding(config_fd, command, 1))
		return 2;
	s.mapped_value = *s.reg;
	set_decoding(config_fd, command, 0);
	s.unmapped_value = *s.reg;
	set_decoding(config_fd, command, 1);
	printf("card %s BAR%d+0x%x: 0x%08x mapped, 0x%08x unmapped\n", o.card, o.bar, o.offset, s.mapped_value,
	       s.unmapped_value);
	fflush(stdout);

	pthread_create(&thread, NULL, reader, &s);
	changes = toggle(config_fd, command, o.seconds);
	atomic_store(&s.stop, true);
	pthread_join(thread, NULL);
	set_decoding(config_fd, command, 1);

	printf("%lu map changes, %lu runs of %d loads, %lu unexpected values", changes, s.runs, RUN_LOADS,
	       s.unexpected);
	if (s.unexpected)
		printf(" (first 0x%08x)", s.first_unexpected);
	printf("\n");
	return s.unexpected ? 1 : 0;
}
