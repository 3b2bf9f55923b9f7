// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the state of the DBCs as user space sees it.
 *
 * Each DBC has a software state (enum qaic_dbc_state), shown in
 * /sys/class/accel/accelN/dbcM_state. Every change is announced with a
 * KOBJ_CHANGE uevent on the accel device carrying DBC_ID=M and DBC_STATE=S,
 * as in later upstream kernels.
 *
 * The open UMD does not watch the accel device: its udev monitor filters on
 * the subsystem "Qualcomm Cloud AI 100" and takes the card's PCI address
 * from the component of the device path just before that name. Each card
 * therefore also gets a device in a class of that name, child of its PCI
 * device (.../<bdf>/Qualcomm Cloud AI 100/qaic_aic100_<bdf>), on which the
 * same uevents go out.
 */

#include <drm/drm_file.h>
#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/sysfs.h>

#include "qaic.h"

#define QAIC_UMD_CLASS_NAME	"Qualcomm Cloud AI 100"

static const struct class qaic_umd_class = {
	.name = QAIC_UMD_CLASS_NAME,
};

struct qaic_dbc_state_attr {
	struct device_attribute	attr;
	unsigned int		id;
};

/* On the accel device, whose driver data is its DRM minor. */
static ssize_t qaic_dbc_state_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct qaic_dbc_state_attr *a = container_of(attr, struct qaic_dbc_state_attr, attr);
	struct drm_minor *minor = dev_get_drvdata(dev);
	struct qaic_device *qdev = to_qaic_device(minor->dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(qdev->dbc[a->id].state));
}

#define QAIC_DBC_STATE_ATTR(n)						\
static struct qaic_dbc_state_attr qaic_dbc##n##_state = {		\
	.attr = __ATTR(dbc##n##_state, 0444, qaic_dbc_state_show, NULL),\
	.id = (n),							\
}

QAIC_DBC_STATE_ATTR(0);
QAIC_DBC_STATE_ATTR(1);
QAIC_DBC_STATE_ATTR(2);
QAIC_DBC_STATE_ATTR(3);
QAIC_DBC_STATE_ATTR(4);
QAIC_DBC_STATE_ATTR(5);
QAIC_DBC_STATE_ATTR(6);
QAIC_DBC_STATE_ATTR(7);
QAIC_DBC_STATE_ATTR(8);
QAIC_DBC_STATE_ATTR(9);
QAIC_DBC_STATE_ATTR(10);
QAIC_DBC_STATE_ATTR(11);
QAIC_DBC_STATE_ATTR(12);
QAIC_DBC_STATE_ATTR(13);
QAIC_DBC_STATE_ATTR(14);
QAIC_DBC_STATE_ATTR(15);

static struct attribute *qaic_dbc_state_attrs[] = {
	&qaic_dbc0_state.attr.attr,
	&qaic_dbc1_state.attr.attr,
	&qaic_dbc2_state.attr.attr,
	&qaic_dbc3_state.attr.attr,
	&qaic_dbc4_state.attr.attr,
	&qaic_dbc5_state.attr.attr,
	&qaic_dbc6_state.attr.attr,
	&qaic_dbc7_state.attr.attr,
	&qaic_dbc8_state.attr.attr,
	&qaic_dbc9_state.attr.attr,
	&qaic_dbc10_state.attr.attr,
	&qaic_dbc11_state.attr.attr,
	&qaic_dbc12_state.attr.attr,
	&qaic_dbc13_state.attr.attr,
	&qaic_dbc14_state.attr.attr,
	&qaic_dbc15_state.attr.attr,
	NULL
};

static_assert(ARRAY_SIZE(qaic_dbc_state_attrs) == QAIC_NUM_DBC + 1);

static const struct attribute_group qaic_dbc_state_group = {
	.attrs = qaic_dbc_state_attrs,
};

/*
 * Set the state of @dbc and announce a change. Called with dbc_lock held,
 * which also keeps the uevents in the order of the changes.
 */
void qaic_dbc_set_state(struct qaic_dbc *dbc, unsigned int state)
{
	struct qaic_device *qdev = dbc->qdev;
	char id_env[16], state_env[16];
	char *envp[3];

	lockdep_assert_held(&qdev->dbc_lock);

	if (dbc->state == state)
		return;
	WRITE_ONCE(dbc->state, state);
	if (!qdev->dbc_uevents)
		return;

	snprintf(id_env, sizeof(id_env), "DBC_ID=%u", dbc->id);
	snprintf(state_env, sizeof(state_env), "DBC_STATE=%u", state);
	envp[0] = id_env;
	envp[1] = state_env;
	envp[2] = NULL;
	kobject_uevent_env(&qdev->drm.accel->kdev->kobj, KOBJ_CHANGE, envp);
	kobject_uevent_env(&qdev->class_dev->kobj, KOBJ_CHANGE, envp);
}

/* Once the accel device is registered: the dbcN_state files and the UMD's device. */
int qaic_sysfs_init(struct qaic_device *qdev)
{
	struct device *kdev = qdev->drm.accel->kdev;
	struct device *cdev;
	int ret;

	ret = sysfs_create_group(&kdev->kobj, &qaic_dbc_state_group);
	if (ret)
		return ret;

	cdev = device_create(&qaic_umd_class, &qdev->pdev->dev, 0, qdev, "qaic_aic100_%s",
			     pci_name(qdev->pdev));
	if (IS_ERR(cdev)) {
		sysfs_remove_group(&kdev->kobj, &qaic_dbc_state_group);
		return PTR_ERR(cdev);
	}

	mutex_lock(&qdev->dbc_lock);
	qdev->class_dev = cdev;
	qdev->dbc_uevents = true;
	mutex_unlock(&qdev->dbc_lock);
	return 0;
}

/* Before the accel device goes; no state change is announced any more. */
void qaic_sysfs_fini(struct qaic_device *qdev)
{
	struct device *cdev;
	bool initialised;

	mutex_lock(&qdev->dbc_lock);
	initialised = qdev->dbc_uevents;
	cdev = qdev->class_dev;
	qdev->dbc_uevents = false;
	qdev->class_dev = NULL;
	mutex_unlock(&qdev->dbc_lock);

	if (!initialised)
		return;
	device_unregister(cdev);
	sysfs_remove_group(&qdev->drm.accel->kdev->kobj, &qaic_dbc_state_group);
}

int qaic_sysfs_register(void)
{
	return class_register(&qaic_umd_class);
}

void qaic_sysfs_unregister(void)
{
	class_unregister(&qaic_umd_class);
}
