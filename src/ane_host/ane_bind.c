/* Manifest function <-> modelAttributes procedure (ane_bind.h). When the
 * runtime reports strides, the layout is taken from them, and only the
 * plain one (planes and batches packed row after row) is accepted: that is
 * the layout the host pads to, and any other would need its own copy. */
#include "ane_host/ane_bind.h"

#include <stdio.h>
#include <string.h>

static nc_status bind_io(const ane_attr_proc *p, const lower_fn_info *f, const lower_io *io,
                         int is_output, ane_bound_io *out, nc_error *err) {
    const char *side = is_output ? "output" : "input";
    const ane_attr_io *a = ane_attrs_io(p, io->name, is_output);
    if (!a)
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "%s: modelAttributes lists no %s '%s' for procedure %d", f->name, side,
                       io->name, p->id);
    char what[160];
    snprintf(what, sizeof what, "%s: %s '%s'", f->name, side, io->name);
    ane_elem elem;
    if (strcmp(io->dtype, "fp16") == 0)
        elem = ANE_ELEM_FP16;
    else if (strcmp(io->dtype, "fp32") == 0)
        elem = ANE_ELEM_FP32;
    else
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: dtype %s does not cross the ANE boundary",
                       what, io->dtype);
    snprintf(out->name, sizeof out->name, "%s", io->name);
    out->symbol = a->symbol;
    NC_TRY(ane_layout_for(what, elem, io->rank, io->shape, &out->layout, err));
    if (!a->has_shape) return NC_OK;
    /* the runtime's NCHW: the manifest's dims right-aligned */
    int64_t d[4] = {1, 1, 1, 1};
    for (int i = 0; i < io->rank && i < 4; i++)
        d[4 - io->rank + i] = io->shape[i];
    for (int i = 0; i < io->rank - 4; i++)
        d[0] *= io->shape[i];
    if (a->batches != d[0] || a->channels != d[1] || a->depth != 1 || a->height != d[2] ||
        a->width != d[3])
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: the model reports [%lld, %lld, %lld, %lld] (depth %lld), the manifest "
                       "[%lld, %lld, %lld, %lld]",
                       what, (long long)a->batches, (long long)a->channels, (long long)a->height,
                       (long long)a->width, (long long)a->depth, (long long)d[0], (long long)d[1],
                       (long long)d[2], (long long)d[3]);
    const char *want = elem == ANE_ELEM_FP16 ? "Float16" : "Float32";
    if (strcmp(a->type, want) != 0)
        return nc_fail(err, NC_ERR_FORMAT, "%s: the model reports type %s, the manifest %s", what,
                       a->type, io->dtype);
    if (a->row_stride)
        NC_TRY(ane_layout_from_strides(what, elem, out->layout.rows, out->layout.width,
                                       (size_t)a->row_stride, &out->layout, err));
    int64_t plane = d[2] * (int64_t)out->layout.row_bytes, batch = plane * d[1];
    if ((a->plane_stride && a->plane_stride != plane) ||
        (a->batch_stride && a->batch_stride != batch))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: plane/batch strides %lld/%lld bytes, the host packs rows (%lld/%lld)",
                       what, (long long)a->plane_stride, (long long)a->batch_stride,
                       (long long)plane, (long long)batch);
    return NC_OK;
}

static nc_status bind_proc(const ane_attr_proc *p, const lower_fn_info *f, ane_binding *out,
                           nc_error *err) {
    memset(out, 0, sizeof *out);
    if (p->n_in != f->n_in || p->n_out != f->n_out)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: the model has %d inputs and %d outputs, the manifest %d and %d",
                       f->name, p->n_in, p->n_out, f->n_in, f->n_out);
    snprintf(out->fn, sizeof out->fn, "%s", f->name);
    out->proc_id = p->id;
    out->n_in = f->n_in;
    out->n_out = f->n_out;
    for (int i = 0; i < f->n_in; i++)
        NC_TRY(bind_io(p, f, &f->in[i], 0, &out->in[i], err));
    for (int i = 0; i < f->n_out; i++)
        NC_TRY(bind_io(p, f, &f->out[i], 1, &out->out[i], err));
    return NC_OK;
}

nc_status ane_bind_function(const ane_attrs *a, const lower_fn_info *f, ane_binding *out,
                            nc_error *err) {
    memset(out, 0, sizeof *out);
    const ane_attr_proc *p = ane_attrs_proc(a, f->name);
    if (!p)
        return nc_fail(err, NC_ERR_NOT_FOUND, "modelAttributes has no procedure for function %s",
                       f->name);
    nc_status st =
        p->status_fit || !a->n_status
            ? bind_proc(p, f, out, err)
            : nc_fail(err, NC_ERR_FORMAT, "%s: no NetworkStatusList entry describes procedure %d",
                      f->name, p->id);
    if (!st || !a->n_status) return st;
    /* the entry at its position is another procedure's (the list in
     * another order, or two procedures with the same names and other
     * shapes): the entry whose names and shapes fit */
    for (int j = 0; j < a->n_status; j++) {
        ane_attr_proc q;
        nc_error skip = {0};
        if (ane_attrs_proc_with_status(a, p, j, &q, &skip)) continue;
        nc_status sj = bind_proc(&q, f, out, &skip);
        ane_attr_proc_free(&q);
        if (!sj) return NC_OK;
    }
    return st;
}

const ane_bound_io *ane_binding_io(const ane_binding *b, const char *name, int is_output) {
    int n = is_output ? b->n_out : b->n_in;
    const ane_bound_io *ios = is_output ? b->out : b->in;
    for (int i = 0; i < n; i++)
        if (strcmp(ios[i].name, name) == 0) return &ios[i];
    return NULL;
}
