// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the host's bookkeeping of the card's 16 DMA Bridge channels.
 *
 * The card hands out DBCs. ACTIVATE_FROM_DEV in a MANAGE reply binds one
 * to the user whose message asked for it, together with the FIFO memory
 * that message offered; DEACTIVATE_FROM_DEV (status 0) gives it back. The
 * host follows: it keeps a DBC's FIFO memory while the DBC is in use and
 * knows which user may drive it. Closing a fd releases that user's DBCs,
 * and a card reset releases all of them.
 *
 * A change that a reply asks for carries the reset generation read before
 * its request went out. Once the card has been reset in between, the
 * change is refused: the card that sent the reply is gone.
 *
 * Each DBC also has the state user space sees (enum qaic_dbc_state):
 * ASSIGNED while bound, IDLE once released, and the SSR stages while the
 * card recovers it after a crash (qaic_ssr.c). An SSR releases the DBC at
 * its start, so that its user must activate again afterwards.
 */

#include <drm/drm_managed.h>
#include <linux/dma-mapping.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/wait.h>

#include "qaic.h"

/* How long an activation waits for the host to let go of its DBC. */
#define QAIC_DBC_BIND_WAIT	(30 * HZ)

int qaic_dbc_init(struct qaic_device *qdev)
{
	struct qaic_dbc *dbc;
	unsigned int i;
	int ret;

	ret = drmm_mutex_init(&qdev->drm, &qdev->dbc_lock);
	if (ret)
		return ret;

	for (i = 0; i < QAIC_NUM_DBC; i++) {
		dbc = &qdev->dbc[i];
		dbc->qdev = qdev;
		dbc->id = i;
		dbc->lost_handle = -1;
		dbc->regs = qdev->bar_dbc + QAIC_DBC_BASE + i * QAIC_DBC_SIZE;
		INIT_LIST_HEAD(&dbc->holder_node);
		init_waitqueue_head(&dbc->release_wq);
		ret = qaic_data_init_dbc(qdev, dbc);
		if (ret)
			return ret;
	}
	return 0;
}

/* The current reset generation, to pass to the calls below. */
unsigned int qaic_dbc_gen(struct qaic_device *qdev)
{
	return READ_ONCE(qdev->dbc_gen);
}

/*
 * Allocate the FIFOs of a DBC with @nelem elements each: one coherent
 * buffer of ALIGN(68 * nelem + 256, 4 KiB) bytes, requests at offset 0 and
 * responses in the last 4 * nelem bytes.
 */
int qaic_dbc_fifo_alloc(struct qaic_device *qdev, u32 nelem, struct qaic_dbc_fifo *fifo)
{
	u64 size;

	if (!nelem)
		return -EINVAL;
	size = (u64)nelem * (QAIC_DBC_REQ_ELEM_SIZE + QAIC_DBC_RSP_ELEM_SIZE);
	size = ALIGN(size + QAIC_DBC_FIFO_GAP, QAIC_DBC_FIFO_ALIGN);
	if (size > U32_MAX)
		return -EINVAL;
	if (size >> PAGE_SHIFT > totalram_pages())
		return -ENOMEM;

	/* The size is the user's choice: fail rather than invoke the OOM killer. */
	fifo->cpu = dma_alloc_coherent(&qdev->pdev->dev, size, &fifo->dma,
				       GFP_KERNEL | __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
	if (!fifo->cpu)
		return -ENOMEM;
	fifo->size = size;
	fifo->nelem = nelem;
	return 0;
}

void qaic_dbc_fifo_free(struct qaic_device *qdev, struct qaic_dbc_fifo *fifo)
{
	if (fifo->cpu)
		dma_free_coherent(&qdev->pdev->dev, fifo->size, fifo->cpu, fifo->dma);
	fifo->cpu = NULL;
}

/*
 * Forget everything about @dbc and free its FIFOs. Called with dbc_lock held.
 * The data path lets go first: once no ioctl, interrupt thread or polling
 * work can see the DBC any more, its queued BOs complete (their waiters
 * wake) and its sliced BOs are unmapped and detached. With @ssr the
 * queued BOs are marked as dropped by an SSR, and the DBC keeps its
 * state; otherwise an ASSIGNED DBC becomes IDLE.
 */
static void qaic_dbc_release_locked(struct qaic_dbc *dbc, bool ssr)
{
	lockdep_assert_held(&dbc->qdev->dbc_lock);

	if (!dbc->in_use)
		return;
	WRITE_ONCE(dbc->usr, NULL);
	WRITE_ONCE(dbc->active, false);
	synchronize_srcu(&dbc->srcu);
	qaic_data_release_dbc(dbc, ssr);

	list_del_init(&dbc->holder_node);
	dbc->holder = NULL;
	dbc->req_q = NULL;
	dbc->rsp_q = NULL;
	qaic_dbc_fifo_free(dbc->qdev, &dbc->fifo);
	WRITE_ONCE(dbc->in_use, false);
	wake_up_all(&dbc->release_wq);
	if (dbc->state == QAIC_DBC_STATE_ASSIGNED)
		qaic_dbc_set_state(dbc, QAIC_DBC_STATE_IDLE);
}

static bool qaic_dbc_bind_ready(struct qaic_dbc *dbc, unsigned int gen)
{
	return !READ_ONCE(dbc->in_use) || READ_ONCE(dbc->qdev->dbc_gen) != gen;
}

/*
 * The card activated DBC @dbc_id for @usr with @fifo. Should the host
 * still see the DBC in use, its release is normally in a reply another
 * thread is processing: wait for it, interruptibly and for a while. After
 * that the host's record is stale (the card would not hand out a DBC it
 * still runs) and is dropped. The DBC then owns the FIFO memory and
 * fifo->cpu is cleared.
 *
 * Returns 0, -EIO if the card was reset since generation @gen, or -EPIPE
 * if the card is recovering the DBC from a crash (the reply predates it,
 * the activation is gone); the caller then still owns the FIFO memory.
 */
int qaic_dbc_bind(struct qaic_device *qdev, struct qaic_user *usr, u32 dbc_id,
		  struct qaic_dbc_fifo *fifo, unsigned int gen)
{
	struct qaic_dbc *dbc = &qdev->dbc[dbc_id];
	int ret = 0;

	mutex_lock(&qdev->dbc_lock);
	if (qdev->dbc_gen == gen && dbc->in_use) {
		mutex_unlock(&qdev->dbc_lock);
		wait_event_interruptible_timeout(dbc->release_wq, qaic_dbc_bind_ready(dbc, gen),
						 QAIC_DBC_BIND_WAIT);
		mutex_lock(&qdev->dbc_lock);
	}
	if (qdev->dbc_gen != gen) {
		ret = -EIO;
		goto out;
	}
	if (dbc->state >= QAIC_DBC_STATE_BEFORE_SHUTDOWN) {
		ret = -EPIPE;
		goto out;
	}
	if (dbc->in_use) {
		pci_warn(qdev->pdev, "card reassigned DBC %u, still in use on the host; dropping that\n",
			 dbc_id);
		qaic_dbc_release_locked(dbc, false);
	}

	dbc->fifo = *fifo;
	dbc->req_q = fifo->cpu;
	dbc->rsp_q = fifo->cpu + fifo->size - fifo->nelem * QAIC_DBC_RSP_ELEM_SIZE;
	dbc->holder = usr;
	WRITE_ONCE(dbc->lost_handle, -1);
	WRITE_ONCE(dbc->usr, usr);
	list_add_tail(&dbc->holder_node, &usr->dbcs);
	WRITE_ONCE(dbc->in_use, true);
	qaic_data_bind_dbc(dbc);
	/* The data path may use the FIFOs from here on. */
	smp_store_release(&dbc->active, true);
	fifo->cpu = NULL;
	qaic_dbc_set_state(dbc, QAIC_DBC_STATE_ASSIGNED);
out:
	mutex_unlock(&qdev->dbc_lock);
	return ret;
}

/*
 * DEACTIVATE_FROM_USR: @usr stops using DBC @dbc_id, which stays in use
 * until the card confirms. -EPERM unless @usr is the DBC's user. When this
 * returns, no data-path ioctl of the user is still working on the DBC;
 * what it queued completes when the card answers or the DBC is released.
 */
int qaic_dbc_detach(struct qaic_device *qdev, struct qaic_user *usr, u32 dbc_id)
{
	struct qaic_dbc *dbc = &qdev->dbc[dbc_id];
	int ret = 0;

	mutex_lock(&qdev->dbc_lock);
	if (!dbc->in_use || dbc->usr != usr) {
		ret = -EPERM;
	} else {
		WRITE_ONCE(dbc->usr, NULL);
		synchronize_srcu(&dbc->srcu);
	}
	mutex_unlock(&qdev->dbc_lock);
	return ret;
}

/*
 * The card refused to deactivate DBC @dbc_id (or the message asking it
 * never went out): give it back to @usr if it still holds it.
 */
void qaic_dbc_reattach(struct qaic_device *qdev, struct qaic_user *usr, u32 dbc_id,
		       unsigned int gen)
{
	struct qaic_dbc *dbc = &qdev->dbc[dbc_id];

	mutex_lock(&qdev->dbc_lock);
	if (qdev->dbc_gen == gen && dbc->in_use && dbc->holder == usr && !dbc->usr)
		WRITE_ONCE(dbc->usr, usr);
	mutex_unlock(&qdev->dbc_lock);
}

/* The card deactivated DBC @dbc_id. */
void qaic_dbc_release(struct qaic_device *qdev, u32 dbc_id, unsigned int gen)
{
	mutex_lock(&qdev->dbc_lock);
	if (qdev->dbc_gen == gen)
		qaic_dbc_release_locked(&qdev->dbc[dbc_id], false);
	mutex_unlock(&qdev->dbc_lock);
}

/*
 * @usr is going away. With @card_released the card has let go of the
 * user's DBCs: release them. Otherwise (the card is offline, going away or
 * did not answer) it may still be running them, writing responses and
 * output into their FIFOs and sliced BOs: the DBCs lose their user but keep
 * that memory mapped until the card releases them or is reset.
 */
void qaic_dbc_release_user(struct qaic_device *qdev, struct qaic_user *usr, bool card_released)
{
	struct qaic_dbc *dbc, *tmp;

	mutex_lock(&qdev->dbc_lock);
	list_for_each_entry_safe(dbc, tmp, &usr->dbcs, holder_node) {
		if (card_released) {
			qaic_dbc_release_locked(dbc, false);
			continue;
		}
		WRITE_ONCE(dbc->usr, NULL);
		synchronize_srcu(&dbc->srcu);
		list_del_init(&dbc->holder_node);
		dbc->holder = NULL;
	}
	mutex_unlock(&qdev->dbc_lock);
}

/*
 * The card was reset (or is going away) and has forgotten its DBCs:
 * release all of them, end any SSR and turn away replies from before.
 */
void qaic_dbc_release_all(struct qaic_device *qdev)
{
	unsigned int i;

	mutex_lock(&qdev->dbc_lock);
	WRITE_ONCE(qdev->dbc_gen, qdev->dbc_gen + 1);
	for (i = 0; i < QAIC_NUM_DBC; i++) {
		qaic_dbc_release_locked(&qdev->dbc[i], false);
		WRITE_ONCE(qdev->dbc[i].lost_handle, -1);
		qaic_dbc_set_state(&qdev->dbc[i], QAIC_DBC_STATE_IDLE);
		/* Binders wait for the generation too. */
		wake_up_all(&qdev->dbc[i].release_wq);
	}
	mutex_unlock(&qdev->dbc_lock);
}

/*
 * The card starts an SSR of DBC @dbc_id (BEFORE_SHUTDOWN): from now on the
 * data path refuses the DBC with -EPIPE, and the DBC is released, its
 * queued BOs completing as dropped. The user must activate again once the
 * card has recovered it.
 */
void qaic_dbc_enter_ssr(struct qaic_device *qdev, u32 dbc_id)
{
	struct qaic_dbc *dbc = &qdev->dbc[dbc_id];

	mutex_lock(&qdev->dbc_lock);
	WRITE_ONCE(dbc->lost_handle, dbc->usr ? dbc->usr->handle : -1);
	qaic_dbc_set_state(dbc, QAIC_DBC_STATE_BEFORE_SHUTDOWN);
	/*
	 * The data path reads the state after finding the DBC not owned:
	 * the state goes out before the release clears dbc->usr.
	 */
	smp_wmb();
	qaic_dbc_release_locked(dbc, true);
	mutex_unlock(&qdev->dbc_lock);
}

/*
 * Move DBC @dbc_id, under SSR, to @state (a later SSR stage, or IDLE at the
 * end). A DBC no longer under SSR (the card was reset meanwhile) is left
 * alone and false returned.
 */
bool qaic_dbc_ssr_state(struct qaic_device *qdev, u32 dbc_id, unsigned int state)
{
	struct qaic_dbc *dbc = &qdev->dbc[dbc_id];
	bool in_ssr;

	mutex_lock(&qdev->dbc_lock);
	in_ssr = dbc->state >= QAIC_DBC_STATE_BEFORE_SHUTDOWN;
	if (in_ssr)
		qaic_dbc_set_state(dbc, state);
	mutex_unlock(&qdev->dbc_lock);
	return in_ssr;
}
