/* rocketmq_emulator.native._lane, second part: the read lane of the send and pull paths.
 *
 *   read_sends(buf, pos, max_frame_length, ctx)   called once per read by the connection (protocol/transport.py,
 *                                                 DispatchTable.lane): split_frames, with every plain
 *                                                 SEND_MESSAGE_V2 taken whole (header read, msgCheck, the
 *                                                 message built), and the header of every PULL_MESSAGE read
 *                                                 (the broker answers it as any other pull, header already
 *                                                 read); twin: the Python path from FrameDecoder to
 *                                                 SendMessageCore.send_run's `plain` messages and
 *                                                 PullMessageRequestHeader.from_ext
 *   success_frames(segments, host_hex, msgs, phy_offsets, queue_offsets, opaques)
 *                                                 the SUCCESS answers of a stored group, one bytes; twin: one
 *                                                 success_frame per message
 *   send_header(header), pull_header(header)     the headers as read_sends reads them, for the tests
 *
 * read_sends takes only what it is sure the Python path would store and answer the same way; any other frame
 * (another code, a binary header, a header it cannot read exactly as msgspec would, a value the Python path
 * coerces, a topic not yet validated, a queue id it would pick at random or refuse, a delayed, transactional
 * or retry message, a size over a limit) is returned as split_frames returns it, in order, for the Python path.
 * Taking less is always safe: the Python path is the reference.
 */
#include "lane.h"

/* ------------------------------------------------------------------------------------------------ */
/* a JSON reader for the one header shape the lane takes                                             */
/* ------------------------------------------------------------------------------------------------ */

typedef struct {
    const unsigned char *p, *end;
    unsigned char *out; /* decoded strings, back to back (never longer than the header) */
    Py_ssize_t outn;
} js_t;

static inline void js_ws(js_t *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static inline int js_char(js_t *j, unsigned char c) {
    js_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return 1;
    }
    return 0;
}

/* A string of ASCII text decoded into j->out: its start and length there. 0 when it is not one the lane takes:
 * not a string, unterminated, a raw control or non-ASCII byte, an escape msgspec refuses or one above 0x7F. */
/* the bytes a JSON string holds as they are: printable ASCII but the quote and the backslash */
static unsigned char PLAIN[256];

static void plain_init(void) {
    for (int c = 0x20; c < 0x80; c++)
        PLAIN[c] = c != '"' && c != '\\';
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* where the plain span from p ends (the first byte that is not PLAIN, or end): eight bytes a step, a byte-wise
 * finish. A byte stops the span when it is '"', '\\', below 0x20 or from 0x80: each test's lowest flagged byte is
 * exact (borrows only flag bytes above a true one), so the lowest flag of them all is the first such byte. */
static const unsigned char *plain_end(const unsigned char *p, const unsigned char *end) {
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
        uint64_t stop = (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w) | w) & HIGHS;
        if (stop != 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
            return p + (__builtin_ctzll(stop) >> 3);
#else
            break; /* the byte-wise finish finds it */
#endif
        }
        p += 8;
    }
    while (p < end && PLAIN[*p])
        p++;
    return p;
}

static int js_str(js_t *j, Py_ssize_t *start, Py_ssize_t *len) {
    if (!js_char(j, '"'))
        return 0;
    const unsigned char *p = j->p, *end = j->end;
    unsigned char *o = j->out + j->outn, *o0 = o;
    for (;;) {
        const unsigned char *q = plain_end(p, end); /* the common case: a span copied as is */
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        p = q;
        if (p >= end)
            return 0;
        unsigned char c = *p++;
        if (c == '"') {
            *start = o0 - j->out;
            *len = o - o0;
            j->outn += o - o0;
            j->p = p;
            return 1;
        }
        if (c != '\\' || p >= end)
            return 0; /* a raw control or non-ASCII byte, or an escape cut short */
        c = *p++;
        switch (c) {
        case '"': case '\\': case '/': break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            if (end - p < 4)
                return 0;
            unsigned v = 0;
            for (int i = 0; i < 4; i++) {
                unsigned char h = p[i];
                v <<= 4;
                if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
                else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
                else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
                else return 0;
            }
            p += 4;
            if (v >= 0x80)
                return 0;
            c = (unsigned char)v;
            break;
        }
        default:
            return 0;
        }
        *o++ = c;
    }
}

/* Canonical decimal digits (-?(0|[1-9][0-9]*), at most 18 digits, not -0): the only integers the lane reads,
 * which msgspec reads to the same value (from a JSON number, or from a string in lax mode). */
static int dec_int(const unsigned char *p, Py_ssize_t n, long long *v) {
    int neg = n > 0 && p[0] == '-';
    p += neg;
    n -= neg;
    if (n < 1 || n > 18 || (p[0] == '0' && (n > 1 || neg)))
        return 0;
    long long x = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        x = x * 10 + (p[i] - '0');
    }
    *v = neg ? -x : x;
    return 1;
}

static int js_int(js_t *j, long long *v) {
    js_ws(j);
    const unsigned char *s = j->p, *p = s;
    if (p < j->end && *p == '-')
        p++;
    while (p < j->end && *p >= '0' && *p <= '9')
        p++;
    if (p < j->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return 0;
    if (!dec_int(s, p - s, v))
        return 0;
    j->p = p;
    return 1;
}

/* A boolean as msgspec reads it from a string in lax mode, of the texts the lane takes: 1, 0, or -1 (another). */
static int bool_of(const unsigned char *p, Py_ssize_t n) {
    if ((n == 4 && memcmp(p, "true", 4) == 0) || (n == 1 && p[0] == '1'))
        return 1;
    if ((n == 5 && memcmp(p, "false", 5) == 0) || (n == 1 && p[0] == '0'))
        return 0;
    return -1;
}

#define INT32_OK(v) ((v) >= -2147483648LL && (v) <= 2147483647LL)

/* The V2 header's fields as read_sends reads them (letters a..n of SendMessageRequestHeaderV2) */
typedef struct {
    long long opaque;
    Py_ssize_t topic, topic_len, props, props_len;
    int has_props, batch;
    long long queue_id, sys_flag, born_ts, flag, reconsume_times;
} send_hdr_t;

/* The long names of SEND_MESSAGE (10), in the order of the V2 letters a..n */
static const char *const LONG_NAMES[14] = {
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag",
    "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname"};

/* An extFields value of SEND_MESSAGE (long names), as the generic path reads it (frame.normalise_ext_fields): a
 * string, a canonical integer (its digits), true or false (their text), or null (absent: *len = -1). */
static int js_ext_value(js_t *j, Py_ssize_t *start, Py_ssize_t *len) {
    js_ws(j);
    if (j->p >= j->end)
        return 0;
    if (*j->p == '"')
        return js_str(j, start, len);
    static const char *const literals[3] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(literals[i]);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, literals[i], n) == 0) {
            j->p += n;
            *start = j->outn;
            *len = i == 2 ? -1 : (Py_ssize_t)n;
            memcpy(j->out + j->outn, literals[i], i == 2 ? 0 : n);
            j->outn += i == 2 ? 0 : (Py_ssize_t)n;
            return 1;
        }
    }
    const unsigned char *from = j->p;
    long long v;
    if (!js_int(j, &v))
        return 0;
    *start = j->outn; /* the digits as sent: canonical, so str(int) of them */
    *len = j->p - from;
    memcpy(j->out + j->outn, from, (size_t)*len);
    j->outn += *len;
    return 1;
}

/* The envelope and extFields of a JSON request header after its `{"code":N,` (`skip` bytes), as the lane takes
 * them: the envelope's keys only (code, language, version, opaque, flag, remark, extFields,
 * serializeTypeCurrentRPC, each at most once), flag 0, extFields an object of the fields `names` (nnames of them;
 * NULL: the V2 letters a..n, string values only, no other key) each at most once, values as js_ext_value reads
 * them (the long names: any other key ignored as the generic path ignores it). Each field present: its text at
 * scratch + val[i], vlen[i] bytes, bit i of *have. 1 when taken (*opaque: the envelope's, 0 by default). */
static int read_request_fields(const unsigned char *hdr, Py_ssize_t hlen, Py_ssize_t skip, const char *const *names,
                               int nnames, unsigned char *scratch, long long *opaque, Py_ssize_t *val,
                               Py_ssize_t *vlen, unsigned *have_out) {
    js_t j = {hdr + skip, hdr + hlen, scratch, 0};
    unsigned seen = 0;
    long long flag = -1, v;
    int ext_read = 0;
    unsigned have = 0, named = 0;
    *opaque = 0; /* the envelope's default */
    for (;;) {
        Py_ssize_t ks, kl;
        if (!js_str(&j, &ks, &kl) || !js_char(&j, ':'))
            return 0;
        const char *k = (const char *)scratch + ks;
        j.outn = ks; /* the key's bytes are not kept */
        unsigned bit;
#define KEY(text) (kl == (Py_ssize_t)(sizeof(text) - 1) && memcmp(k, text, sizeof(text) - 1) == 0)
        if (KEY("opaque")) {
            bit = 1;
            if (!js_int(&j, &v) || !INT32_OK(v))
                return 0;
            *opaque = v;
        } else if (KEY("flag")) {
            bit = 2;
            if (!js_int(&j, &flag))
                return 0;
        } else if (KEY("version")) {
            bit = 4;
            if (!js_int(&j, &v))
                return 0;
        } else if (KEY("language") || KEY("serializeTypeCurrentRPC")) {
            bit = KEY("language") ? 8 : 16;
            Py_ssize_t s, l;
            if (!js_str(&j, &s, &l))
                return 0;
            j.outn = s;
        } else if (KEY("remark")) {
            bit = 32;
            js_ws(&j);
            if (j.end - j.p >= 4 && memcmp(j.p, "null", 4) == 0) {
                j.p += 4;
            } else {
                Py_ssize_t s, l;
                if (!js_str(&j, &s, &l))
                    return 0;
                j.outn = s;
            }
        } else if (KEY("extFields")) {
            bit = 64;
            if (!js_char(&j, '{'))
                return 0;
            if (!js_char(&j, '}')) {
                for (;;) {
                    Py_ssize_t es, el, vs, vl;
                    int letter = -1;
                    if (names == NULL && j.end - j.p >= 4 && j.p[0] == '"' && j.p[2] == '"' && j.p[3] == ':' &&
                        j.p[1] >= 'a' && j.p[1] <= 'n') {
                        /* the V2 key as senders write it ("a": with nothing between): read at a glance */
                        letter = j.p[1] - 'a';
                        j.p += 4;
                        goto value;
                    }
                    if (!js_str(&j, &es, &el))
                        return 0;
                    if (names == NULL) {
                        letter = el == 1 ? scratch[es] - 'a' : -1;
                        if (letter < 0 || letter > 13)
                            return 0;
                    } else {
                        for (int i = 0; i < nnames; i++)
                            if ((size_t)el == strlen(names[i]) && memcmp(scratch + es, names[i], (size_t)el) == 0)
                                letter = i;
                    }
                    j.outn = es;
                    if (!js_char(&j, ':'))
                        return 0;
                value:
                    if (!(names != NULL ? js_ext_value(&j, &vs, &vl) : js_str(&j, &vs, &vl)))
                        return 0;
                    if (letter >= 0) {
                        if ((named >> letter) & 1)
                            return 0;
                        named |= 1u << letter;
                        if (vl >= 0) { /* (null: absent) */
                            have |= 1u << letter;
                            val[letter] = vs;
                            vlen[letter] = vl;
                        }
                    } else {
                        j.outn = vs; /* a key the header does not have: ignored */
                    }
                    if (js_char(&j, ','))
                        continue;
                    if (js_char(&j, '}'))
                        break;
                    return 0;
                }
            }
            ext_read = 1;
        } else {
            return 0;
        }
#undef KEY
        if (seen & bit)
            return 0;
        seen |= bit;
        if (js_char(&j, ','))
            continue;
        if (js_char(&j, '}'))
            break;
        return 0;
    }
    js_ws(&j);
    if (j.p != j.end || flag != 0 || !ext_read)
        return 0;
    *have_out = have;
    return 1;
}

/* A send header the lane takes, of SEND_MESSAGE_V2 or SEND_BATCH_MESSAGE ({"code":310,...}, {"code":320,...}:
 * extFields of string values under the letters a..n, nothing else) or of SEND_MESSAGE ({"code":10,...}: the
 * long names), as read_request_fields reads them; producer group, queue id and born timestamp present (and the
 * topic, for long names), numbers canonical and in range. 1 when taken (fields in *h, strings in scratch). */
static int read_send_header(const unsigned char *hdr, Py_ssize_t hlen, unsigned char *scratch, send_hdr_t *h) {
    int long_names;
    Py_ssize_t skip;
    if (hlen >= 12 && (memcmp(hdr, "{\"code\":310,", 12) == 0 || memcmp(hdr, "{\"code\":320,", 12) == 0)) {
        long_names = 0;
        skip = 12;
    } else if (hlen >= 11 && memcmp(hdr, "{\"code\":10,", 11) == 0) {
        long_names = 1;
        skip = 11;
    } else {
        return 0;
    }
    Py_ssize_t val[14], vlen[14];
    unsigned have;
    long long v;
    if (!read_request_fields(hdr, hlen, skip, long_names ? LONG_NAMES : NULL, 14, scratch, &h->opaque, val, vlen,
                             &have))
        return 0;
    /* a producer group, a queue id and a born timestamp are required */
    unsigned required = (1u << 0) | (1u << 4) | (1u << 6) | (long_names ? 1u << 1 : 0);
    if ((have & required) != required)
        return 0;
#define LETTER(c) ((c) - 'a')
#define INT_OF(c, out) dec_int(scratch + val[LETTER(c)], vlen[LETTER(c)], (out))
    h->topic = (have >> LETTER('b')) & 1 ? val[LETTER('b')] : 0;
    h->topic_len = (have >> LETTER('b')) & 1 ? vlen[LETTER('b')] : 0;
    if (!INT_OF('e', &h->queue_id) || h->queue_id < 0 || h->queue_id > 2147483647LL)
        return 0;
    if (!INT_OF('g', &h->born_ts))
        return 0;
    h->sys_flag = 0;
    if ((have >> LETTER('f')) & 1 && (!INT_OF('f', &h->sys_flag) || h->sys_flag < 0 || h->sys_flag > 2147483647LL))
        return 0;
    h->flag = 0;
    if ((have >> LETTER('h')) & 1 && (!INT_OF('h', &h->flag) || !INT32_OK(h->flag)))
        return 0;
    h->reconsume_times = 0;
    if ((have >> LETTER('j')) & 1 && (!INT_OF('j', &h->reconsume_times) || !INT32_OK(h->reconsume_times)))
        return 0;
    if ((have >> LETTER('d')) & 1 && !INT_OF('d', &v))
        return 0;
    if ((have >> LETTER('l')) & 1 && !INT_OF('l', &v))
        return 0;
    if ((have >> LETTER('k')) & 1 && bool_of(scratch + val[LETTER('k')], vlen[LETTER('k')]) < 0)
        return 0;
    h->batch = (have >> LETTER('m')) & 1 ? bool_of(scratch + val[LETTER('m')], vlen[LETTER('m')]) : 0;
    if (h->batch < 0)
        return 0;
    h->has_props = (have >> LETTER('i')) & 1;
    h->props = h->has_props ? val[LETTER('i')] : 0;
    h->props_len = h->has_props ? vlen[LETTER('i')] : 0;
#undef INT_OF
#undef LETTER
    return 1;
}

/* send_header(header: bytes) -> (opaque, topic, queue_id, sys_flag, born_timestamp, flag, properties | None,
 * reconsume_times, batch) as read_sends reads it, or None when it does not take it (tests/test_read_lane.py). */
PyObject *lane_send_header(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    unsigned char *scratch = PyMem_Malloc(view.len > 0 ? (size_t)view.len : 1);
    if (scratch == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    send_hdr_t h;
    PyObject *out;
    if (!read_send_header(view.buf, view.len, scratch, &h)) {
        out = Py_None;
        Py_INCREF(out);
    } else {
        PyObject *props = h.has_props ? PyUnicode_FromStringAndSize((const char *)scratch + h.props, h.props_len)
                                      : (Py_INCREF(Py_None), Py_None);
        out = props == NULL ? NULL : Py_BuildValue("(Ls#LLLLNLN)", h.opaque, (const char *)scratch + h.topic,
                                                   h.topic_len, h.queue_id, h.sys_flag, h.born_ts, h.flag, props,
                                                   h.reconsume_times, PyBool_FromLong(h.batch));
    }
    PyMem_Free(scratch);
    PyBuffer_Release(&view);
    return out;
}

/* ------------------------------------------------------------------------------------------------ */
/* pull headers                                                                                      */
/* ------------------------------------------------------------------------------------------------ */

/* PullMessageRequestHeader's wire names, in the order of its fields (protocol/headers.py) */
static const char *const PULL_NAMES[12] = {
    "consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
    "suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "bname"};
/* which of them are numbers (the rest are strings) */
#define PULL_NUMBERS ((1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7) | (1u << 9))

/* A PULL_MESSAGE header the lane takes ({"code":11,...}, read as read_request_fields reads the long names): the
 * six required fields present, every number canonical. A new tuple of PullMessageRequestHeader's fields in
 * order (absent strings None, absent numbers 0) and *opaque; Py_None (borrowed) when not taken; NULL on error. */
static PyObject *pull_fields(const unsigned char *hdr, Py_ssize_t hlen, unsigned char *scratch, long long *opaque) {
    if (hlen < 11 || memcmp(hdr, "{\"code\":11,", 11) != 0)
        return Py_None;
    Py_ssize_t val[12], vlen[12];
    unsigned have;
    if (!read_request_fields(hdr, hlen, 11, PULL_NAMES, 12, scratch, opaque, val, vlen, &have) ||
        (have & 0x3F) != 0x3F)
        return Py_None;
    long long num[12];
    for (int i = 0; i < 12; i++) {
        num[i] = 0;
        if (((PULL_NUMBERS >> i) & 1) && ((have >> i) & 1) && !dec_int(scratch + val[i], vlen[i], &num[i]))
            return Py_None;
    }
    PyObject *out = PyTuple_New(12);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < 12; i++) {
        PyObject *v;
        if ((PULL_NUMBERS >> i) & 1)
            v = PyLong_FromLongLong(num[i]);
        else if ((have >> i) & 1)
            v = PyUnicode_FromStringAndSize((const char *)scratch + val[i], vlen[i]);
        else {
            v = Py_None;
            Py_INCREF(v);
        }
        if (v == NULL || PyTuple_SetItem(out, i, v) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* pull_header(header: bytes) -> (opaque, fields) or None: the header as read_sends reads a PULL_MESSAGE's, for
 * the tests */
PyObject *lane_pull_header(PyObject *self, PyObject *args) {
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O", &obj))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    unsigned char *scratch = PyMem_Malloc(view.len > 0 ? (size_t)view.len : 1);
    PyObject *out = NULL;
    if (scratch == NULL) {
        PyErr_NoMemory();
    } else {
        long long opaque;
        PyObject *fields = pull_fields(view.buf, view.len, scratch, &opaque);
        if (fields == Py_None) {
            out = Py_None;
            Py_INCREF(out);
        } else if (fields != NULL) {
            out = Py_BuildValue("(LN)", opaque, fields);
        }
    }
    PyMem_Free(scratch);
    PyBuffer_Release(&view);
    return out;
}

/* ------------------------------------------------------------------------------------------------ */
/* read_sends                                                                                        */
/* ------------------------------------------------------------------------------------------------ */

#define TRANSACTION_TYPE_MASK 0xC
#define MULTI_TAGS 0x2
#define MAX_PROPERTIES_SIZE 32767

static PyObject *s_write_queue_nums, *s_read_queue_nums, *s_topic_filter_type;

/* The topic being sent to (nearly always one per read): its str and what msgCheck reads of its config. */
typedef struct {
    char name[128];
    Py_ssize_t len;
    PyObject *topic; /* owned */
    long long max_queue;
    int multi_tag;
} topic_cache_t;

/* The topic's config when msgCheck would pass it without a second look: it exists and has been validated
 * (SendMessageCore._valid_topics); 1 when found (cache filled), 0 when the Python path must see the frame, -1 on
 * an error. */
static int lookup_topic(topic_cache_t *tc, const char *name, Py_ssize_t len, PyObject *table, PyObject *valid) {
    if (tc->topic != NULL && tc->len == len && memcmp(tc->name, name, (size_t)len) == 0)
        return 1;
    if (len < 1 || len > 127 || (len >= 7 && memcmp(name, "%RETRY%", 7) == 0))
        return 0; /* a retry topic needs handleRetryAndDLQ */
    PyObject *topic = PyUnicode_FromStringAndSize(name, len);
    if (topic == NULL)
        return -1;
    PyObject *config = PyDict_GetItemWithError(table, topic); /* borrowed */
    int in_valid = config == NULL ? 0 : PySet_Contains(valid, topic);
    if (config == NULL || in_valid != 1) {
        Py_DECREF(topic);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *w = PyObject_GetAttr(config, s_write_queue_nums), *r = PyObject_GetAttr(config, s_read_queue_nums),
             *f = PyObject_GetAttr(config, s_topic_filter_type);
    long long wq = w ? PyLong_AsLongLong(w) : -1, rq = r ? PyLong_AsLongLong(r) : -1, ft = f ? PyLong_AsLongLong(f) : -1;
    Py_XDECREF(w);
    Py_XDECREF(r);
    Py_XDECREF(f);
    if (PyErr_Occurred()) {
        PyErr_Clear(); /* an odd config: the Python path */
        Py_DECREF(topic);
        return 0;
    }
    Py_XDECREF(tc->topic);
    tc->topic = topic;
    memcpy(tc->name, name, (size_t)len);
    tc->len = len;
    tc->max_queue = wq > rq ? wq : rq;
    tc->multi_tag = ft == 1;
    return 1;
}

/* A batch the lane takes: its messages (a list; *batch set), as InnerMessageBuilder.batch makes them, or Py_None
 * when the Python path must see the frame (transactional, a delay level, a malformed or oversized item, bodies
 * over maxMessageSize together). Twin: SendMessageCore._put_batch's building. */
static PyObject *batch_of(send_hdr_t *h, PyObject *body, unsigned char *scratch, topic_cache_t *tc,
                          PyObject *ctx[7], long long limit, long long sys_flag, int *batch) {
    if (sys_flag & TRANSACTION_TYPE_MASK)
        return Py_None;
    const char *props = (const char *)scratch + h->props;
    Py_ssize_t pl = h->props_len;
    for (Py_ssize_t i = 0; i + 5 <= pl; i++) /* any DELAY pair: the Python path decides (a level refuses) */
        if (memcmp(props + i, "DELAY", 5) == 0 && (i == 0 || props[i - 1] == '\x02'))
            return Py_None;
    char *cluster;
    Py_ssize_t cl;
    if (PyBytes_AsStringAndSize(ctx[3], &cluster, &cl) < 0)
        return NULL;
    /* the suffix: CLUSTER alone, or "\x02" + the batch's properties (trailing separators dropped) + CLUSTER */
    while (pl > 0 && props[pl - 1] == '\x02')
        pl--;
    PyObject *suffix;
    if (h->props_len == 0) {
        suffix = ctx[3];
        Py_INCREF(suffix);
    } else {
        suffix = PyBytes_FromStringAndSize(NULL, 1 + pl + cl);
        if (suffix == NULL)
            return NULL;
        char *p = PyBytes_AsString(suffix);
        p[0] = '\x02';
        memcpy(p + 1, props, (size_t)pl);
        memcpy(p + 1 + pl, cluster, (size_t)cl);
    }
    PyObject *made = lane_batch_items(ctx[2], body, suffix, tc->topic, h->queue_id, sys_flag, h->born_ts, ctx[5],
                                      ctx[6]);
    Py_DECREF(suffix);
    if (made == NULL || made == Py_None) {
        PyErr_Clear();
        Py_XDECREF(made);
        return Py_None;
    }
    long long total = PyLong_AsLongLong(PyTuple_GetItem(made, 1));
    if (total > limit || PyList_Size(PyTuple_GetItem(made, 0)) == 0) {
        Py_DECREF(made);
        return Py_None;
    }
    PyObject *msgs = PyTuple_GetItem(made, 0);
    Py_INCREF(msgs);
    Py_DECREF(made);
    *batch = 1;
    return msgs;
}

/* The message of a frame the lane takes (a new reference), Py_None (borrowed, not to be released) when the
 * Python path must see the frame, NULL on an error. Twin: SendMessageCore.msg_check + InnerMessageBuilder.plain. */
static PyObject *plain_message(const unsigned char *hdr, Py_ssize_t hlen, PyObject *body, unsigned char *scratch,
                               topic_cache_t *tc, PyObject *ctx[7], long long limit, long long *opaque, int *batch) {
    *batch = 0;
    send_hdr_t h;
    if (!read_send_header(hdr, hlen, scratch, &h))
        return Py_None;
    int found = lookup_topic(tc, (const char *)scratch + h.topic, h.topic_len, ctx[0], ctx[1]);
    if (found <= 0)
        return found < 0 ? NULL : Py_None;
    if (h.queue_id >= tc->max_queue)
        return Py_None; /* refused by msgCheck */
    long long sys_flag = tc->multi_tag ? h.sys_flag | MULTI_TAGS : h.sys_flag;
    *opaque = h.opaque;
    if (h.batch)
        return batch_of(&h, body, scratch, tc, ctx, limit, sys_flag, batch);
    if (sys_flag & TRANSACTION_TYPE_MASK || PyBytes_Size(body) > limit)
        return Py_None;
    char *suffix;
    Py_ssize_t sl;
    if (PyBytes_AsStringAndSize(ctx[3], &suffix, &sl) < 0)
        return NULL;
    plain_props_t pp;
    int rc = lane_plain_properties((const char *)scratch + h.props, h.props_len, suffix, sl, &pp);
    if (rc < 0) {
        PyErr_Clear(); /* (properties that are not UTF-8 cannot come from an ASCII header) */
        return Py_None;
    }
    if (rc == 0) /* DELAY, TRAN_MSG, CLUSTER or TIMER_DELIVER_MS: the full path */
        return Py_None;
    PyObject *msg = NULL;
    if (PyBytes_Size(pp.final) <= MAX_PROPERTIES_SIZE) {
        PyObject *queue_id = PyLong_FromLongLong(h.queue_id), *flag = PyLong_FromLongLong(h.flag),
                 *sys = PyLong_FromLongLong(sys_flag), *born_ts = PyLong_FromLongLong(h.born_ts),
                 *reconsume = PyLong_FromLongLong(h.reconsume_times), *zero = PyLong_FromLong(0);
        if (queue_id && flag && sys && born_ts && reconsume && zero)
            msg = lane_new_inner(ctx[2], (PyObject *const[13]){tc->topic, queue_id, body, flag, pp.final,
                                                               pp.tags_code, sys, born_ts, ctx[5], ctx[6], reconsume,
                                                               zero, pp.index_keys});
        Py_XDECREF(queue_id);
        Py_XDECREF(flag);
        Py_XDECREF(sys);
        Py_XDECREF(born_ts);
        Py_XDECREF(reconsume);
        Py_XDECREF(zero);
    } else {
        msg = Py_None;
    }
    Py_DECREF(pp.final);
    Py_DECREF(pp.index_keys);
    Py_DECREF(pp.tags_code);
    return msg;
}

/* scratch for a header of hlen bytes: the stack buffer `local` or a bigger allocation (freed by the caller when
 * it is not `local`); -1 (MemoryError set, *scratch back to `local`) when it cannot be had */
static int ensure_scratch(unsigned char **scratch, unsigned char *local, Py_ssize_t *cap, uint32_t hlen) {
    if ((Py_ssize_t)hlen <= *cap)
        return 0;
    if (*scratch != local)
        PyMem_Free(*scratch);
    *scratch = PyMem_Malloc(hlen);
    *cap = hlen;
    if (*scratch == NULL) {
        *scratch = local;
        *cap = 0;
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* read_sends(buf, pos, max_frame_length, ctx) -> (items, bad): split_frames' (items, bad), where each run of
 * consecutive single sends the lane takes is one item [msgs, opaques, end] (a list) in place of their frame
 * tuples, each batch it takes one item [msgs, opaque, end, True], and each PULL_MESSAGE whose header it reads one
 * item [fields, opaque, end, False] (fields: PullMessageRequestHeader's, in order).
 * Only sends before the read's first other request are taken (that request might change a topic or a limit).
 * ctx = (topic table, validated topics, MessageExtBrokerInner, CLUSTER suffix, maxMessageSize, born host packed,
 * born port). */
PyObject *lane_read_sends(PyObject *self, PyObject *args) {
    PyObject *obj, *ctx_o;
    Py_ssize_t pos, max_len;
    if (!PyArg_ParseTuple(args, "OnnO!", &obj, &pos, &max_len, &PyTuple_Type, &ctx_o))
        return NULL;
    if (PyTuple_Size(ctx_o) != 7) {
        PyErr_SetString(PyExc_ValueError, "read_sends: a context of 7 items expected");
        return NULL;
    }
    PyObject *ctx[7];
    for (int i = 0; i < 7; i++)
        ctx[i] = PyTuple_GetItem(ctx_o, i);
    if (!PyDict_Check(ctx[0]) || !PyAnySet_Check(ctx[1]) || !PyBytes_Check(ctx[3])) {
        PyErr_SetString(PyExc_TypeError, "read_sends: (dict, set, class, bytes, int, bytes, int) expected");
        return NULL;
    }
    long long limit = PyLong_AsLongLong(ctx[4]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t len = view.len;
    PyObject *items = PyList_New(0), *bad = NULL, *group = NULL;
    unsigned char local[4096];
    unsigned char *scratch = local;
    Py_ssize_t scratch_cap = sizeof local;
    topic_cache_t tc = {.topic = NULL};
    int taking = 1;
    if (items == NULL)
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
        PyObject *body = PyBytes_FromStringAndSize((const char *)buf + body_start, end - body_start);
        if (body == NULL)
            goto fail;
        PyObject *msg = Py_None;
        long long opaque = 0;
        int is_batch = 0;
        const unsigned char *hdr = buf + pos + 8;
        int send = word >> 24 == 0 && hlen >= 11 && (memcmp(hdr, "{\"code\":10,", 11) == 0 || (hlen >= 12 && (
            memcmp(hdr, "{\"code\":310,", 12) == 0 || memcmp(hdr, "{\"code\":320,", 12) == 0)));
        PyObject *pull = Py_None;
        if (!send && word >> 24 == 0 && hlen >= 11 && hdr[8] == '1' && hdr[9] == '1' && hdr[10] == ',') {
            if (ensure_scratch(&scratch, local, &scratch_cap, hlen) < 0) {
                Py_DECREF(body);
                goto fail;
            }
            pull = pull_fields(hdr, hlen, scratch, &opaque);
            if (pull == NULL) {
                Py_DECREF(body);
                goto fail;
            }
        }
        if (pull != Py_None) { /* a pull: its own item [fields, opaque, end, False]; it changes nothing msgCheck
                                * reads, so sends after it are still taken */
            Py_DECREF(body);
            group = NULL;
            PyObject *item = Py_BuildValue("[NLnO]", pull, opaque, end, Py_False);
            int prc = item == NULL ? -1 : PyList_Append(items, item);
            Py_XDECREF(item);
            if (prc < 0)
                goto fail;
            pos = end;
            continue;
        }
        if (!send)
            taking = 0; /* another request may change what msgCheck reads (a topic, maxMessageSize): from here on
                         * the Python path sees every frame after it, as it sees them, in order */
        if (send && taking) {
            if (ensure_scratch(&scratch, local, &scratch_cap, hlen) < 0) {
                Py_DECREF(body);
                goto fail;
            }
            msg = plain_message(buf + pos + 8, hlen, body, scratch, &tc, ctx, limit, &opaque, &is_batch);
            if (msg == NULL) {
                Py_DECREF(body);
                goto fail;
            }
        }
        int rc;
        if (msg != Py_None && is_batch) { /* a batch: its own item [msgs, opaque, end, True] */
            Py_DECREF(body);
            group = NULL;
            PyObject *item = Py_BuildValue("[NLnO]", msg, opaque, end, Py_True);
            rc = item == NULL ? -1 : PyList_Append(items, item);
            Py_XDECREF(item);
            if (rc < 0)
                goto fail;
        } else if (msg != Py_None) {
            Py_DECREF(body);
            if (group == NULL) {
                group = Py_BuildValue("[[][]n]", end);
                rc = group == NULL ? -1 : PyList_Append(items, group);
                Py_XDECREF(group); /* the list `items` holds it */
                if (rc < 0) {
                    group = NULL;
                    Py_DECREF(msg);
                    goto fail;
                }
            }
            PyObject *op = PyLong_FromLongLong(opaque), *end_o = PyLong_FromSsize_t(end);
            rc = (op == NULL || end_o == NULL || PyList_Append(PyList_GetItem(group, 0), msg) < 0 ||
                  PyList_Append(PyList_GetItem(group, 1), op) < 0 || PyList_SetItem(group, 2, end_o) < 0) ? -1 : 0;
            if (rc == 0)
                end_o = NULL; /* (stolen by SetItem) */
            Py_XDECREF(op);
            Py_XDECREF(end_o);
            Py_DECREF(msg);
            if (rc < 0)
                goto fail;
        } else {
            group = NULL;
            PyObject *item = Py_BuildValue("(Iy#Nn)", word, (const char *)buf + pos + 8, (Py_ssize_t)hlen, body, end);
            if (item == NULL)
                goto fail;
            rc = PyList_Append(items, item);
            Py_DECREF(item);
            if (rc < 0)
                goto fail;
        }
        pos = end;
    }
    if (scratch != local)
        PyMem_Free(scratch);
    Py_XDECREF(tc.topic);
    PyBuffer_Release(&view);
    if (bad == NULL) {
        bad = Py_None;
        Py_INCREF(bad);
    }
    PyObject *out = PyTuple_Pack(2, items, bad);
    Py_DECREF(items);
    Py_DECREF(bad);
    return out;
fail:
    if (scratch != local)
        PyMem_Free(scratch);
    Py_XDECREF(tc.topic);
    PyBuffer_Release(&view);
    Py_XDECREF(items);
    Py_XDECREF(bad);
    return NULL;
}

/* ------------------------------------------------------------------------------------------------ */
/* success_frames                                                                                    */
/* ------------------------------------------------------------------------------------------------ */

/* success_frames(segments, host_hex, msgs, phy_offsets, queue_offsets, opaques) -> bytes: the SUCCESS answer
 * of each message of a stored group, back to back; each is success_frame(segments, host_hex + "%016X" % phy,
 * msg.queue_id, queue_offset, opaque). */
PyObject *lane_success_frames(PyObject *self, PyObject *args) {
    PyObject *segments, *host_hex, *msgs, *phys, *qos, *opaques;
    if (!PyArg_ParseTuple(args, "O!UO!O!O!O!", &PyTuple_Type, &segments, &host_hex, &PyList_Type, &msgs,
                          &PyList_Type, &phys, &PyList_Type, &qos, &PyList_Type, &opaques))
        return NULL;
    Py_ssize_t n = PyList_Size(msgs);
    if (PyTuple_Size(segments) != 5 || PyList_Size(phys) != n || PyList_Size(qos) != n || PyList_Size(opaques) != n) {
        PyErr_SetString(PyExc_ValueError, "success_frames: five segments and lists of one length expected");
        return NULL;
    }
    const char *seg[5];
    Py_ssize_t segl[5], hexl, fixed = 0;
    for (int i = 0; i < 5; i++) {
        char *c;
        if (PyBytes_AsStringAndSize(PyTuple_GetItem(segments, i), &c, &segl[i]) < 0)
            return NULL;
        seg[i] = c;
        fixed += segl[i];
    }
    const char *hex = PyUnicode_AsUTF8AndSize(host_hex, &hexl);
    if (hex == NULL)
        return NULL;
    /* each frame: 8 + fixed + hexl + 16 + three numbers of at most 20 characters */
    Py_ssize_t cap = n * (8 + fixed + hexl + 16 + 60);
    PyObject *out = PyBytes_FromStringAndSize(NULL, cap);
    if (out == NULL)
        return NULL;
    unsigned char *start = (unsigned char *)PyBytes_AsString(out), *p = start;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *q = lane_get(PyList_GetItem(msgs, i), A_QUEUE_ID);
        long long queue_id = q ? PyLong_AsLongLong(q) : -1;
        Py_XDECREF(q);
        long long phy = PyLong_AsLongLong(PyList_GetItem(phys, i)), qo = PyLong_AsLongLong(PyList_GetItem(qos, i)),
                  opaque = PyLong_AsLongLong(PyList_GetItem(opaques, i));
        if (PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        char nums[3][24], id[16];
        int numl[3] = {fmt_i64(nums[0], queue_id), fmt_i64(nums[1], qo), fmt_i64(nums[2], opaque)};
        fmt_hex16(id, (unsigned long long)phy);
        Py_ssize_t hlen = fixed + hexl + 16 + numl[0] + numl[1] + numl[2];
        p = put32(p, hlen + 4);
        p = put32(p, hlen);
#define ADD(ptr, len) memcpy(p, ptr, (size_t)(len)); p += (len);
        ADD(seg[0], segl[0]) ADD(hex, hexl) ADD(id, 16) ADD(seg[1], segl[1]) ADD(nums[0], numl[0])
        ADD(seg[2], segl[2]) ADD(nums[1], numl[1]) ADD(seg[3], segl[3]) ADD(nums[2], numl[2]) ADD(seg[4], segl[4])
#undef ADD
    }
    PyObject *done = PyBytes_FromStringAndSize((const char *)start, p - start);
    Py_DECREF(out);
    return done;
}

/* msg_ids(host_hex, phy_offsets) -> str | None: the offset message ids of a put's records, comma-separated (a
 * batch's msgId); None when the twin must make them (an offset below 0 or above 2^63 - 1). Twin:
 * store/results.py PutMessageResult.msg_id, ",".join(host_hex + "%016X" % phy ...). */
PyObject *lane_msg_ids(PyObject *self, PyObject *args) {
    PyObject *host_hex, *phys;
    if (!PyArg_ParseTuple(args, "UO!", &host_hex, &PyList_Type, &phys))
        return NULL;
    Py_ssize_t hexl, n = PyList_Size(phys);
    const char *hex = PyUnicode_AsUTF8AndSize(host_hex, &hexl);
    if (hex == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < hexl; i++)
        if ((unsigned char)hex[i] >= 0x80)
            Py_RETURN_NONE; /* (an ASCII result is made below) */
    if (n == 0)
        return PyUnicode_FromStringAndSize("", 0);
    Py_ssize_t each = hexl + 16, total = n * (each + 1) - 1;
    char *buf = PyMem_Malloc((size_t)total), *p = buf;
    if (buf == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        long long phy = PyLong_AsLongLong(PyList_GetItem(phys, i));
        if (phy < 0) {
            PyMem_Free(buf);
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (i)
            *p++ = ',';
        memcpy(p, hex, (size_t)hexl);
        fmt_hex16(p + hexl, (unsigned long long)phy);
        p += each;
    }
    PyObject *out = PyUnicode_DecodeASCII(buf, total, NULL);
    PyMem_Free(buf);
    return out;
}

/* module set-up for this file's names (called by PyInit__lane) */
int lane_read_sends_init(void) {
    plain_init();
    return (s_write_queue_nums = PyUnicode_InternFromString("write_queue_nums")) != NULL &&
           (s_read_queue_nums = PyUnicode_InternFromString("read_queue_nums")) != NULL &&
           (s_topic_filter_type = PyUnicode_InternFromString("topic_filter_type")) != NULL ? 0 : -1;
}
