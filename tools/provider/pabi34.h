// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the ibemu authors
// The libibverbs provider ABI this provider is built against: rdma-core's
// private infiniband/driver.h of v44 (Debian 12's rdma-core 44.0), symbol
// version IBVERBS_PRIVATE_34, x86-64. libibverbs-dev does not ship that
// header, so the structs and functions a provider needs are declared here
// from the layouts, and every offset that matters is checked below. The
// dynamic linker is the load-time check: the provider's undefined
// verbs_register_driver_34@IBVERBS_PRIVATE_34 makes dlopen() fail, with
// libibverbs' "couldn't load driver" warning, in a libibverbs of another
// provider ABI (docs/verbs.md, "ibemu's provider").
#pragma once

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <sys/types.h>

/* The legacy write() commands as libibverbs' ibv_cmd_* take them
 * (kern-abi.h's DECLARE_CMD): the 8-byte header, then the kernel's struct;
 * a provider's driver data would follow. Declared before extern "C". */
template <typename Core> struct pabi_cmd {
	ib_uverbs_cmd_hdr hdr;
	alignas(8) unsigned char core[sizeof(Core)]; /* filled by libibverbs */
};
struct ibv_get_context : pabi_cmd<ib_uverbs_get_context> {};
struct ibv_query_port : pabi_cmd<ib_uverbs_query_port> {};
struct ibv_alloc_pd : pabi_cmd<ib_uverbs_alloc_pd> {};
struct ibv_reg_mr : pabi_cmd<ib_uverbs_reg_mr> {};
struct ibv_alloc_mw : pabi_cmd<ib_uverbs_alloc_mw> {};
struct ibv_create_cq : pabi_cmd<ib_uverbs_create_cq> {};
struct ibv_resize_cq : pabi_cmd<ib_uverbs_resize_cq> {};
struct ibv_create_qp : pabi_cmd<ib_uverbs_create_qp> {};
struct ibv_query_qp : pabi_cmd<ib_uverbs_query_qp> {};
struct ibv_modify_qp : pabi_cmd<ib_uverbs_modify_qp> {};
struct ibv_create_srq : pabi_cmd<ib_uverbs_create_srq> {};
struct ibv_modify_srq : pabi_cmd<ib_uverbs_modify_srq> {};
struct ibv_query_srq : pabi_cmd<ib_uverbs_query_srq> {};
struct ibv_open_xrcd : pabi_cmd<ib_uverbs_open_xrcd> {};
struct ibv_create_xsrq : pabi_cmd<ib_uverbs_create_xsrq> {};

extern "C" {

struct pabi_list_node { /* ccan/list.h */
	pabi_list_node *next, *prev;
};

enum : uint8_t { VERBS_MATCH_SENTINEL = 0, VERBS_MATCH_PCI = 1, VERBS_MATCH_MODALIAS = 2, VERBS_MATCH_DRIVER_ID = 3 };

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* What libibverbs found in sysfs about one device; the provider reads it. */
struct verbs_sysfs_dev {
	pabi_list_node entry;
	void *provider_data;
	const verbs_match_ent *match;
	unsigned flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const verbs_match_ent *match_table;
	const verbs_device_ops **static_providers;
	bool (*match_device)(verbs_sysfs_dev *sysfs_dev);
	verbs_context *(*alloc_context)(ibv_device *device, int cmd_fd, void *private_data);
	verbs_context *(*import_context)(ibv_device *device, int cmd_fd);
	verbs_device *(*alloc_device)(verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(verbs_device *device);
};

struct verbs_device {
	ibv_device device;
	const verbs_device_ops *ops;
	int refcount; /* atomic_int in C */
	pabi_list_node entry;
	verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

enum { VERBS_QP_XRCD = 1, VERBS_QP_EX = 2 };

struct verbs_mr {
	ibv_mr mr; /* ibv_mr in driver.h */
	int mr_type; /* enum ibv_mr_type: IBV_MR_TYPE_MR = 0 */
	int access;
};

struct verbs_qp {
	union {
		ibv_qp qp;
		ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};

struct verbs_cq {
	union {
		ibv_cq cq;
		ibv_cq_ex cq_ex;
	};
};

struct verbs_xrcd {
	ibv_xrcd xrcd;
	uint32_t comp_mask; /* VERBS_XRCD_HANDLE */
	uint32_t handle;
};

struct verbs_srq {
	ibv_srq srq;
	int srq_type;
	void *xrcd;
	ibv_cq *cq;
	uint32_t srq_num;
};

using pabi_unused_op = void (*)();

/* struct verbs_context_ops: 76 slots in alphabetical order; the ones this
 * provider fills are typed, the rest keep libibverbs' dummies. */
struct verbs_context_ops {
	pabi_unused_op advise_mr, alloc_dm;
	ibv_mw *(*alloc_mw)(ibv_pd *pd, ibv_mw_type type);
	pabi_unused_op alloc_null_mr, alloc_parent_domain;
	ibv_pd *(*alloc_pd)(ibv_context *context);
	pabi_unused_op alloc_td, async_event, attach_counters_point_flow;
	int (*attach_mcast)(ibv_qp *qp, const ibv_gid *gid, uint16_t lid);
	int (*bind_mw)(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *mw_bind);
	int (*close_xrcd)(ibv_xrcd *xrcd);
	pabi_unused_op cq_event;
	ibv_ah *(*create_ah)(ibv_pd *pd, ibv_ah_attr *attr);
	pabi_unused_op create_counters;
	ibv_cq *(*create_cq)(ibv_context *context, int cqe, ibv_comp_channel *channel, int comp_vector);
	ibv_cq_ex *(*create_cq_ex)(ibv_context *context, ibv_cq_init_attr_ex *init_attr);
	pabi_unused_op create_flow, create_flow_action_esp;
	ibv_qp *(*create_qp)(ibv_pd *pd, ibv_qp_init_attr *attr);
	ibv_qp *(*create_qp_ex)(ibv_context *context, ibv_qp_init_attr_ex *qp_init_attr_ex);
	pabi_unused_op create_rwq_ind_table;
	ibv_srq *(*create_srq)(ibv_pd *pd, ibv_srq_init_attr *srq_init_attr);
	ibv_srq *(*create_srq_ex)(ibv_context *context, ibv_srq_init_attr_ex *srq_init_attr_ex);
	pabi_unused_op create_wq;
	int (*dealloc_mw)(ibv_mw *mw);
	int (*dealloc_pd)(ibv_pd *pd);
	pabi_unused_op dealloc_td;
	int (*dereg_mr)(verbs_mr *vmr);
	int (*destroy_ah)(ibv_ah *ah);
	pabi_unused_op destroy_counters;
	int (*destroy_cq)(ibv_cq *cq);
	pabi_unused_op destroy_flow, destroy_flow_action;
	int (*destroy_qp)(ibv_qp *qp);
	pabi_unused_op destroy_rwq_ind_table;
	int (*destroy_srq)(ibv_srq *srq);
	pabi_unused_op destroy_wq;
	int (*detach_mcast)(ibv_qp *qp, const ibv_gid *gid, uint16_t lid);
	void (*free_context)(ibv_context *context);
	pabi_unused_op free_dm;
	int (*get_srq_num)(ibv_srq *srq, uint32_t *srq_num);
	pabi_unused_op import_dm, import_mr, import_pd, modify_cq, modify_flow_action_esp;
	int (*modify_qp)(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask);
	pabi_unused_op modify_qp_rate_limit;
	int (*modify_srq)(ibv_srq *srq, ibv_srq_attr *srq_attr, int srq_attr_mask);
	pabi_unused_op modify_wq, open_qp;
	ibv_xrcd *(*open_xrcd)(ibv_context *context, ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(ibv_cq *cq, int num_entries, ibv_wc *wc);
	int (*post_recv)(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
	int (*post_send)(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr);
	pabi_unused_op post_srq_ops;
	int (*post_srq_recv)(ibv_srq *srq, ibv_recv_wr *recv_wr, ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(ibv_context *context, const ibv_query_device_ex_input *input, ibv_device_attr_ex *attr,
			       size_t attr_size);
	pabi_unused_op query_ece;
	int (*query_port)(ibv_context *context, uint8_t port_num, ibv_port_attr *port_attr);
	int (*query_qp)(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask, ibv_qp_init_attr *init_attr);
	pabi_unused_op query_qp_data_in_order, query_rt_values;
	int (*query_srq)(ibv_srq *srq, ibv_srq_attr *srq_attr);
	pabi_unused_op read_counters, reg_dm_mr, reg_dmabuf_mr;
	ibv_mr *(*reg_mr)(ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access);
	int (*req_notify_cq)(ibv_cq *cq, int solicited_only);
	pabi_unused_op rereg_mr;
	int (*resize_cq)(ibv_cq *cq, int cqe);
	pabi_unused_op set_ece, unimport_dm, unimport_mr, unimport_pd;
};

/* IBVERBS_PRIVATE_34 (v44 signatures; some changed later under the same
 * number, so these are exactly v44's) */
void verbs_register_driver_34(const verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(ibv_device *device, int cmd_fd, size_t alloc_size, verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(verbs_context *context);
void verbs_set_ops(verbs_context *vctx, const verbs_context_ops *ops);
int ibv_cmd_get_context(verbs_context *context, struct ibv_get_context *cmd, size_t cmd_size,
			ib_uverbs_get_context_resp *resp, size_t resp_size);
int ibv_cmd_query_device_any(ibv_context *context, const ibv_query_device_ex_input *input, ibv_device_attr_ex *attr,
			     size_t attr_size, ib_uverbs_ex_query_device_resp *resp, size_t *resp_size);
int ibv_cmd_query_port(ibv_context *context, uint8_t port_num, ibv_port_attr *port_attr, struct ibv_query_port *cmd,
		       size_t cmd_size);
int ibv_cmd_alloc_pd(ibv_context *context, ibv_pd *pd, struct ibv_alloc_pd *cmd, size_t cmd_size,
		     ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(ibv_pd *pd);
int ibv_cmd_reg_mr(ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access, verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size, ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(verbs_mr *vmr);
int ibv_cmd_alloc_mw(ibv_pd *pd, ibv_mw_type type, ibv_mw *mw, struct ibv_alloc_mw *cmd, size_t cmd_size,
		     ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(ibv_mw *mw);
int ibv_cmd_create_cq(ibv_context *context, int cqe, ibv_comp_channel *channel, int comp_vector, ibv_cq *cq,
		      struct ibv_create_cq *cmd, size_t cmd_size, ib_uverbs_create_cq_resp *resp, size_t resp_size);
int ibv_cmd_poll_cq(ibv_cq *cq, int ne, ibv_wc *wc);
int ibv_cmd_req_notify_cq(ibv_cq *cq, int solicited_only);
int ibv_cmd_resize_cq(ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd, size_t cmd_size, ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(ibv_cq *cq);
int ibv_cmd_create_srq(ibv_pd *pd, ibv_srq *srq, ibv_srq_init_attr *attr, struct ibv_create_srq *cmd, size_t cmd_size,
		       ib_uverbs_create_srq_resp *resp, size_t resp_size);
int ibv_cmd_modify_srq(ibv_srq *srq, ibv_srq_attr *srq_attr, int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(ibv_srq *srq, ibv_srq_attr *srq_attr, struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(ibv_srq *srq);
int ibv_cmd_open_xrcd(ibv_context *context, verbs_xrcd *xrcd, int vxrcd_size, ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size, ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(verbs_xrcd *xrcd);
int ibv_cmd_create_srq_ex(ibv_context *context, verbs_srq *srq, ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size, ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_create_qp_ex(ibv_context *context, verbs_qp *qp, ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd,
			 size_t cmd_size, ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(ibv_qp *qp, ibv_qp_attr *qp_attr, int attr_mask, ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask, struct ibv_modify_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(ibv_qp *qp);
int ibv_cmd_post_send(ibv_qp *ibqp, ibv_send_wr *wr, ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
int ibv_cmd_post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
int ibv_cmd_create_ah(ibv_pd *pd, ibv_ah *ah, ibv_ah_attr *attr, ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(ibv_ah *ah);
int ibv_cmd_attach_mcast(ibv_qp *qp, const ibv_gid *gid, uint16_t lid);
int ibv_cmd_detach_mcast(ibv_qp *qp, const ibv_gid *gid, uint16_t lid);

} /* extern "C" */

/* the layouts, measured on rdma-core v44.0's headers */
static_assert(sizeof(verbs_match_ent) == 24);
static_assert(sizeof(verbs_sysfs_dev) == 992);
static_assert(offsetof(verbs_sysfs_dev, ibdev_name) == 112);
static_assert(offsetof(verbs_sysfs_dev, abi_ver) == 968);
static_assert(sizeof(verbs_device_ops) == 72);
static_assert(sizeof(verbs_device) == 712);
static_assert(offsetof(verbs_device, ops) == 664);
static_assert(offsetof(verbs_device, sysfs) == 696);
static_assert(sizeof(verbs_context_ops) == 76 * sizeof(void *));
static_assert(offsetof(verbs_context_ops, alloc_pd) == 5 * 8);
static_assert(offsetof(verbs_context_ops, create_ah) == 13 * 8);
static_assert(offsetof(verbs_context_ops, create_cq) == 15 * 8);
static_assert(offsetof(verbs_context_ops, create_qp) == 19 * 8);
static_assert(offsetof(verbs_context_ops, close_xrcd) == 11 * 8);
static_assert(offsetof(verbs_context_ops, create_srq) == 22 * 8);
static_assert(offsetof(verbs_context_ops, create_srq_ex) == 23 * 8);
static_assert(offsetof(verbs_context_ops, get_srq_num) == 41 * 8);
static_assert(offsetof(verbs_context_ops, open_xrcd) == 52 * 8);
static_assert(offsetof(verbs_context_ops, dealloc_pd) == 26 * 8);
static_assert(offsetof(verbs_context_ops, dereg_mr) == 28 * 8);
static_assert(offsetof(verbs_context_ops, destroy_cq) == 31 * 8);
static_assert(offsetof(verbs_context_ops, destroy_qp) == 34 * 8);
static_assert(offsetof(verbs_context_ops, destroy_srq) == 36 * 8);
static_assert(offsetof(verbs_context_ops, free_context) == 39 * 8);
static_assert(offsetof(verbs_context_ops, modify_qp) == 47 * 8);
static_assert(offsetof(verbs_context_ops, modify_srq) == 49 * 8);
static_assert(offsetof(verbs_context_ops, poll_cq) == 53 * 8);
static_assert(offsetof(verbs_context_ops, post_srq_recv) == 57 * 8);
static_assert(offsetof(verbs_context_ops, query_device_ex) == 58 * 8);
static_assert(offsetof(verbs_context_ops, query_port) == 60 * 8);
static_assert(offsetof(verbs_context_ops, query_srq) == 64 * 8);
static_assert(offsetof(verbs_context_ops, reg_mr) == 68 * 8);
static_assert(offsetof(verbs_context_ops, req_notify_cq) == 69 * 8);
static_assert(offsetof(verbs_context_ops, resize_cq) == 71 * 8);
static_assert(offsetof(verbs_context_ops, unimport_pd) == 75 * 8);
static_assert(sizeof(verbs_mr) == 56);
static_assert(offsetof(verbs_qp, comp_mask) == 352 && sizeof(verbs_qp) == 368);
static_assert(sizeof(verbs_cq) == 288);
static_assert(sizeof(verbs_srq) == 160);
static_assert(sizeof(verbs_xrcd) == 16);
static_assert(sizeof(struct ibv_get_context) == 16 && sizeof(struct ibv_create_cq) == 40 &&
	      sizeof(struct ibv_create_qp) == 64);
