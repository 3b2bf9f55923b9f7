/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qaic_wq_gate.h - the part the reproducers' gate modules share.
 *
 * A gate is a work item put at the head of a client's workqueue as the
 * workqueue is allocated: the work queued behind it waits until the module
 * opens the gate (or the owner flushes the workqueue, or gate_timeout_s
 * passes). The module that includes this header defines GATE_WQ_NAME (the
 * workqueue to gate) and wq_gate_arm(), which puts a freshly claimed gate in
 * place and calls wq_gate_ready() once work queued from then on waits behind
 * it; it registers its own probes after wq_gate_register() and removes them
 * before wq_gate_unregister().
 *
 * Counters shared by every gate module, in its parameters: gated
 * (workqueues gated), early (work items queued before their gate was in
 * place), held (work items queued behind a closed gate), opened_by_flush,
 * timed_out (gates nobody opened).
 */
#ifndef QAIC_WQ_GATE_H
#define QAIC_WQ_GATE_H

#include <linux/completion.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#define MAX_GATES	8

static unsigned int gate_timeout_s = 120;
module_param(gate_timeout_s, uint, 0644);
MODULE_PARM_DESC(gate_timeout_s, "Open a gate that nobody opened after this many seconds");
static unsigned int spin_timeout_ms = 5000;
module_param(spin_timeout_ms, uint, 0644);
MODULE_PARM_DESC(spin_timeout_ms, "Longest wait of one side of the race for the other");

static int gated;
module_param(gated, int, 0444);
MODULE_PARM_DESC(gated, "Workqueues named " GATE_WQ_NAME " that were gated");
static int early;
module_param(early, int, 0444);
MODULE_PARM_DESC(early, "Work items queued before their workqueue's gate was in place");
static int held;
module_param(held, int, 0444);
MODULE_PARM_DESC(held, "Work items queued behind a closed gate");
static int opened_by_flush;
module_param(opened_by_flush, int, 0444);
MODULE_PARM_DESC(opened_by_flush, "Gates opened because their workqueue was flushed");
static int timed_out;
module_param(timed_out, int, 0444);
MODULE_PARM_DESC(timed_out, "Gates opened by gate_timeout_s");

struct wq_gate {
	struct workqueue_struct *wq;	/* NULL: slot free */
	struct work_struct setup;	/* for a module that arms in process context */
	struct work_struct work;	/* the gate itself, on wq */
	struct completion open;
	bool closed;
	bool ready;			/* work is at the head of wq */
	int waiting;			/* work items queued behind it */
};

static struct wq_gate gates[MAX_GATES];
static DEFINE_SPINLOCK(gates_lock);
static work_func_t gate_setup_fn;

/* Defined by the module: puts g->work at the head of g->wq. */
static void wq_gate_arm(struct wq_gate *g);

/*
 * Waits, in a probe handler (which cannot sleep), up to spin_timeout_ms for
 * cond; true if it came.
 */
#define spin_until(cond) ({						\
	ktime_t __end = ktime_add_ms(ktime_get(), spin_timeout_ms);	\
	bool __came = true;						\
	while (!(cond)) {						\
		if (ktime_after(ktime_get(), __end)) {			\
			__came = false;					\
			break;						\
		}							\
		cpu_relax();						\
	}								\
	__came;								\
})

static void wq_gate_ready(struct wq_gate *g)
{
	unsigned long flags;

	spin_lock_irqsave(&gates_lock, flags);
	g->ready = true;
	spin_unlock_irqrestore(&gates_lock, flags);
}

static void gate_wait(struct work_struct *work)
{
	struct wq_gate *g = container_of(work, struct wq_gate, work);
	unsigned long left, flags;

	left = wait_for_completion_timeout(&g->open, msecs_to_jiffies(gate_timeout_s * 1000));
	spin_lock_irqsave(&gates_lock, flags);
	if (!left) {
		timed_out++;
		pr_warn("nobody opened the gate in %u s; opening\n", gate_timeout_s);
	}
	g->closed = false;
	g->wq = NULL;
	spin_unlock_irqrestore(&gates_lock, flags);
}

/* Opens every closed gate (of `only`, if given); returns how many. Call with gates_lock held. */
static int open_gates(struct workqueue_struct *only)
{
	int i, n = 0;

	for (i = 0; i < MAX_GATES; i++) {
		if (gates[i].wq && gates[i].closed && (!only || gates[i].wq == only)) {
			gates[i].closed = false;
			complete_all(&gates[i].open);
			n++;
		}
	}
	return n;
}

/*
 * alloc_workqueue(fmt, flags, max_active, ...): the entry remembers whether
 * the name is ours, given as fmt or (7.3's qaic: "%s", name) as the first
 * argument after max_active.
 */
static int alloc_wq_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const char *fmt = (const char *)regs_get_kernel_argument(regs, 0);
	const char *arg = (const char *)regs_get_kernel_argument(regs, 3);
	bool *ours = (bool *)ri->data;

	*ours = fmt && (!strcmp(fmt, GATE_WQ_NAME) ||
			(!strcmp(fmt, "%s") && arg && !strcmp(arg, GATE_WQ_NAME)));
	return 0;
}

static int alloc_wq_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct workqueue_struct *wq = (struct workqueue_struct *)regs_return_value(regs);
	struct wq_gate *g = NULL;
	unsigned long flags;
	int i;

	if (!*(bool *)ri->data || !wq)
		return 0;
	spin_lock_irqsave(&gates_lock, flags);
	for (i = 0; i < MAX_GATES && !g; i++)
		if (!gates[i].wq && !work_pending(&gates[i].work) &&
		    !work_pending(&gates[i].setup))
			g = &gates[i];
	if (g) {
		g->wq = wq;
		g->closed = true;
		g->ready = false;
		g->waiting = 0;
		reinit_completion(&g->open);
		gated++;
	}
	spin_unlock_irqrestore(&gates_lock, flags);
	if (!g) {
		pr_warn("no free gate for a new " GATE_WQ_NAME " workqueue\n");
		return 0;
	}
	wq_gate_arm(g);
	return 0;
}

static struct kretprobe alloc_wq_probe = {
	.entry_handler = alloc_wq_entry,
	.handler = alloc_wq_return,
	.data_size = sizeof(bool),
	.maxactive = 16,
};

/* queue_work_on(cpu, wq, work): count what waits behind a closed gate. */
static int queue_work_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct workqueue_struct *wq = (struct workqueue_struct *)regs_get_kernel_argument(regs, 1);
	struct work_struct *work = (struct work_struct *)regs_get_kernel_argument(regs, 2);
	unsigned long flags;
	int i;

	spin_lock_irqsave(&gates_lock, flags);
	for (i = 0; i < MAX_GATES; i++) {
		if (gates[i].wq != wq || !gates[i].closed || work == &gates[i].work)
			continue;
		if (!gates[i].ready) {
			early++;
			continue;
		}
		held++;
		WRITE_ONCE(gates[i].waiting, gates[i].waiting + 1);
	}
	spin_unlock_irqrestore(&gates_lock, flags);
	return 0;
}

static struct kprobe queue_work_probe = {
	.symbol_name = "queue_work_on",
	.pre_handler = queue_work_pre,
};

/* __flush_workqueue(wq): the owner wants its work done; open its gate. */
static int flush_wq_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct workqueue_struct *wq = (struct workqueue_struct *)regs_get_kernel_argument(regs, 0);
	unsigned long flags;

	spin_lock_irqsave(&gates_lock, flags);
	opened_by_flush += open_gates(wq);
	spin_unlock_irqrestore(&gates_lock, flags);
	return 0;
}

static struct kprobe flush_wq_probe = {
	.symbol_name = "__flush_workqueue",
	.pre_handler = flush_wq_pre,
};

/* setup, if not NULL, is what g->setup runs (scheduled by wq_gate_arm()). */
static int wq_gate_register(work_func_t setup)
{
	/* Kernels with allocation profiling name the function *_noprof. */
	static const char * const alloc_names[] = { "alloc_workqueue", "alloc_workqueue_noprof" };
	int i, ret = -ENOENT;

	gate_setup_fn = setup;
	for (i = 0; i < MAX_GATES; i++) {
		if (setup)
			INIT_WORK(&gates[i].setup, setup);
		INIT_WORK(&gates[i].work, gate_wait);
		init_completion(&gates[i].open);
	}
	for (i = 0; i < ARRAY_SIZE(alloc_names) && ret; i++) {
		alloc_wq_probe.kp.symbol_name = alloc_names[i];
		alloc_wq_probe.kp.addr = NULL;
		ret = register_kretprobe(&alloc_wq_probe);
	}
	if (ret) {
		pr_err("cannot probe alloc_workqueue: %d\n", ret);
		return ret;
	}
	ret = register_kprobe(&queue_work_probe);
	if (ret)
		goto out_alloc;
	ret = register_kprobe(&flush_wq_probe);
	if (ret)
		goto out_queue;
	return 0;

out_queue:
	unregister_kprobe(&queue_work_probe);
out_alloc:
	unregister_kretprobe(&alloc_wq_probe);
	pr_err("cannot probe the workqueue functions: %d\n", ret);
	return ret;
}

static void wq_gate_unregister(void)
{
	unsigned long flags;
	int i;

	unregister_kprobe(&flush_wq_probe);
	unregister_kprobe(&queue_work_probe);
	unregister_kretprobe(&alloc_wq_probe);
	if (gate_setup_fn)
		for (i = 0; i < MAX_GATES; i++)
			flush_work(&gates[i].setup);
	/* Our gate function must not run once this module is gone. */
	spin_lock_irqsave(&gates_lock, flags);
	open_gates(NULL);
	spin_unlock_irqrestore(&gates_lock, flags);
	for (i = 0; i < MAX_GATES; i++)
		flush_work(&gates[i].work);
}

#endif /* QAIC_WQ_GATE_H */
