/* rocketmq_emulator.native._lane, fourth part: the consume-queue side of a run of single messages.
 *
 *   run_queue_offsets(msgs, cqs_by_key)
 *       twin: store/message_store.py MessageStore._reserve_queue_offsets for a run (kind _RUN) without its
 *       `reserve` calls: each message's ConsumeQueue and queue offset, and each queue with its count of units;
 *       None when the twin must run (a transactional message, a queue not made yet).
 *   put_units(cqs, offsets, sizes, msgs, queue_offsets)
 *       twin: the unit loop of MessageStore._dispatch, each unit as ConsumeQueue.put's fast path writes it (the
 *       queue's next unit, in its last segment, within the blocks reserved); returns how many units it did: the
 *       twin does the rest, from there, in order. The queues' attributes (wrote_position of the segment,
 *       max_offset_in_queue, max_physic_offset, dirty) are set once per queue.
 *   index_pending(pending, msgs, offsets, ts)
 *       twin: the key-index loop of MessageStore._dispatch: for each message with keys (its `keys`, else what
 *       its `index_keys()` returns), (topic, keys, physical offset, ts) appended to `pending`, in order.
 */
#include "lane.h"

static PyObject *s_index_keys, *s_max_offset_in_queue, *s_max_physic_offset,
    *s_file_size, *s_queue, *s_files, *s_wrote_position, *s_allocated, *s_mm, *s_dirty;

#define TRANSACTION_MASK 0xC
#define MAX_QUEUES 64 /* distinct queues one call keeps track of; more: the twin */

static int as_ll(PyObject *v, long long *out) {
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int attr_ll(PyObject *o, PyObject *name, long long *out) { return as_ll(PyObject_GetAttr(o, name), out); }

/* a message's attribute (slots.c: the message class's slots read directly) */
static int msg_ll(PyObject *m, int name, long long *out) { return as_ll(lane_get(m, name), out); }

/* run_queue_offsets(msgs, cqs_by_key) -> (cqs, queue_offsets, [(cq, count), ...]) | None */
PyObject *lane_run_queue_offsets(PyObject *self, PyObject *args) {
    PyObject *msgs, *by_key;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &msgs, &PyDict_Type, &by_key))
        return NULL;
    Py_ssize_t n = PyList_Size(msgs);
    PyObject *seen[MAX_QUEUES];
    long long next[MAX_QUEUES], start[MAX_QUEUES];
    int nq = 0;
    PyObject *cqs = PyList_New(n), *qos = PyList_New(n), *counts = NULL;
    if (cqs == NULL || qos == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PyList_GetItem(msgs, i);
        long long sys_flag;
        if (msg_ll(m, A_SYS_FLAG, &sys_flag) < 0 || sys_flag & TRANSACTION_MASK)
            goto twin;
        PyObject *topic = lane_get(m, A_TOPIC), *queue_id = lane_get(m, A_QUEUE_ID);
        PyObject *key = (topic && queue_id) ? PyTuple_Pack(2, topic, queue_id) : NULL;
        Py_XDECREF(topic);
        Py_XDECREF(queue_id);
        if (key == NULL)
            goto twin;
        PyObject *cq = PyDict_GetItemWithError(by_key, key); /* borrowed */
        Py_DECREF(key);
        if (cq == NULL || cq == Py_None)
            goto twin;
        int q = 0;
        while (q < nq && seen[q] != cq)
            q++;
        if (q == nq) {
            if (nq == MAX_QUEUES || attr_ll(cq, s_max_offset_in_queue, &start[q]) < 0)
                goto twin;
            seen[q] = cq;
            next[q] = start[q];
            nq++;
        }
        PyObject *qo = PyLong_FromLongLong(next[q]++);
        if (qo == NULL)
            goto error;
        Py_INCREF(cq);
        PyList_SetItem(cqs, i, cq);
        PyList_SetItem(qos, i, qo);
    }
    counts = PyList_New(nq);
    if (counts == NULL)
        goto error;
    for (int q = 0; q < nq; q++) {
        PyObject *pair = Py_BuildValue("(OL)", seen[q], next[q] - start[q]);
        if (pair == NULL)
            goto error;
        PyList_SetItem(counts, q, pair);
    }
    PyObject *out = PyTuple_Pack(3, cqs, qos, counts);
    Py_DECREF(cqs);
    Py_DECREF(qos);
    Py_DECREF(counts);
    return out;
twin:
    PyErr_Clear();
    Py_XDECREF(cqs);
    Py_XDECREF(qos);
    Py_RETURN_NONE;
error:
    Py_XDECREF(cqs);
    Py_XDECREF(qos);
    Py_XDECREF(counts);
    return NULL;
}

/* One queue's state while put_units writes its units. */
typedef struct {
    PyObject *cq, *mf; /* borrowed (cqs and the queue's files list hold them) */
    Py_buffer view;
    long long max_offset, max_phy, file_size, pos, allocated, pos0;
    int changed;
} unitq_t;

static int open_queue(unitq_t *u, PyObject *cq) {
    u->cq = cq;
    u->mf = NULL;
    u->changed = 0;
    if (attr_ll(cq, s_max_offset_in_queue, &u->max_offset) < 0 || attr_ll(cq, s_max_physic_offset, &u->max_phy) < 0 ||
        attr_ll(cq, s_file_size, &u->file_size) < 0)
        return -1;
    PyObject *queue = PyObject_GetAttr(cq, s_queue);
    PyObject *files = queue ? PyObject_GetAttr(queue, s_files) : NULL;
    Py_XDECREF(queue);
    if (files == NULL)
        return -1;
    if (!PyList_Check(files) || PyList_Size(files) == 0) {
        Py_DECREF(files);
        u->mf = NULL; /* no segment yet: the twin makes it */
        return 0;
    }
    PyObject *mf = PyList_GetItem(files, PyList_Size(files) - 1);
    Py_DECREF(files); /* (the queue keeps the list, the list keeps the segment) */
    PyObject *mm = PyObject_GetAttr(mf, s_mm);
    if (mm == NULL)
        return -1;
    int rc = PyObject_GetBuffer(mm, &u->view, PyBUF_WRITABLE);
    Py_DECREF(mm);
    if (rc < 0)
        return -1;
    if (attr_ll(mf, s_wrote_position, &u->pos) < 0 || attr_ll(mf, s_allocated, &u->allocated) < 0) {
        PyBuffer_Release(&u->view);
        return -1;
    }
    u->mf = mf;
    u->pos0 = u->pos;
    return 0;
}

static int close_queue(unitq_t *u) {
    int rc = 0;
    if (u->mf == NULL)
        return 0;
    PyBuffer_Release(&u->view);
    if (u->changed) {
        PyObject *pos = PyLong_FromLongLong(u->pos), *mo = PyLong_FromLongLong(u->max_offset),
                 *mp = PyLong_FromLongLong(u->max_phy);
        if (pos == NULL || mo == NULL || mp == NULL || PyObject_SetAttr(u->mf, s_wrote_position, pos) < 0 ||
            PyObject_SetAttr(u->cq, s_max_offset_in_queue, mo) < 0 ||
            PyObject_SetAttr(u->cq, s_max_physic_offset, mp) < 0 || PyObject_SetAttr(u->cq, s_dirty, Py_True) < 0)
            rc = -1;
        Py_XDECREF(pos);
        Py_XDECREF(mo);
        Py_XDECREF(mp);
    }
    return rc;
}

/* put_units(cqs, offsets, sizes, msgs, queue_offsets) -> units done (the twin goes on from there) */
PyObject *lane_put_units(PyObject *self, PyObject *args) {
    PyObject *cqs, *offsets, *sizes, *msgs, *qos;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!", &PyList_Type, &cqs, &PyList_Type, &offsets, &PyList_Type, &sizes,
                          &PyList_Type, &msgs, &PyList_Type, &qos))
        return NULL;
    Py_ssize_t n = PyList_Size(cqs);
    if (PyList_Size(offsets) < n || PyList_Size(sizes) < n || PyList_Size(msgs) < n || PyList_Size(qos) < n)
        return PyLong_FromLong(0);
    unitq_t qs[MAX_QUEUES];
    int nq = 0, failed = 0;
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        PyObject *cq = PyList_GetItem(cqs, i);
        if (cq == Py_None)
            continue; /* a message with no unit */
        int q = 0;
        while (q < nq && qs[q].cq != cq)
            q++;
        if (q == nq) {
            if (nq == MAX_QUEUES || open_queue(&qs[q], cq) < 0) {
                failed = 1;
                break;
            }
            nq++;
        }
        unitq_t *u = &qs[q];
        long long phy = PyLong_AsLongLong(PyList_GetItem(offsets, i)), size = PyLong_AsLongLong(PyList_GetItem(sizes, i)),
                  index = PyLong_AsLongLong(PyList_GetItem(qos, i)), tags;
        if (PyErr_Occurred() || msg_ll(PyList_GetItem(msgs, i), A_TAGS_CODE, &tags) < 0) {
            failed = 1;
            break;
        }
        if (phy + size <= u->max_phy)
            continue; /* already dispatched */
        if (u->mf == NULL || index != u->max_offset || u->pos < 0 || u->pos >= u->file_size || u->pos + 20 > u->allocated ||
            u->pos + 20 > u->view.len || size < -2147483648LL || size > 2147483647LL)
            break; /* the twin's slower ways from here */
        unsigned char *p = (unsigned char *)u->view.buf + u->pos;
        p = put64(p, phy);
        p = put32(p, size);
        put64(p, tags);
        u->pos += 20;
        u->max_offset = index + 1;
        u->max_phy = phy + size;
        u->changed = 1;
    }
    for (int q = 0; q < nq; q++)
        if (close_queue(&qs[q]) < 0)
            failed = -1;
    if (failed == -1)
        return NULL; /* the units written are not recorded: an attribute could not be set (never with the store's) */
    PyErr_Clear();
    return PyLong_FromSsize_t(i);
}

/* index_pending(pending, msgs, offsets, ts) -> None */
PyObject *lane_index_pending(PyObject *self, PyObject *args) {
    PyObject *pending, *msgs, *offsets, *ts;
    if (!PyArg_ParseTuple(args, "O!O!O!O", &PyList_Type, &pending, &PyList_Type, &msgs, &PyList_Type, &offsets, &ts))
        return NULL;
    Py_ssize_t n = PyList_Size(msgs);
    if (PyList_Size(offsets) < n) {
        PyErr_SetString(PyExc_ValueError, "fewer offsets than messages");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PyList_GetItem(msgs, i);
        PyObject *keys = lane_get(m, A_KEYS);
        if (keys == Py_None) {
            Py_DECREF(keys);
            keys = PyObject_CallMethodObjArgs(m, s_index_keys, NULL);
        }
        if (keys == NULL)
            return NULL;
        int truth = PyObject_IsTrue(keys);
        if (truth > 0) {
            PyObject *topic = lane_get(m, A_TOPIC);
            PyObject *entry = topic ? PyTuple_Pack(4, topic, keys, PyList_GetItem(offsets, i), ts) : NULL;
            Py_XDECREF(topic);
            truth = entry == NULL ? -1 : PyList_Append(pending, entry);
            Py_XDECREF(entry);
        }
        Py_DECREF(keys);
        if (truth < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

int lane_dispatch_init(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1;
    INTERN(s_index_keys, "index_keys")
    INTERN(s_max_offset_in_queue, "max_offset_in_queue")
    INTERN(s_max_physic_offset, "max_physic_offset") INTERN(s_file_size, "file_size") INTERN(s_queue, "queue")
    INTERN(s_files, "files") INTERN(s_wrote_position, "wrote_position") INTERN(s_allocated, "allocated")
    INTERN(s_mm, "mm") INTERN(s_dirty, "dirty")
#undef INTERN
    return 0;
}
