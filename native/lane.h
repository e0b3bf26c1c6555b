/* What the native lane's C files share (native/_lane.c, native/read_sends.c). */
#ifndef ROCKETMQ_EMULATOR_LANE_H
#define ROCKETMQ_EMULATOR_LANE_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline unsigned char *put32(unsigned char *p, int64_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u >> 24); p[1] = (unsigned char)(u >> 16); p[2] = (unsigned char)(u >> 8);
    p[3] = (unsigned char)u;
    return p + 4;
}

static inline unsigned char *put64(unsigned char *p, int64_t v) {
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--)
        *p++ = (unsigned char)(u >> (8 * i));
    return p;
}

/* The frame at buf[pos:len] by FrameDecoder's prefix rules (split_frames and read_sends both split this way):
 * 1 a complete frame (*word = serialization type << 24 | header length, *hlen, *end = the offset after it), 0 not
 * complete yet, -1 a prefix that breaks a rule ((*bad_total, *bad_word): what FrameDecoder._check_prefix words). */
static inline int lane_next_frame(const unsigned char *buf, Py_ssize_t len, Py_ssize_t pos, Py_ssize_t max_len,
                                  uint32_t *word, uint32_t *hlen, Py_ssize_t *end, int32_t *bad_total,
                                  uint32_t *bad_word) {
    Py_ssize_t avail = len - pos;
    if (avail < 4)
        return 0;
    int32_t total = (int32_t)be32(buf + pos);
    *bad_total = total;
    *bad_word = 0;
    if (avail < 8)
        return (total < 4 || total > max_len) ? -1 : 0;
    *word = be32(buf + pos + 4);
    *hlen = *word & 0xFFFFFF;
    if (total < 4 || total > max_len || *word > 0x1FFFFFF || (int64_t)*hlen > (int64_t)total - 4) {
        *bad_word = *word;
        return -1;
    }
    *end = pos + 4 + (Py_ssize_t)total;
    return *end > len ? 0 : 1;
}

/* v in decimal at out (at most 20 characters, no terminator): its length; what "%lld" writes */
static inline int fmt_i64(char *out, long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int len = 0;
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = tmp[--n];
    return len;
}

/* v as 16 upper-case hex digits at out: what "%016llX" writes */
static inline void fmt_hex16(char *out, unsigned long long v) {
    static const char digits[] = "0123456789ABCDEF";
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = digits[v & 15];
}

/* _lane.c: a message's raw properties read once (new references) */
typedef struct {
    PyObject *index_keys, *tags_code;
    int wait, special;
} props_scan_t;
int lane_scan_properties(const char *raw, Py_ssize_t n, props_scan_t *out);
/* the common message's stored properties and what the index and queue need (new references) */
typedef struct {
    PyObject *final, *index_keys, *tags_code;
} plain_props_t;
int lane_plain_properties(const char *raw, Py_ssize_t n, const char *suffix, Py_ssize_t sl, plain_props_t *out);
PyObject *lane_tuple(Py_ssize_t n, PyObject *const items[]);

/* _lane.c: a MessageExtBrokerInner of its 13 constructor arguments, made without running __init__ */
PyObject *lane_new_inner(PyObject *cls, PyObject *const values[13]);

/* _lane.c: batch_messages' work (a batch body's messages and their bodies' total, or None) */
PyObject *lane_batch_items(PyObject *cls, PyObject *body, PyObject *suffix, PyObject *topic, long long queue_id,
                           long long sys_flag, long long born_ts, PyObject *born, PyObject *port);

/* read_sends.c */
PyObject *lane_read_sends(PyObject *self, PyObject *args);
PyObject *lane_success_frames(PyObject *self, PyObject *args);
PyObject *lane_msg_ids(PyObject *self, PyObject *args);
PyObject *lane_send_header(PyObject *self, PyObject *args);
PyObject *lane_pull_header(PyObject *self, PyObject *args);
int lane_read_sends_init(void);

/* index_drain.c */
PyObject *lane_index_drain(PyObject *self, PyObject *args);
int lane_index_drain_init(void);

/* dispatch.c */
PyObject *lane_run_queue_offsets(PyObject *self, PyObject *args);
PyObject *lane_put_units(PyObject *self, PyObject *args);
PyObject *lane_index_pending(PyObject *self, PyObject *args);

/* slots.c: PyObject_GetAttr / PyObject_SetAttr for the message objects' attributes, their slots read and set
 * directly; the attributes in the order of lane_new_inner's values (MessageExtBrokerInner.__init__'s) */
enum lane_attr {
    A_TOPIC, A_QUEUE_ID, A_BODY, A_FLAG, A_PROPERTIES_RAW, A_TAGS_CODE, A_SYS_FLAG, A_BORN_TIMESTAMP, A_BORN_HOST,
    A_BORN_PORT, A_RECONSUME_TIMES, A_PREPARED_TRANSACTION_OFFSET, A_KEYS, A_COUNT
};
PyObject *lane_get(PyObject *o, int attr);
int lane_set(PyObject *o, int attr, PyObject *v);
int lane_slots_init(void);
int lane_dispatch_init(void);

#endif
