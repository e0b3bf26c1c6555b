/* rocketmq_emulator.native._lane: the native lane of the send path (optional; see native/__init__.py).
 *
 * Every function here has a Python twin that stays the reference implementation and the fallback, and the
 * twins must agree byte for byte (tests/test_native_lane.py, hypothesis):
 *
 *   split_frames(buf, pos, max_frame_length)  protocol/frame.py  FrameDecoder (the frame prefix rules)
 *   scan_properties(raw)                      broker/core/send_inner.py  _scan_properties
 *   pack_records(...)                         store/commitlog.py  CommitLog.put_messages (the record bytes)
 *
 * Written against the limited API of CPython 3.11 (one abi3 build for every later version) in plain C: no
 * build-time dependency beyond a C compiler, which `pip install` uses when there is one (the extension is
 * optional: without a compiler the package installs and runs its Python path).
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ */
/* split_frames                                                                                      */
/* ------------------------------------------------------------------------------------------------ */

static inline uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

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
        Py_ssize_t avail = len - pos;
        if (avail < 8) {
            if (avail >= 4) {
                int32_t total = (int32_t)be32(buf + pos);
                if (total < 4 || total > max_len) {
                    bad = Py_BuildValue("(iI)", total, 0u);
                    if (bad == NULL)
                        goto fail;
                }
            }
            break;
        }
        int32_t total = (int32_t)be32(buf + pos);
        uint32_t word = be32(buf + pos + 4);
        uint32_t hlen = word & 0xFFFFFF;
        if (total < 4 || total > max_len || word > 0x1FFFFFF || (int64_t)hlen > (int64_t)total - 4) {
            bad = Py_BuildValue("(iI)", total, word);
            if (bad == NULL)
                goto fail;
            break;
        }
        Py_ssize_t end = pos + 4 + (Py_ssize_t)total;
        if (end > len)
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

/* scan_properties(raw: bytes) -> (index_keys: list[str], tags_code: int, wait: bool, special: bool); see the
 * Python twin for the rules. */
static PyObject *scan_properties(PyObject *self, PyObject *arg) {
    char *raw;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(arg, &raw, &n) < 0)
        return NULL;
    const char *tags = NULL, *keys = NULL, *uniq = NULL;
    Py_ssize_t tl = 0, kl = 0, ul = 0;
    int wait = 0, special = 0;
    if (n > 0) {
        Py_ssize_t start = 0;
        for (Py_ssize_t i = 0; i <= n; i++) {
            if (i < n && raw[i] != '\x02')
                continue;
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
        }
    }
    PyObject *index_keys = NULL;
    if (keys != NULL && kl > 0) { /* keys.decode().split(): Python's own split (Unicode whitespace) */
        PyObject *text = PyUnicode_DecodeUTF8(keys, kl, NULL);
        if (text == NULL)
            return NULL;
        index_keys = PyUnicode_Split(text, NULL, -1);
        Py_DECREF(text);
    } else {
        index_keys = PyList_New(0);
    }
    if (index_keys == NULL)
        return NULL;
    if (uniq != NULL && ul > 0) {
        PyObject *u = PyUnicode_DecodeUTF8(uniq, ul, NULL);
        if (u == NULL || PyList_Append(index_keys, u) < 0) {
            Py_XDECREF(u);
            Py_DECREF(index_keys);
            return NULL;
        }
        Py_DECREF(u);
    }
    long tags_code = 0;
    if (tags != NULL && tl > 0) {
        PyObject *t = PyUnicode_DecodeUTF8(tags, tl, NULL); /* validates (and raises as .decode() does) */
        if (t == NULL) {
            Py_DECREF(index_keys);
            return NULL;
        }
        Py_DECREF(t);
        tags_code = java_hash_utf8((const unsigned char *)tags, tl);
    }
    return Py_BuildValue("(NlNN)", index_keys, tags_code, PyBool_FromLong(wait), PyBool_FromLong(special));
}

/* ------------------------------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"split_frames", split_frames, METH_VARARGS, "Complete frames of a read buffer (see _lane.c)."},
    {"scan_properties", scan_properties, METH_O, "One pass over a message's raw properties (see _lane.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lane", "The native lane of the send path (optional).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__lane(void) { return PyModule_Create(&module); }
