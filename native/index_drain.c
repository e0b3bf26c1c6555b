/* rocketmq_emulator.native._lane, third part: the key index's drain.
 *
 *   index_drain(mm, first, limit, slot_num, entries_at, allocated, last_phy, begin_ts, pend, i)
 *       twin: store/index_file.py IndexService._drain_into (the Python reference, same entries, same order,
 *       same header bytes); it writes into the index file's mapping and returns what the twin sets on the
 *       IndexFile and the service, or None when the twin must run (the entries would pass the blocks reserved
 *       on disk, a key that is not valid UTF-8, a value out of range): then nothing has been written.
 */
#include "lane.h"

/* zlib's crc32 (reflected 0xEDB88320), one table, as zlib.crc32(data, start) computes it */
static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, Py_ssize_t n) {
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static inline void put32_at(unsigned char *p, int64_t v) { put32(p, v); }

static inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

typedef struct {
    uint32_t hash;
    int64_t phy, ts;
    int64_t slot, prev;
} key_t;

/* a tiny map slot -> newest entry index of this drain (open addressing over a power of two) */
typedef struct {
    int64_t *slot;
    int64_t *idx;
    Py_ssize_t mask;
} slot_map_t;

static int64_t *map_find(slot_map_t *m, int64_t slot) {
    Py_ssize_t h = (Py_ssize_t)((uint64_t)slot * 0x9E3779B97F4A7C15ull >> 17) & m->mask;
    while (m->slot[h] != -1 && m->slot[h] != slot)
        h = (h + 1) & m->mask;
    if (m->slot[h] == -1) {
        m->slot[h] = slot;
        m->idx[h] = 0;
    }
    return &m->idx[h];
}

PyObject *lane_index_drain(PyObject *self, PyObject *args) {
    PyObject *mm_o, *pend;
    long long first, limit, slot_num, at, allocated, last_phy, begin_ts;
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "OLLLLLLLO!n", &mm_o, &first, &limit, &slot_num, &at, &allocated, &last_phy,
                          &begin_ts, &PyList_Type, &pend, &i))
        return NULL;
    if (slot_num <= 0 || slot_num > 0x7FFFFFFF || first < 1 || first > 0x7FFFFFFF || limit > 0x7FFFFFFF || at < 40 ||
        at > (1LL << 40) || i < 0)
        Py_RETURN_NONE;
    Py_ssize_t end = PyList_Size(pend), cap = 0, count = 0;
    long long room = limit - first;
    key_t *keys = NULL;
    PyObject *topic_base_topic = NULL; /* the topic whose "topic#" crc is in topic_base */
    uint32_t topic_base = 0;
    PyObject *result = NULL;
    Py_buffer view = {0};
    int have_view = 0;
    slot_map_t map = {NULL, NULL, 0};
    /* 1. flatten (topic, keys, phy, ts) until the file is full, hashing as we go */
    while (i < end) {
        PyObject *req = PyList_GetItem(pend, i);
        if (!PyTuple_Check(req) || PyTuple_Size(req) != 4)
            goto twin;
        PyObject *topic = PyTuple_GetItem(req, 0), *ks = PyTuple_GetItem(req, 1);
        long long phy = PyLong_AsLongLong(PyTuple_GetItem(req, 2)), ts = PyLong_AsLongLong(PyTuple_GetItem(req, 3));
        if (PyErr_Occurred() || !PyUnicode_Check(topic) || !(PyList_Check(ks) || PyTuple_Check(ks)))
            goto twin;
        if (phy <= last_phy) {
            i++;
            continue;
        }
        Py_ssize_t k = PySequence_Size(ks);
        if (k < 0)
            goto twin;
        if (k > room) {
            if (count > 0 || room <= 0)
                break;
            k = (Py_ssize_t)room; /* more keys than a whole file holds: index what fits */
        }
        i++;
        room -= k;
        last_phy = phy;
        if (topic != topic_base_topic) {
            Py_ssize_t tl;
            const char *t = PyUnicode_AsUTF8AndSize(topic, &tl);
            if (t == NULL)
                goto twin;
            topic_base = crc32_update(crc32_update(0, (const unsigned char *)t, tl), (const unsigned char *)"#", 1);
            topic_base_topic = topic;
        }
        if (count + k > cap) {
            Py_ssize_t want = (count + k) * 2 + 16;
            key_t *grown = PyMem_Realloc(keys, (size_t)want * sizeof(key_t));
            if (grown == NULL)
                goto twin;
            keys = grown;
            cap = want;
        }
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *key = PySequence_GetItem(ks, j);
            if (key == NULL || !PyUnicode_Check(key)) {
                Py_XDECREF(key);
                goto twin;
            }
            Py_ssize_t kl;
            const char *kp = PyUnicode_AsUTF8AndSize(key, &kl);
            if (kp == NULL) {
                Py_DECREF(key);
                goto twin;
            }
            key_t *e = &keys[count++];
            e->hash = crc32_update(topic_base, (const unsigned char *)kp, kl) & 0x7FFFFFFFu;
            Py_DECREF(key);
            e->phy = phy;
            e->ts = ts;
        }
    }
    if (count == 0) {
        result = Py_BuildValue("(nnLL)", i, (Py_ssize_t)0, 0LL, last_phy);
        goto done;
    }
    /* 2. every check before the first write: the twin writes nothing either when it cannot */
    if (at + (first + count) * 20 > allocated || (first + count) > 0x7FFFFFFF)
        goto twin;
    if (PyObject_GetBuffer(mm_o, &view, PyBUF_WRITABLE) < 0)
        goto twin;
    have_view = 1;
    if (view.len < at + (first + count) * 20 || view.len < at || at < 40 + slot_num * 4)
        goto twin;
    long long begin = first == 1 ? keys[0].ts : begin_ts;
    int64_t d0 = floor_div(keys[0].ts - begin, 1000), dn = floor_div(keys[count - 1].ts - begin, 1000);
    int sanitize = d0 < 0 || dn > 0x7FFFFFFF;
    for (Py_ssize_t j = 0; j < count && !sanitize; j++) {
        int64_t d = floor_div(keys[j].ts - begin, 1000);
        if (d < -2147483648LL || d > 0x7FFFFFFF)
            goto twin; /* (the twin's pack would fail) */
    }
    unsigned char *m = (unsigned char *)view.buf;
    Py_ssize_t size = 16;
    while (size < count * 2)
        size *= 2;
    map.slot = PyMem_Malloc((size_t)size * sizeof(int64_t));
    map.idx = PyMem_Malloc((size_t)size * sizeof(int64_t));
    map.mask = size - 1;
    if (map.slot == NULL || map.idx == NULL)
        goto twin;
    for (Py_ssize_t j = 0; j < size; j++)
        map.slot[j] = -1;
    /* 3. slots, chains, first uses of a slot */
    long long new_slots = 0;
    for (Py_ssize_t j = 0; j < count; j++) {
        key_t *e = &keys[j];
        e->slot = (int64_t)(e->hash % (uint64_t)slot_num);
        int64_t *newest = map_find(&map, e->slot);
        int64_t head = (int32_t)be32(m + 40 + 4 * e->slot);
        int64_t file_prev = (0 < head && head < first) ? head : 0;
        /* a slot seen earlier in this drain chains to that entry; else to the file's head */
        if (*newest > 0) {
            e->prev = *newest;
        } else {
            e->prev = file_prev;
            if (file_prev == 0)
                new_slots++;
        }
        *newest = first + j;
    }
    /* (new_slots counts each slot once, at its first key in the drain: the twin's set of slots whose file head
     * is empty) */
    /* 4. the header's begin, entries (beyond the count), the count, the slot heads, the end */
    if (first == 1) {
        put64(m + 0, keys[0].ts);
        put64(m + 16, keys[0].phy);
    }
    for (Py_ssize_t j = 0; j < count; j++) {
        key_t *e = &keys[j];
        int64_t d = floor_div(e->ts - begin, 1000);
        if (sanitize && (d < 0 || d > 0x7FFFFFFF))
            d = 0;
        unsigned char *p = m + at + (first + j) * 20;
        p = put32(p, (int64_t)e->hash);
        p = put64(p, e->phy);
        p = put32(p, d);
        put32(p, e->prev);
    }
    put32_at(m + 36, first + count);
    for (Py_ssize_t j = 0; j < size; j++)
        if (map.slot[j] != -1)
            put32_at(m + 40 + 4 * map.slot[j], map.idx[j]);
    put64(m + 8, keys[count - 1].ts);
    put64(m + 24, keys[count - 1].phy);
    result = Py_BuildValue("(nnLLLLLL)", i, count, new_slots, last_phy, begin, keys[0].phy, keys[count - 1].phy,
                           keys[count - 1].ts);
    goto done;
twin:
    PyErr_Clear();
    Py_INCREF(Py_None);
    result = Py_None;
done:
    if (have_view)
        PyBuffer_Release(&view);
    PyMem_Free(map.slot);
    PyMem_Free(map.idx);
    PyMem_Free(keys);
    return result;
}

int lane_index_drain_init(void) {
    crc_init();
    return 0;
}
