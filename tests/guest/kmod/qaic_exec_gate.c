// SPDX-License-Identifier: GPL-2.0
/*
 * qaic_exec_gate - test module for the reproducer of upstream qaic's
 * EXECUTE_BO unwind after a release of its DBC (docs/upstream-bugs.md).
 *
 * Upstream's EXECUTE_BO puts each BO on the DBC's queue as it copies the
 * BO's requests, and when a later BO of the same call is refused it takes
 * as many entries back off the tail of that queue as it put there. A
 * release of the DBC (an SSR's BEFORE_SHUTDOWN, a reset) empties the queue
 * meanwhile, so the error path may find fewer entries than it queued and
 * take the list head itself for a BO. The submitter does not sleep in
 * between, so the window is a few instructions wide unless it is
 * preempted there; this module opens it on purpose:
 *
 *  1. The test writes the id of the submitting thread to "tid".
 *  2. That thread's hold_at-th call of drm_gem_object_lookup() from then
 *     on (the lookup of the second BO of its EXECUTE_BO: the first one is
 *     queued by then) sleeps until the test writes 1 to "release" (at most
 *     hold_timeout_ms). The call is diverted through ftrace to a function
 *     of this module that waits, then does the lookup.
 *  3. From its release to the return of its ioctl, every list entry that
 *     the thread takes off a list although the entry is on none (it links
 *     to itself, as an empty list's head does) is counted in "unlinked".
 *     The count relies on CONFIG_DEBUG_LIST, whose check of each removal
 *     is the function probed here.
 *
 * Upstream's driver, its BOs taken off by the release while the thread
 * waits, then removes the DBC's empty list head and drops a reference
 * through it: unlinked counts it. A driver that keeps a submission's BOs
 * off the DBC's queue until all of them are accepted removes only its own.
 *
 * Parameters in /sys/module/qaic_exec_gate/parameters: tid, hold_at,
 * release, hold_timeout_ms (written by the test), holding (1 while the
 * thread waits), held, timed_out and unlinked (counters).
 *
 * Load it after drm.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <drm/drm_gem.h>
#include <linux/ftrace.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/wait.h>

static int tid;
static int release;
static unsigned int hold_at = 2;
module_param(hold_at, uint, 0644);
MODULE_PARM_DESC(hold_at, "Hold the thread at this call of drm_gem_object_lookup() after it was named");
static unsigned int hold_timeout_ms = 10000;
module_param(hold_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hold_timeout_ms, "Longest hold");
static int holding;
module_param(holding, int, 0444);
MODULE_PARM_DESC(holding, "1 while the thread is held");
static int held;
module_param(held, int, 0444);
MODULE_PARM_DESC(held, "Holds so far");
static int timed_out;
module_param(timed_out, int, 0444);
MODULE_PARM_DESC(timed_out, "Holds that nobody released within hold_timeout_ms");
static int unlinked;
module_param(unlinked, int, 0444);
MODULE_PARM_DESC(unlinked, "Entries on no list that the released thread took off a list in its ioctl");

static DECLARE_WAIT_QUEUE_HEAD(release_wq);
static unsigned int lookups;	/* the thread's lookups since it was named */
static bool watching;		/* from its release to the end of its ioctl */
static bool passing;		/* in the lookup that gate_lookup() makes */

/* Writing tid names a new thread (0: none) and starts counting again. */
static int tid_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_int(val, kp);

	if (ret)
		return ret;
	WRITE_ONCE(watching, false);
	WRITE_ONCE(lookups, 0);
	return 0;
}

static const struct kernel_param_ops tid_ops = {
	.set = tid_set,
	.get = param_get_int,
};
module_param_cb(tid, &tid_ops, &tid, 0644);
MODULE_PARM_DESC(tid, "The thread to hold (0: none)");

static int release_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_int(val, kp);

	if (!ret)
		wake_up_all(&release_wq);
	return ret;
}

static const struct kernel_param_ops release_ops = {
	.set = release_set,
	.get = param_get_int,
};
module_param_cb(release, &release_ops, &release, 0644);
MODULE_PARM_DESC(release, "Nonzero lets the held thread go");

static bool is_named_thread(void)
{
	int t = READ_ONCE(tid);

	return t && current->pid == t;
}

/* Step 2: the named thread's lookups come here instead. */
static struct drm_gem_object *gate_lookup(struct drm_file *filp, u32 handle)
{
	struct drm_gem_object *obj;

	WRITE_ONCE(lookups, lookups + 1);
	if (lookups == READ_ONCE(hold_at)) {
		held++;
		WRITE_ONCE(holding, 1);
		if (!wait_event_timeout(release_wq, READ_ONCE(release),
					msecs_to_jiffies(READ_ONCE(hold_timeout_ms)))) {
			timed_out++;
			pr_warn("nobody released thread %d in %u ms\n", current->pid,
				hold_timeout_ms);
		}
		WRITE_ONCE(holding, 0);
		WRITE_ONCE(watching, true);
	}
	/* Not diverted again; nor a tail call, which would look like the driver's. */
	WRITE_ONCE(passing, true);
	obj = drm_gem_object_lookup(filp, handle);
	WRITE_ONCE(passing, false);
	return obj;
}

static void notrace divert(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			   struct ftrace_regs *fregs)
{
	if (is_named_thread() && !READ_ONCE(passing))
		ftrace_regs_set_instruction_pointer(fregs, (unsigned long)gate_lookup);
}

static struct ftrace_ops divert_ops = {
	.func = divert,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_RECURSION,
};

/* __list_del_entry_valid_or_report(entry): step 3. */
static int list_del_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct list_head *entry = (struct list_head *)regs_get_kernel_argument(regs, 0);

	/*
	 * Interrupts and softirqs that run on the thread's stack are not its
	 * ioctl: an RCU callback or a timer may take a lone entry off a list.
	 */
	if (!READ_ONCE(watching) || !is_named_thread() || !in_task())
		return 0;
	if (READ_ONCE(entry->next) == entry && READ_ONCE(entry->prev) == entry) {
		unlinked++;
		/* Who did it: at the probed entry, the return address is on top. */
		pr_notice("a lone entry taken off a list by %pS\n",
			  (void *)regs_get_kernel_stack_nth(regs, 0));
	}
	return 0;
}

static int ioctl_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return is_named_thread() ? 0 : 1; /* only its ioctls are followed */
}

static int ioctl_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	WRITE_ONCE(watching, false);
	return 0;
}

static struct kprobe list_del_probe = {
	.symbol_name = "__list_del_entry_valid_or_report",
	.pre_handler = list_del_pre,
};

static struct kretprobe ioctl_probe = {
	.kp.symbol_name = "drm_ioctl",
	.entry_handler = ioctl_entry,
	.handler = ioctl_return,
	.maxactive = 16,
};

static int divert_lookups(void)
{
	static unsigned char name[] = "drm_gem_object_lookup";
	int ret;

	ret = ftrace_set_filter(&divert_ops, name, strlen(name), 1);
	if (ret)
		return ret;
	ret = register_ftrace_function(&divert_ops);
	if (ret)
		ftrace_free_filter(&divert_ops);
	return ret;
}

static int __init gate_init(void)
{
	int ret;

	ret = register_kretprobe(&ioctl_probe);
	if (ret)
		goto fail;
	ret = register_kprobe(&list_del_probe);
	if (ret)
		goto unregister_ioctl;
	ret = divert_lookups();
	if (ret)
		goto unregister_list_del;
	pr_info("holding a named thread in its EXECUTE_BO\n");
	return 0;

unregister_list_del:
	unregister_kprobe(&list_del_probe);
unregister_ioctl:
	unregister_kretprobe(&ioctl_probe);
fail:
	pr_err("cannot set up the probes (is drm loaded? CONFIG_DEBUG_LIST?): %d\n", ret);
	return ret;
}

static void __exit gate_exit(void)
{
	WRITE_ONCE(tid, 0);
	WRITE_ONCE(release, 1);
	wake_up_all(&release_wq);
	unregister_ftrace_function(&divert_ops);
	ftrace_free_filter(&divert_ops);
	unregister_kprobe(&list_del_probe);
	unregister_kretprobe(&ioctl_probe);
}

module_init(gate_init);
module_exit(gate_exit);
MODULE_DESCRIPTION("Holds a thread in its EXECUTE_BO while its DBC is released (bug reproducer)");
MODULE_LICENSE("GPL");
