/* rocketmq_emulator.native._lane: the native lane of the send path (optional; see native/__init__.py).
 *
 * Every function here has a Python twin that stays the reference implementation and the fallback, and the
 * twins must agree byte for byte (tests/test_native_lane.py, hypothesis):
 *
 *   split_frames(buf, pos, max_frame_length)  protocol/frame.py  FrameDecoder (the frame prefix rules)
 *   scan_properties(raw)                      broker/core/send_inner.py  _scan_properties
 *   plain_properties(raw, suffix)             broker/core/send_inner.py  _plain_properties
 *   batch_messages(...)                       broker/core/send_inner.py  InnerMessageBuilder.batch's loop
 *   pack_records(...)                         store/commitlog.py  CommitLog._pack (the record bytes)
 *   scan_units(...)                           store/message_lookup.py  MessageLookup._scan_units (pulls)
 *   success_frame(segments, ...)              protocol/headers.py  SendMessageResponseHeader.success_frame_encoder
 *   read_sends, success_frames, send_header   read_sends.c (the read lane: a read's plain sends taken whole)
 *   index_drain(...)                          index_drain.c  store/index_file.py IndexService._drain_into
 *   run_queue_offsets, put_units              dispatch.c  store/message_store.py (a run's queue offsets, units)
 *   index_pending                             dispatch.c  store/message_store.py (a put's key-index entries)
 *   msg_ids                                   read_sends.c store/results.py (a batch's msgId)
 *   (the message objects' attributes)         slots.c     (read and set through their slots directly)
 *
 * Written against the limited API of CPython 3.11 (one abi3 build for every later version) in plain C: no
 * build-time dependency beyond a C compiler, which `pip install` uses when there is one (the extension is
 * optional: without a compiler the package installs and runs its Python path).
 */
#include "lane.h"

/* ------------------------------------------------------------------------------------------------ */
/* split_frames                                                                                      */
/* ------------------------------------------------------------------------------------------------ */


/* split_frames(buf, pos, max_frame_length) -> (frames, bad)
 *   frames: [(word, header, body, end), ...] for every complete frame from `pos` whose prefix is valid, in order
 *           (word = serialization type << 24 | header length; header and body as bytes; end = the offset after it)
 *   bad:    None, or (total, word) of the first frame whose prefix breaks a rule (FrameDecoder._check_prefix
 *           words the error): no frame after it is returned */
static PyObject *split_frames(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t pos, max_len;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &pos, &max_len))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t len = view.len;
    PyObject *frames = PyList_New(0);
    PyObject *bad = NULL;
    if (frames == NULL)
        goto fail;
    if (pos < 0)
        pos = 0;
    for (;;) {
        uint32_t word, hlen;
        Py_ssize_t end;
        int32_t bad_total;
        uint32_t bad_word;
        int found = lane_next_frame(buf, len, pos, max_len, &word, &hlen, &end, &bad_total, &bad_word);
        if (found < 0 && (bad = Py_BuildValue("(iI)", bad_total, bad_word)) == NULL)
            goto fail;
        if (found <= 0)
            break;
        Py_ssize_t body_start = pos + 8 + (Py_ssize_t)hlen;
        PyObject *item = Py_BuildValue("(Iy#y#n)", word, (const char *)buf + pos + 8, (Py_ssize_t)hlen,
                                       (const char *)buf + body_start, end - body_start, end);
        if (item == NULL)
            goto fail;
        int rc = PyList_Append(frames, item);
        Py_DECREF(item);
        if (rc < 0)
            goto fail;
        pos = end;
    }
    PyBuffer_Release(&view);
    if (bad == NULL) {
        bad = Py_None;
        Py_INCREF(bad);
    }
    PyObject *out = PyTuple_Pack(2, frames, bad);
    Py_DECREF(frames);
    Py_DECREF(bad);
    return out;
fail:
    PyBuffer_Release(&view);
    Py_XDECREF(frames);
    Py_XDECREF(bad);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------ */
/* scan_properties                                                                                   */
/* ------------------------------------------------------------------------------------------------ */

/* Java String.hashCode() of UTF-8 text already known to be valid, over its UTF-16 code units, as a signed
 * 32-bit int. */
static int32_t java_hash_utf8(const unsigned char *s, Py_ssize_t n) {
    uint32_t h = 0;
    Py_ssize_t i = 0;
    while (i < n) {
        uint32_t c = s[i];
        if (c < 0x80) {
            i += 1;
        } else if (c < 0xE0) {
            c = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F);
            i += 2;
        } else if (c < 0xF0) {
            c = ((c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            i += 3;
        } else {
            c = ((c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) | ((uint32_t)(s[i + 2] & 0x3F) << 6) |
                (s[i + 3] & 0x3F);
            i += 4;
            c -= 0x10000; /* a surrogate pair */
            h = 31 * h + (0xD800 + (c >> 10));
            c = 0xDC00 + (c & 0x3FF);
        }
        h = 31 * h + c;
    }
    return (int32_t)h;
}

static int name_is(const char *p, Py_ssize_t n, const char *name) {
    return (Py_ssize_t)strlen(name) == n && memcmp(p, name, (size_t)n) == 0;
}

/* One pass over raw properties (lane.h's props_scan_t); -1 with an exception (keys, tags or UNIQ_KEY not UTF-8).
 * Twin: broker/core/send_inner.py _scan_properties. */
int lane_scan_properties(const char *raw, Py_ssize_t n, props_scan_t *out) {
    const char *tags = NULL, *keys = NULL, *uniq = NULL;
    Py_ssize_t tl = 0, kl = 0, ul = 0;
    int wait = 0, special = 0;
    if (n > 0) {
        Py_ssize_t start = 0;
        for (;;) {
            const char *stop = memchr(raw + start, '\x02', (size_t)(n - start));
            Py_ssize_t i = stop != NULL ? stop - raw : n;
            const char *item = raw + start;
            Py_ssize_t il = i - start;
            start = i + 1;
            const char *sep = memchr(item, '\x01', (size_t)il);
            Py_ssize_t nl = sep ? sep - item : il;
            const char *value = sep ? sep + 1 : item + il;
            Py_ssize_t vl = sep ? il - nl - 1 : 0;
            switch (nl) {
            case 4:
                if (name_is(item, nl, "TAGS")) {
                    tags = value;
                    tl = vl;
                } else if (name_is(item, nl, "KEYS")) {
                    keys = value;
                    kl = vl;
                } else if (name_is(item, nl, "WAIT")) {
                    wait = 1;
                }
                break;
            case 8:
                if (name_is(item, nl, "UNIQ_KEY")) {
                    uniq = value;
                    ul = vl;
                } else if (name_is(item, nl, "TRAN_MSG")) {
                    special = 1;
                }
                break;
            case 5:
                if (name_is(item, nl, "DELAY"))
                    special = 1;
                break;
            case 7:
                if (name_is(item, nl, "CLUSTER"))
                    special = 1;
                break;
            case 16:
                if (name_is(item, nl, "TIMER_DELIVER_MS"))
                    special = 1;
                break;
            default:
                break;
            }
            if (i >= n)
                break;
        }
    }
    PyObject *index_keys = NULL;
    if (keys != NULL && kl > 0) { /* keys.decode().split(): Python's own split (Unicode whitespace) */
        PyObject *text = PyUnicode_DecodeUTF8(keys, kl, NULL);
        if (text == NULL)
            return -1;
        index_keys = PyUnicode_Split(text, NULL, -1);
        Py_DECREF(text);
    } else {
        index_keys = PyList_New(0);
    }
    if (index_keys == NULL)
        return -1;
    if (uniq != NULL && ul > 0) {
        PyObject *u = PyUnicode_DecodeUTF8(uniq, ul, NULL);
        if (u == NULL || PyList_Append(index_keys, u) < 0) {
            Py_XDECREF(u);
            Py_DECREF(index_keys);
            return -1;
        }
        Py_DECREF(u);
    }
    long tags_code = 0;
    if (tags != NULL && tl > 0) {
        Py_ssize_t ascii = 0;
        while (ascii < tl && (unsigned char)tags[ascii] < 0x80)
            ascii++;
        if (ascii < tl) { /* validated as .decode() does (and raising as it does); ASCII is valid UTF-8 */
            PyObject *t = PyUnicode_DecodeUTF8(tags, tl, NULL);
            if (t == NULL) {
                Py_DECREF(index_keys);
                return -1;
            }
            Py_DECREF(t);
        }
        tags_code = java_hash_utf8((const unsigned char *)tags, tl);
    }
    PyObject *code = PyLong_FromLong(tags_code);
    if (code == NULL) {
        Py_DECREF(index_keys);
        return -1;
    }
    out->index_keys = index_keys;
    out->tags_code = code;
    out->wait = wait;
    out->special = special;
    return 0;
}

/* a tuple of `n` new references (stolen, also on failure; NULL items allowed only after an error) */
PyObject *lane_tuple(Py_ssize_t n, PyObject *const items[]) {
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (t == NULL || items[i] == NULL || PyTuple_SetItem(t, i, items[i]) < 0) {
            for (Py_ssize_t j = t == NULL || items[i] == NULL ? i : i + 1; j < n; j++)
                Py_XDECREF(items[j]);
            Py_XDECREF(t);
            return NULL;
        }
    }
    return t;
}

/* scan_properties(raw: bytes) -> (index_keys: list[str], tags_code: int, wait: bool, special: bool); see the
 * Python twin for the rules. */
static PyObject *scan_properties(PyObject *self, PyObject *arg) {
    char *raw;
    Py_ssize_t n;
    props_scan_t sc;
    if (PyBytes_AsStringAndSize(arg, &raw, &n) < 0 || lane_scan_properties(raw, n, &sc) < 0)
        return NULL;
    return lane_tuple(4, (PyObject *const[4]){sc.index_keys, sc.tags_code, PyBool_FromLong(sc.wait),
                                               PyBool_FromLong(sc.special)});
}


/* plain_properties(raw: bytes, suffix: bytes) -> (final: bytes, index_keys, tags_code), or None when a property
 * needs the full path (DELAY, TRAN_MSG, CLUSTER, TIMER_DELIVER_MS): the common message's properties as stored,
 * WAIT dropped (its first pair, as protocol.message.remove_property) and `suffix` (CLUSTER) appended. Twin:
 * broker/core/send_inner.py _plain_properties. */
static PyObject *plain_properties(PyObject *self, PyObject *args) {
    PyObject *raw_o, *suffix_o;
    if (!PyArg_ParseTuple(args, "SS", &raw_o, &suffix_o))
        return NULL;
    char *raw, *suffix;
    Py_ssize_t n, sl;
    if (PyBytes_AsStringAndSize(raw_o, &raw, &n) < 0 || PyBytes_AsStringAndSize(suffix_o, &suffix, &sl) < 0)
        return NULL;
    plain_props_t pp;
    int rc = lane_plain_properties(raw, n, suffix, sl, &pp);
    if (rc < 0)
        return NULL;
    if (rc == 0)
        Py_RETURN_NONE;
    return lane_tuple(3, (PyObject *const[3]){pp.final, pp.index_keys, pp.tags_code});
}

/* plain_properties' work, for read_sends.c too (lane.h): 1 with `out` filled (new references), 0 when a property
 * needs the full path, -1 with an exception */
int lane_plain_properties(const char *raw, Py_ssize_t n, const char *suffix, Py_ssize_t sl, plain_props_t *out) {
    props_scan_t sc;
    if (lane_scan_properties(raw, n, &sc) < 0)
        return -1;
    if (sc.special) {
        Py_DECREF(sc.index_keys);
        Py_DECREF(sc.tags_code);
        return 0;
    }
    /* kept = raw[0:a] + raw[b:n] (WAIT's pair removed), then its trailing 0x02 stripped */
    Py_ssize_t a = n, b = n;
    if (sc.wait) {
        for (Py_ssize_t j = 0; j + 5 <= n; j++) {
            if (memcmp(raw + j, "WAIT\x01", 5) == 0 && (j == 0 || raw[j - 1] == '\x02')) {
                const char *end = memchr(raw + j, '\x02', (size_t)(n - j));
                a = j;
                b = end == NULL ? n : (end - raw) + 1;
                break;
            }
        }
    }
    Py_ssize_t tail = n - b, head = a;
    while (tail > 0 && raw[b + tail - 1] == '\x02')
        tail--;
    if (tail == 0)
        while (head > 0 && raw[head - 1] == '\x02')
            head--;
    /* the twin appends the suffix when its `raw` is not empty: after WAIT's removal (already stripped) when
     * there was a WAIT, else the raw as sent; otherwise the suffix without its leading separator */
    int appended = sc.wait ? head + tail > 0 : n > 0;
    PyObject *final;
    if (appended) {
        final = PyBytes_FromStringAndSize(NULL, head + tail + sl);
        if (final != NULL) {
            char *p = PyBytes_AsString(final);
            memcpy(p, raw, (size_t)head);
            memcpy(p + head, raw + b, (size_t)tail);
            memcpy(p + head + tail, suffix, (size_t)sl);
        }
    } else {
        final = PyBytes_FromStringAndSize(sl > 0 ? suffix + 1 : suffix, sl > 0 ? sl - 1 : 0);
    }
    if (final == NULL) {
        Py_DECREF(sc.index_keys);
        Py_DECREF(sc.tags_code);
        return -1;
    }
    out->final = final;
    out->index_keys = sc.index_keys;
    out->tags_code = sc.tags_code;
    return 1;
}

/* ------------------------------------------------------------------------------------------------ */
/* pack_records                                                                                      */
/* ------------------------------------------------------------------------------------------------ */

/* A MessageExtBrokerInner (or any class whose __init__ only stores its 13 arguments as these attributes, in this
 * order) made without running __init__: allocated as object.__new__ does, each attribute set as __init__ sets it
 * (a Python __init__ call is most of the cost of making one). Any other class is called. */
PyObject *lane_new_inner(PyObject *cls, PyObject *const values[13]) {
    if (!PyType_Check(cls) || !(PyType_GetFlags((PyTypeObject *)cls) & Py_TPFLAGS_HEAPTYPE) ||
        PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type) || PyType_IsSubtype((PyTypeObject *)cls, &PyLong_Type))
        return PyObject_CallFunctionObjArgs(cls, values[0], values[1], values[2], values[3], values[4], values[5],
                                            values[6], values[7], values[8], values[9], values[10], values[11],
                                            values[12], NULL);
    PyObject *obj = PyType_GenericNew((PyTypeObject *)cls, NULL, NULL);
    if (obj == NULL)
        return NULL;
    for (int i = 0; i < 13; i++) {
        if (lane_set(obj, i, values[i]) < 0) {
            Py_DECREF(obj);
            return NULL;
        }
    }
    return obj;
}

#define V6_BITS 0x30 /* MessageSysFlag.BORNHOST_V6 | STOREHOSTADDRESS_V6 */
#define BORN_V6 0x10
#define STORE_V6 0x20


/* one message's fields, borrowed or owned as noted */
typedef struct {
    PyObject *topic_o, *body_o, *props_o, *born_o; /* owned */
    const char *topic; Py_ssize_t tl;
    const char *body; Py_ssize_t bl;
    const char *props; Py_ssize_t pl;
    const char *born; Py_ssize_t hl;
    long long queue_id, flag, sys_flag, born_ts, born_port, reconsume, prepared, qo;
    uint32_t crc;
} rec_t;

static void rec_clear(rec_t *r) {
    Py_XDECREF(r->topic_o); Py_XDECREF(r->body_o); Py_XDECREF(r->props_o); Py_XDECREF(r->born_o);
}

static int in_i32(long long v) { return v >= -2147483648LL && v <= 2147483647LL; }

/* an int attribute; -1 with an exception when absent or not an int */
static int int_attr(PyObject *m, int name, long long *out) {
    PyObject *v = lane_get(m, name);
    if (v == NULL)
        return -1;
    if (!PyLong_Check(v)) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "not an int");
        return -1;
    }
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int bytes_attr(PyObject *m, int name, PyObject **owned, const char **p, Py_ssize_t *n) {
    PyObject *v = lane_get(m, name);
    if (v == NULL)
        return -1;
    *owned = v;
    if (!PyBytes_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "not bytes");
        return -1;
    }
    char *c;
    if (PyBytes_AsStringAndSize(v, &c, n) < 0)
        return -1;
    *p = c;
    return 0;
}

/* pack_records(msgs, queue_offsets, phy, store_ts, store_host, store_port, max_body, crc32)
 *   -> (records: bytes, offsets: list[int], sizes: list[int]), or None whenever the Python twin must decide
 *      (a refused message, a value out of range, anything unusual: the twin then answers or raises). The first
 *      record's TOTALSIZE is 0 in `records` (the caller writes it last). */
static PyObject *pack_records(PyObject *self, PyObject *args) {
    PyObject *msgs, *qos, *store_host_o, *crc32, *phy_o, *store_ts_o, *store_port_o, *max_body_o;
    long long phy, store_ts, store_port, max_body;
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &msgs, &qos, &phy_o, &store_ts_o, &store_host_o, &store_port_o,
                          &max_body_o, &crc32))
        return NULL;
    phy = PyLong_AsLongLong(phy_o);
    store_ts = PyLong_AsLongLong(store_ts_o);
    store_port = PyLong_AsLongLong(store_port_o);
    max_body = PyLong_AsLongLong(max_body_o);
    if (PyErr_Occurred()) { /* a value out of range: the twin raises what it raises */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    char *store_host;
    Py_ssize_t shl;
    if (!PyBytes_Check(store_host_o) || PyBytes_AsStringAndSize(store_host_o, &store_host, &shl) < 0 ||
        (shl != 4 && shl != 16) || !in_i32(store_port))
        Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Size(msgs);
    if (n <= 0 || PySequence_Size(qos) != n) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    rec_t *recs = PyMem_Calloc((size_t)n, sizeof(rec_t));
    if (recs == NULL)
        return PyErr_NoMemory();
    PyObject *out = NULL, *data = NULL, *offsets = NULL, *sizes = NULL;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        rec_t *r = &recs[i];
        PyObject *m = PySequence_GetItem(msgs, i);
        if (m == NULL)
            goto fallback;
        PyObject *qo = PySequence_GetItem(qos, i);
        int bad = qo == NULL || !PyLong_Check(qo);
        if (!bad) {
            r->qo = PyLong_AsLongLong(qo);
            bad = r->qo == -1 && PyErr_Occurred();
        }
        Py_XDECREF(qo);
        if (bad) {
            Py_DECREF(m);
            goto fallback;
        }
        PyObject *topic = lane_get(m, A_TOPIC);
        r->topic_o = topic;
        if (topic == NULL || !PyUnicode_Check(topic) ||
            (r->topic = PyUnicode_AsUTF8AndSize(topic, &r->tl)) == NULL ||
            bytes_attr(m, A_BODY, &r->body_o, &r->body, &r->bl) < 0 ||
            bytes_attr(m, A_PROPERTIES_RAW, &r->props_o, &r->props, &r->pl) < 0 ||
            bytes_attr(m, A_BORN_HOST, &r->born_o, &r->born, &r->hl) < 0 ||
            int_attr(m, A_QUEUE_ID, &r->queue_id) < 0 || int_attr(m, A_FLAG, &r->flag) < 0 ||
            int_attr(m, A_SYS_FLAG, &r->sys_flag) < 0 || int_attr(m, A_BORN_TIMESTAMP, &r->born_ts) < 0 ||
            int_attr(m, A_BORN_PORT, &r->born_port) < 0 || int_attr(m, A_RECONSUME_TIMES, &r->reconsume) < 0 ||
            int_attr(m, A_PREPARED_TRANSACTION_OFFSET, &r->prepared) < 0) {
            Py_DECREF(m);
            goto fallback;
        }
        Py_DECREF(m);
        if (r->tl == 0 || r->tl > 127 || r->pl > 32767 || r->bl > max_body || (r->hl != 4 && r->hl != 16) ||
            !in_i32(r->queue_id) || !in_i32(r->flag) || !in_i32(r->sys_flag) || !in_i32(r->born_port) ||
            !in_i32(r->reconsume))
            goto fallback;
        PyObject *crc = PyObject_CallFunctionObjArgs(crc32, r->body_o, NULL);
        if (crc == NULL)
            goto fallback;
        r->crc = (uint32_t)(PyLong_AsUnsignedLongMask(crc) & 0x7FFFFFFF);
        Py_DECREF(crc);
        /* the fixed part TOTALSIZE..BODYLEN is 80 bytes and the two hosts; then body, TOPICLEN + topic,
         * PROPERTIESLENGTH + properties */
        total += 80 + r->hl + shl + r->bl + 1 + r->tl + 2 + r->pl;
    }
    data = PyBytes_FromStringAndSize(NULL, total);
    offsets = PyList_New(n);
    sizes = PyList_New(n);
    if (data == NULL || offsets == NULL || sizes == NULL)
        goto error;
    unsigned char *p = (unsigned char *)PyBytes_AsString(data);
    if (p == NULL)
        goto error;
    long long at = phy;
    for (Py_ssize_t i = 0; i < n; i++) {
        rec_t *r = &recs[i];
        long long size = 80 + r->hl + shl + r->bl + 1 + r->tl + 2 + r->pl;
        long long host_bits = (r->hl == 16 ? BORN_V6 : 0) | (shl == 16 ? STORE_V6 : 0);
        PyObject *o = PyLong_FromLongLong(at), *z = PyLong_FromLongLong(size);
        if (o == NULL || z == NULL) {
            Py_XDECREF(o);
            Py_XDECREF(z);
            goto error;
        }
        PyList_SetItem(offsets, i, o);
        PyList_SetItem(sizes, i, z);
        p = put32(p, i == 0 ? 0 : size);
        p = put32(p, (int32_t)0xDAA320A7); /* MESSAGE_MAGIC_CODE */
        p = put32(p, r->crc);
        p = put32(p, r->queue_id);
        p = put32(p, r->flag);
        p = put64(p, r->qo);
        p = put64(p, at);
        p = put32(p, (r->sys_flag & ~V6_BITS) | host_bits);
        p = put64(p, r->born_ts);
        memcpy(p, r->born, (size_t)r->hl);
        p += r->hl;
        p = put32(p, r->born_port);
        p = put64(p, store_ts);
        memcpy(p, store_host, (size_t)shl);
        p += shl;
        p = put32(p, store_port);
        p = put32(p, r->reconsume);
        p = put64(p, r->prepared);
        p = put32(p, r->bl);
        memcpy(p, r->body, (size_t)r->bl);
        p += r->bl;
        *p++ = (unsigned char)r->tl;
        memcpy(p, r->topic, (size_t)r->tl);
        p += r->tl;
        *p++ = (unsigned char)(r->pl >> 8);
        *p++ = (unsigned char)r->pl;
        memcpy(p, r->props, (size_t)r->pl);
        p += r->pl;
        at += size;
    }
    out = PyTuple_Pack(3, data, offsets, sizes);
error:
    Py_XDECREF(data);
    Py_XDECREF(offsets);
    Py_XDECREF(sizes);
    for (Py_ssize_t i = 0; i < n; i++)
        rec_clear(&recs[i]);
    PyMem_Free(recs);
    return out;
fallback:
    PyErr_Clear();
    for (Py_ssize_t i = 0; i < n; i++)
        rec_clear(&recs[i]);
    PyMem_Free(recs);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------------ */
/* success_frame                                                                                     */
/* ------------------------------------------------------------------------------------------------ */

/* success_frame(segments, msg_id: str, queue_id: int, queue_offset: int, opaque: int) -> bytes: a send's SUCCESS
 * answer frame: the 8-byte prefix and the JSON header segments[0] msg_id segments[1] queue_id segments[2]
 * queue_offset segments[3] opaque segments[4] (numbers in decimal). Twin: the `encode` closure of
 * protocol/headers.py SendMessageResponseHeader.success_frame_encoder. */
static PyObject *success_frame(PyObject *self, PyObject *args) {
    PyObject *segments, *msg_id;
    long long queue_id, queue_offset, opaque;
    if (!PyArg_ParseTuple(args, "O!ULLL", &PyTuple_Type, &segments, &msg_id, &queue_id, &queue_offset, &opaque))
        return NULL;
    if (PyTuple_Size(segments) != 5) {
        PyErr_SetString(PyExc_ValueError, "five template segments expected");
        return NULL;
    }
    const char *seg[5];
    Py_ssize_t segl[5];
    for (int i = 0; i < 5; i++) {
        char *c;
        if (PyBytes_AsStringAndSize(PyTuple_GetItem(segments, i), &c, &segl[i]) < 0)
            return NULL;
        seg[i] = c;
    }
    Py_ssize_t idl;
    const char *id = PyUnicode_AsUTF8AndSize(msg_id, &idl);
    if (id == NULL)
        return NULL;
    char nums[3][24];
    int numl[3] = {fmt_i64(nums[0], queue_id), fmt_i64(nums[1], queue_offset), fmt_i64(nums[2], opaque)};
    Py_ssize_t hlen = segl[0] + idl + segl[1] + numl[0] + segl[2] + numl[1] + segl[3] + numl[2] + segl[4];
    PyObject *out = PyBytes_FromStringAndSize(NULL, 8 + hlen);
    if (out == NULL)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AsString(out);
    p = put32(p, hlen + 4);
    p = put32(p, hlen);
#define ADD(ptr, len) memcpy(p, ptr, (size_t)(len)); p += (len);
    ADD(seg[0], segl[0]) ADD(id, idl) ADD(seg[1], segl[1]) ADD(nums[0], numl[0]) ADD(seg[2], segl[2])
    ADD(nums[1], numl[1]) ADD(seg[3], segl[3]) ADD(nums[2], numl[2]) ADD(seg[4], segl[4])
#undef ADD
    return out;
}

/* ------------------------------------------------------------------------------------------------ */
/* scan_units                                                                                        */
/* ------------------------------------------------------------------------------------------------ */

static PyObject *s_mm, *s_wrote_position, *s_file_from_offset;

static inline int64_t be64(const unsigned char *p) {
    return (int64_t)(((uint64_t)be32(p) << 32) | (uint64_t)be32(p + 4));
}

/* scan_units(cq_mm, pos, end, offset, max_msg_nums, tags, files, file_size, max_bytes, max_count)
 *   -> (found: int, p: int, total: int, messages: list[bytes], queue_offsets: list[int], phy_offsets: list[int])
 * The pull's walk over consume-queue units from byte `pos` to `end` of `cq_mm`, the records read from the
 * commitlog segments `files` (MappedFile objects: mm, wrote_position, file_from_offset) of `file_size` bytes:
 * the twin of store/message_lookup.py _scan_units for a pull with no record filter and no memory limit, `tags`
 * None (every message) or a set of tag hash codes. found: 0 none matched, 1 found, 2 the first unit's record
 * was removed (MESSAGE_WAS_REMOVING). None when something is off (a unit outside its segment): the twin then
 * walks the units itself. With `joined` true (a pull's answer body) -> (found, p, total, records: bytes,
 * count): the records back to back, copied once from the mapped segments, no object per message. */
static PyObject *scan_units(PyObject *self, PyObject *args) {
    PyObject *cq_mm, *tags, *files;
    Py_ssize_t pos, end, max_msg_nums, max_count;
    long long offset, file_size, max_bytes;
    int joined = 0;
    if (!PyArg_ParseTuple(args, "OnnLnOOLLn|p", &cq_mm, &pos, &end, &offset, &max_msg_nums, &tags, &files,
                          &file_size, &max_bytes, &max_count, &joined))
        return NULL;
    unsigned char *body = NULL; /* joined: the records back to back */
    long long body_cap = 0;
    if (tags != Py_None && !PyAnySet_Check(tags)) {
        PyErr_SetString(PyExc_TypeError, "tags: None or a set");
        return NULL;
    }
    if (!PyList_Check(files) || file_size <= 0) {
        PyErr_SetString(PyExc_TypeError, "files: a list; file_size > 0");
        return NULL;
    }
    if (pos < 0) /* (a unit before the mapping: never from the store) */
        Py_RETURN_NONE;
    Py_buffer cq;
    if (PyObject_GetBuffer(cq_mm, &cq, PyBUF_SIMPLE) < 0)
        return NULL;
    if (end > cq.len)
        end = cq.len;
    Py_ssize_t nfiles = PyList_Size(files);
    long long first_from = 0;
    PyObject *messages = PyList_New(0), *qos = PyList_New(0), *phys = PyList_New(0);
    PyObject *out = NULL;
    /* the segment in use: its buffer, wrote position and start */
    Py_ssize_t cur_idx = -1;
    Py_buffer seg;
    int have_seg = 0;
    long long seg_from = 0, seg_wrote = 0;
    if (messages == NULL || qos == NULL || phys == NULL)
        goto done;
    if (nfiles > 0) {
        PyObject *v = PyObject_GetAttr(PyList_GetItem(files, 0), s_file_from_offset);
        if (v == NULL)
            goto done;
        first_from = PyLong_AsLongLong(v);
        Py_DECREF(v);
        if (PyErr_Occurred())
            goto done;
    }
    long long total = 0, next_phy_file_start = -1;
    int found = 0;
    Py_ssize_t count = 0, p = pos;
    const unsigned char *units = (const unsigned char *)cq.buf;
    for (; p < end; p += 20) {
        if (p + 20 > cq.len) { /* a unit cut by the end of the mapping (the twin's unpack_from raises) */
            PyErr_SetString(PyExc_ValueError, "unit cut");
            goto done;
        }
        long long phy = be64(units + p);
        int32_t size = (int32_t)be32(units + p + 8);
        long long tag = be64(units + p + 12);
        if (phy < next_phy_file_start)
            continue;
        if (total) {
            if (count >= max_msg_nums)
                break;
            if (total + size > max_bytes || count >= max_count)
                break;
        }
        if (tags != Py_None) {
            long long code = tag; /* the tags code as the int32 the filter holds */
            if (tag < -0x80000000LL || tag > 0x7FFFFFFFLL)
                code = (long long)(uint32_t)(((uint64_t)tag + 0x80000000ULL) & 0xFFFFFFFFULL) - 0x80000000LL;
            PyObject *c = PyLong_FromLongLong(code);
            if (c == NULL)
                goto done;
            int hit = PySet_Contains(tags, c);
            Py_DECREF(c);
            if (hit < 0)
                goto done;
            if (!hit)
                continue;
        }
        /* commitlog.get_message(phy, size) */
        int got = 0;
        if (nfiles > 0 && size > 0) {
            long long rel = phy - first_from;
            long long idx = rel >= 0 ? rel / file_size : -((-rel + file_size - 1) / file_size); /* floor */
            if (idx >= 0 && idx < nfiles) {
                if (idx != cur_idx) {
                    if (have_seg) {
                        PyBuffer_Release(&seg);
                        have_seg = 0;
                    }
                    PyObject *mf = PyList_GetItem(files, (Py_ssize_t)idx);
                    PyObject *mm = PyObject_GetAttr(mf, s_mm);
                    PyObject *w = PyObject_GetAttr(mf, s_wrote_position);
                    PyObject *f = PyObject_GetAttr(mf, s_file_from_offset);
                    int rc = (mm == NULL || w == NULL || f == NULL) ? -1 : PyObject_GetBuffer(mm, &seg, PyBUF_SIMPLE);
                    if (rc == 0) {
                        have_seg = 1;
                        seg_wrote = PyLong_AsLongLong(w);
                        seg_from = PyLong_AsLongLong(f);
                    }
                    Py_XDECREF(mm);
                    Py_XDECREF(w);
                    Py_XDECREF(f);
                    if (rc < 0 || PyErr_Occurred())
                        goto done;
                    cur_idx = (Py_ssize_t)idx;
                }
                long long at = phy - seg_from;
                if (at < 0 || (at + size <= seg_wrote && at + size > seg.len)) {
                    /* a slice Python would take from the end or cut short: leave it to the twin */
                    PyErr_SetString(PyExc_ValueError, "unit outside its segment");
                    goto done;
                }
                got = at + size <= seg_wrote;
                if (got && joined) {
                    if (total + size > body_cap) {
                        long long cap = body_cap ? body_cap * 2 : 8192;
                        while (cap < total + size)
                            cap *= 2;
                        unsigned char *grown = PyMem_Realloc(body, (size_t)cap);
                        if (grown == NULL) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        body = grown;
                        body_cap = cap;
                    }
                    memcpy(body + total, (const char *)seg.buf + at, (size_t)size);
                } else if (got) {
                    PyObject *data = PyBytes_FromStringAndSize((const char *)seg.buf + at, size);
                    PyObject *qo = PyLong_FromLongLong(offset + (p - pos) / 20);
                    PyObject *ph = PyLong_FromLongLong(phy);
                    int bad = data == NULL || qo == NULL || ph == NULL || PyList_Append(messages, data) < 0 ||
                              PyList_Append(qos, qo) < 0 || PyList_Append(phys, ph) < 0;
                    Py_XDECREF(data);
                    Py_XDECREF(qo);
                    Py_XDECREF(ph);
                    if (bad)
                        goto done;
                }
            }
        }
        if (!got) {
            if (!total)
                found = 2;
            long long m = phy % file_size;
            if (m < 0)
                m += file_size;
            next_phy_file_start = phy + file_size - m;
            continue;
        }
        count++;
        total += size;
        found = 1;
        next_phy_file_start = -1;
    }
    if (joined)
        out = Py_BuildValue("(inLy#n)", found, p, total, body != NULL ? (const char *)body : "", (Py_ssize_t)total,
                            count);
    else
        out = Py_BuildValue("(inLOOO)", found, p, total, messages, qos, phys);
done:
    PyMem_Free(body);
    if (out == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) { /* off: the twin decides */
        PyErr_Clear();
        out = Py_None;
        Py_INCREF(out);
    }
    if (have_seg)
        PyBuffer_Release(&seg);
    PyBuffer_Release(&cq);
    Py_XDECREF(messages);
    Py_XDECREF(qos);
    Py_XDECREF(phys);
    return out;
}

/* ------------------------------------------------------------------------------------------------ */
/* batch_messages                                                                                    */
/* ------------------------------------------------------------------------------------------------ */

/* batch_messages(cls, body, suffix, topic, queue_id, sys_flag, born_timestamp, born_host, born_port)
 *   -> (messages: list[cls], total_body_bytes) or None
 * The messages of a SEND_BATCH_MESSAGE body, each `cls(topic, queue_id, body, flag, properties, tags_code,
 * sys_flag, born_timestamp, born_host, born_port, 0, 0, index_keys)` with its properties stripped of trailing
 * separators and `suffix` appended (the suffix's tail alone when it has none). None whenever the twin must
 * decide (a malformed item, properties over 32767 bytes, text that is not UTF-8): it then raises what it
 * raises. Twin: broker/core/send_inner.py InnerMessageBuilder.batch's loop. */
static PyObject *batch_items(PyObject *cls, PyObject *body_o, PyObject *suffix_o, PyObject *topic,
                             PyObject *queue_id, PyObject *sys_flag, PyObject *born_ts, PyObject *born,
                             PyObject *port);

static PyObject *batch_messages(PyObject *self, PyObject *args) {
    PyObject *cls, *body_o, *suffix_o, *topic, *queue_id, *sys_flag, *born_ts, *born, *port;
    if (!PyArg_ParseTuple(args, "OSSOOOOOO", &cls, &body_o, &suffix_o, &topic, &queue_id, &sys_flag, &born_ts,
                          &born, &port))
        return NULL;
    return batch_items(cls, body_o, suffix_o, topic, queue_id, sys_flag, born_ts, born, port);
}

/* batch_messages for read_sends.c (lane.h): the numbers as C values */
PyObject *lane_batch_items(PyObject *cls, PyObject *body, PyObject *suffix, PyObject *topic, long long queue_id,
                           long long sys_flag, long long born_ts, PyObject *born, PyObject *port) {
    PyObject *q = PyLong_FromLongLong(queue_id), *f = PyLong_FromLongLong(sys_flag),
             *t = PyLong_FromLongLong(born_ts);
    PyObject *out = (q && f && t) ? batch_items(cls, body, suffix, topic, q, f, t, born, port) : NULL;
    Py_XDECREF(q);
    Py_XDECREF(f);
    Py_XDECREF(t);
    return out;
}

static PyObject *batch_items(PyObject *cls, PyObject *body_o, PyObject *suffix_o, PyObject *topic,
                             PyObject *queue_id, PyObject *sys_flag, PyObject *born_ts, PyObject *born,
                             PyObject *port) {
    char *buf, *suffix;
    Py_ssize_t n, sl;
    if (PyBytes_AsStringAndSize(body_o, &buf, &n) < 0 || PyBytes_AsStringAndSize(suffix_o, &suffix, &sl) < 0)
        return NULL;
    if (n == 0)
        Py_RETURN_NONE;
    PyObject *out = PyList_New(0), *zero = PyLong_FromLong(0);
    if (out == NULL || zero == NULL)
        goto error;
    long long total = 0;
    Py_ssize_t pos = 0;
    const unsigned char *u = (const unsigned char *)buf;
    while (pos < n) {
        if (n - pos < 22)
            goto fallback;
        int32_t size = (int32_t)be32(u + pos), flag = (int32_t)be32(u + pos + 12), body_len = (int32_t)be32(u + pos + 16);
        Py_ssize_t end = pos + size;
        if (size < 22 || end > n || body_len < 0 || 22 + (int64_t)body_len > size)
            goto fallback;
        Py_ssize_t p = pos + 20 + body_len;
        Py_ssize_t plen = ((Py_ssize_t)u[p] << 8) | u[p + 1];
        if (p + 2 + plen != end)
            goto fallback;
        const char *raw = buf + p + 2;
        Py_ssize_t rl = plen;
        PyObject *props;
        if (rl > 0) {
            while (rl > 0 && raw[rl - 1] == '\x02')
                rl--;
            props = PyBytes_FromStringAndSize(NULL, rl + sl);
            if (props == NULL)
                goto error;
            memcpy(PyBytes_AsString(props), raw, (size_t)rl);
            memcpy(PyBytes_AsString(props) + rl, suffix, (size_t)sl);
        } else {
            props = PyBytes_FromStringAndSize(sl > 0 ? suffix + 1 : suffix, sl > 0 ? sl - 1 : 0);
            if (props == NULL)
                goto error;
        }
        if (PyBytes_Size(props) > 32767) {
            Py_DECREF(props);
            goto fallback;
        }
        total += body_len;
        props_scan_t sc;
        char *praw;
        Py_ssize_t pn;
        if (PyBytes_AsStringAndSize(props, &praw, &pn) < 0 || lane_scan_properties(praw, pn, &sc) < 0) {
            Py_DECREF(props);
            goto fallback;
        }
        PyObject *item_body = PyBytes_FromStringAndSize(buf + pos + 20, body_len);
        PyObject *flag_o = PyLong_FromLong(flag);
        PyObject *msg = (item_body == NULL || flag_o == NULL) ? NULL :
            lane_new_inner(cls, (PyObject *const[13]){topic, queue_id, item_body, flag_o, props, sc.tags_code,
                                                      sys_flag, born_ts, born, port, zero, zero, sc.index_keys});
        Py_XDECREF(item_body);
        Py_XDECREF(flag_o);
        Py_DECREF(props);
        Py_DECREF(sc.index_keys);
        Py_DECREF(sc.tags_code);
        if (msg == NULL)
            goto error;
        int rc = PyList_Append(out, msg);
        Py_DECREF(msg);
        if (rc < 0)
            goto error;
        pos = end;
    }
    Py_DECREF(zero);
    return lane_tuple(2, (PyObject *const[2]){out, PyLong_FromLongLong(total)});
fallback:
    PyErr_Clear();
    Py_XDECREF(out);
    Py_XDECREF(zero);
    Py_RETURN_NONE;
error:
    Py_XDECREF(out);
    Py_XDECREF(zero);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"split_frames", split_frames, METH_VARARGS, "Complete frames of a read buffer (see _lane.c)."},
    {"scan_properties", scan_properties, METH_O, "One pass over a message's raw properties (see _lane.c)."},
    {"plain_properties", plain_properties, METH_VARARGS, "A common message's stored properties (see _lane.c)."},
    {"success_frame", success_frame, METH_VARARGS, "A send's SUCCESS answer frame (see _lane.c)."},
    {"scan_units", scan_units, METH_VARARGS, "A pull's walk over consume-queue units (see _lane.c)."},
    {"batch_messages", batch_messages, METH_VARARGS, "The messages of a batch body (see _lane.c)."},
    {"pack_records", pack_records, METH_VARARGS, "The commitlog records of one put (see _lane.c)."},
    {"read_sends", lane_read_sends, METH_VARARGS, "A read's frames, plain sends taken whole (see read_sends.c)."},
    {"success_frames", lane_success_frames, METH_VARARGS, "A stored group's SUCCESS answers (see read_sends.c)."},
    {"send_header", lane_send_header, METH_VARARGS, "A V2 send header as read_sends reads it (see read_sends.c)."},
    {"pull_header", lane_pull_header, METH_VARARGS, "A pull header as read_sends reads it (see read_sends.c)."},
    {"index_drain", lane_index_drain, METH_VARARGS, "Pending keys into an index file (see index_drain.c)."},
    {"run_queue_offsets", lane_run_queue_offsets, METH_VARARGS, "A run's queues and offsets (see dispatch.c)."},
    {"put_units", lane_put_units, METH_VARARGS, "A run's consume-queue units (see dispatch.c)."},
    {"msg_ids", lane_msg_ids, METH_VARARGS, "A put's offset message ids, comma-separated (see read_sends.c)."},
    {"index_pending", lane_index_pending, METH_VARARGS, "A put's key-index entries queued (see dispatch.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lane", "The native lane of the send path (optional).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__lane(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL;
    INTERN(s_mm, "mm") INTERN(s_wrote_position, "wrote_position") INTERN(s_file_from_offset, "file_from_offset")
    if (lane_slots_init() < 0 || lane_read_sends_init() < 0 || lane_index_drain_init() < 0 || lane_dispatch_init() < 0)
        return NULL;
    return PyModule_Create(&module);
}
