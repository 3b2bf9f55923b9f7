// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: buffer objects (DRM_IOCTL_QAIC_CREATE_BO, DRM_IOCTL_QAIC_MMAP_BO).
 *
 * A BO is zeroed memory of whole pages, taken in chunks as large as the
 * allocator readily gives (fewer DMA segments later) and split into
 * order-0 pages, which are what mmap() maps into the user's address space.
 * The GEM handle and the BO's fake mmap offset come from the DRM core;
 * DRM_IOCTL_GEM_CLOSE drops the handle and the last reference frees it.
 *
 * A BO can also be another driver's dma-buf (DRM_IOCTL_PRIME_FD_TO_HANDLE):
 * it has no pages of its own, its memory is mapped for the card through the
 * dma-buf attachment only while it is sliced (the direction is known then),
 * and, as with upstream's qaic, it cannot be mmap()ed through the accel
 * node: its user maps it where it came from.
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "qaic.h"
#include "qaic_accel.h"

static void qaic_bo_free_pages(struct qaic_bo *bo)
{
	unsigned long i;

	for (i = 0; i < bo->nr_pages; i++)
		__free_page(bo->pages[i]);
	kvfree(bo->pages);
	bo->pages = NULL;
	bo->nr_pages = 0;
}

/* Fill bo->pages with @nr zeroed pages. */
static int qaic_bo_alloc_pages(struct qaic_bo *bo, unsigned long nr)
{
	const gfp_t gfp = GFP_HIGHUSER | __GFP_ZERO | __GFP_NOWARN | __GFP_ACCOUNT;
	gfp_t retry;
	unsigned int order = min_t(unsigned int, MAX_PAGE_ORDER, ilog2(nr));
	struct page *page;
	unsigned long i;

	/* Not more than there is memory at all, nor than an sg_table can describe. */
	if (nr > totalram_pages() || nr > UINT_MAX)
		return -ENOMEM;
	bo->pages = kvmalloc_array(nr, sizeof(*bo->pages), GFP_KERNEL | __GFP_NOWARN);
	if (!bo->pages)
		return -ENOMEM;

	while (bo->nr_pages < nr) {
		order = min_t(unsigned int, order, ilog2(nr - bo->nr_pages));
		for (;;) {
			/* Large chunks only if they come easily; never the OOM killer. */
			retry = order ? __GFP_NORETRY : __GFP_RETRY_MAYFAIL;
			page = alloc_pages(gfp | retry, order);
			if (page)
				break;
			if (!order)
				return -ENOMEM;
			order--;
		}
		if (order)
			split_page(page, order);
		for (i = 0; i < (1UL << order); i++)
			bo->pages[bo->nr_pages++] = page + i;

		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

static void qaic_gem_free(struct drm_gem_object *obj)
{
	struct qaic_bo *bo = to_qaic_bo(obj);

	/* Slicing holds a reference: a sliced BO cannot get here. */
	WARN_ON(bo->sliced);
	mutex_destroy(&bo->lock);

	if (obj->import_attach) {
		/* Detaches, and drops the reference qaic_gem_prime_import() took. */
		drm_prime_gem_destroy(obj, NULL);
	} else if (bo->sgt) {
		sg_free_table(bo->sgt);
		kfree(bo->sgt);
	}
	qaic_bo_free_pages(bo);
	drm_gem_object_release(obj);
	kfree(bo);
}

/*
 * Map the BO's pages at once. vm_pgoff is the fake offset of the page to
 * start at: the BO's first for the accel node, any for a dma-buf export.
 */
static int qaic_gem_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	struct qaic_bo *bo = to_qaic_bo(obj);
	unsigned long start = drm_vma_node_start(&obj->vma_node);
	unsigned long nr = vma_pages(vma);
	unsigned long first;
	int ret;

	if (obj->import_attach || vma->vm_pgoff < start)
		return -EINVAL;
	first = vma->vm_pgoff - start;
	if (first > bo->nr_pages || nr > bo->nr_pages - first)
		return -EINVAL;
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	ret = vm_insert_pages(vma, vma->vm_start, bo->pages + first, &nr);
	if (!ret && nr)
		ret = -EFAULT;
	return ret;
}

/* For a dma-buf export of the BO: its pages, for the importer to map. */
static struct sg_table *qaic_gem_get_sg_table(struct drm_gem_object *obj)
{
	struct qaic_bo *bo = to_qaic_bo(obj);

	return drm_prime_pages_to_sg(obj->dev, bo->pages, bo->nr_pages);
}

/*
 * mmap() maps every page at once, so a fault means that the mapping was
 * zapped: drm_dev_unplug() clears all user mappings of the device when the
 * card goes away (unbind, rmmod, surprise removal). The BO's pages are host
 * memory the BO keeps until it is freed (the mapping holds a reference to
 * it), so the page is mapped again: the user keeps its data and learns
 * that the card is gone from its next ioctl (ENODEV), not from a SIGBUS.
 */
static vm_fault_t qaic_gem_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct qaic_bo *bo = to_qaic_bo(obj);
	unsigned long start = drm_vma_node_start(&obj->vma_node);

	if (vmf->pgoff < start || vmf->pgoff - start >= bo->nr_pages)
		return VM_FAULT_SIGBUS;
	return vmf_insert_page(vma, vmf->address, bo->pages[vmf->pgoff - start]);
}

static const struct vm_operations_struct qaic_gem_vm_ops = {
	.fault	= qaic_gem_fault,
	.open	= drm_gem_vm_open,
	.close	= drm_gem_vm_close,
};

static const struct drm_gem_object_funcs qaic_gem_funcs = {
	.free		= qaic_gem_free,
	.get_sg_table	= qaic_gem_get_sg_table,
	.mmap		= qaic_gem_mmap,
	.vm_ops		= &qaic_gem_vm_ops,
};

/*
 * DRM_IOCTL_PRIME_FD_TO_HANDLE of a dma-buf the accel node did not export
 * itself from this file: a BO over it. The attachment is made now, so that
 * an exporter that cannot serve the card refuses the import; the mapping
 * waits for the slicing, which gives the direction.
 */
struct drm_gem_object *qaic_gem_prime_import(struct drm_device *drm, struct dma_buf *dmabuf)
{
	struct dma_buf_attachment *attach;
	struct qaic_bo *bo;
	int ret;

	if (!dmabuf->size)
		return ERR_PTR(-EINVAL);

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	attach = dma_buf_attach(dmabuf, drm->dev);
	if (IS_ERR(attach)) {
		kfree(bo);
		return ERR_CAST(attach);
	}
	get_dma_buf(dmabuf);

	drm_gem_private_object_init(drm, &bo->base, dmabuf->size);
	bo->base.funcs = &qaic_gem_funcs;
	bo->base.import_attach = attach;
	bo->base.resv = dmabuf->resv;
	qaic_data_init_bo(bo);

	/* MMAP_BO answers as for any BO; mmap() itself is refused. */
	ret = drm_gem_create_mmap_offset(&bo->base);
	if (ret) {
		drm_gem_object_put(&bo->base);
		return ERR_PTR(ret);
	}
	return &bo->base;
}

/*
 * Map @bo's memory for the card, for a slicing in direction @dir: its own
 * pages, or the exporter's through the attachment (which gives the table).
 */
/*
 * The longest run of pages one scatterlist entry may merge: as much as the
 * DMA layer maps in one piece (256 KiB where it bounces, e.g. swiotlb=force
 * without an IOMMU), whole pages, at most what a DBC request can carry.
 */
unsigned int qaic_max_dma_segment(struct device *dev)
{
	size_t max = min_t(size_t, dma_max_mapping_size(dev), UINT_MAX);

	return max_t(size_t, max & PAGE_MASK, PAGE_SIZE);
}

static bool qaic_sgt_needs_sync(struct device *dev, struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i)
		if (dma_need_sync(dev, sg_dma_address(sg)))
			return true;
	return false;
}

int qaic_bo_dma_map(struct qaic_bo *bo, enum dma_data_direction dir)
{
	struct dma_buf_attachment *attach = bo->base.import_attach;
	struct device *dev = bo->base.dev->dev;
	struct sg_table *sgt;

	if (!attach) {
		if (dma_map_sgtable(dev, bo->sgt, dir, 0))
			return -EFAULT;
	} else {
		sgt = dma_buf_map_attachment_unlocked(attach, dir);
		if (IS_ERR(sgt))
			return PTR_ERR(sgt);
		bo->sgt = sgt;
	}
	bo->cpu_sync = qaic_sgt_needs_sync(dev, bo->sgt);
	return 0;
}

void qaic_bo_dma_unmap(struct qaic_bo *bo, enum dma_data_direction dir)
{
	struct dma_buf_attachment *attach = bo->base.import_attach;

	if (!attach) {
		dma_unmap_sgtable(bo->base.dev->dev, bo->sgt, dir, 0);
		return;
	}
	dma_buf_unmap_attachment_unlocked(attach, bo->sgt, dir);
	bo->sgt = NULL;
}

int qaic_create_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_create_bo *args = data;
	struct qaic_bo *bo;
	u64 size;
	u32 handle;
	int ret;

	if (args->pad)
		return -EINVAL;
	size = PAGE_ALIGN(args->size);
	if (!size)
		return -EINVAL;
	if (!READ_ONCE(qdev->online))
		return -ENODEV;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	drm_gem_private_object_init(drm, &bo->base, size);
	bo->base.funcs = &qaic_gem_funcs;
	qaic_data_init_bo(bo);

	/* From here on the last reference frees whatever was set up. */
	ret = qaic_bo_alloc_pages(bo, size >> PAGE_SHIFT);
	if (ret)
		goto out_put;

	bo->sgt = kzalloc(sizeof(*bo->sgt), GFP_KERNEL);
	if (!bo->sgt) {
		ret = -ENOMEM;
		goto out_put;
	}
	ret = sg_alloc_table_from_pages_segment(bo->sgt, bo->pages, bo->nr_pages, 0, size,
						qaic_max_dma_segment(drm->dev), GFP_KERNEL);
	if (ret)
		goto out_put;

	ret = drm_gem_create_mmap_offset(&bo->base);
	if (ret)
		goto out_put;
	ret = drm_gem_handle_create(file, &bo->base, &handle);
	if (ret)
		goto out_put;
	args->handle = handle;

out_put:
	/* The handle, if any, holds the BO now. */
	drm_gem_object_put(&bo->base);
	return ret;
}

int qaic_mmap_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_mmap_bo *args = data;
	struct drm_gem_object *obj;

	if (!READ_ONCE(qdev->online))
		return -ENODEV;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	args->offset = drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return 0;
}
