/* rocketmq_emulator.native._lane, fifth part: the message objects' attributes without the generic lookup.
 *
 *   lane_get(o, A_TOPIC) / lane_set(o, A_TOPIC, v)
 *       what PyObject_GetAttr / PyObject_SetAttr do, for the one class whose objects the lane reads and makes by
 *       the thousand (MessageExtBrokerInner, a class with __slots__): its member descriptors are looked up once
 *       and called directly (the generic path looks each one up in the class's MRO every time, about a third of
 *       what an attribute costs). Any other object, a class with its own __getattribute__ / __setattr__, or a name
 *       that is not a slot of the class goes the generic way. A class's slots are taken as they were when first
 *       seen: the project never replaces a slot descriptor on a class.
 */
#include "lane.h"

#define TABLE 64 /* a power of two; at most half of it used */

static PyTypeObject *cached_type; /* a strong reference: the pointer is never reused while cached */
static PyObject *names[TABLE];    /* by the name's address (strong references: an address is never reused) */
static PyObject *descrs[TABLE];   /* the member descriptors (strong references), NULL: not a slot */
static PyObject *attr_names[A_COUNT];          /* lane.h's attributes, interned */
static PyObject *by_attr[A_COUNT];             /* their descriptors on cached_type (borrowed from descrs) */
static unsigned char by_attr_known[A_COUNT];   /* 1: by_attr[a] is cached_type's (NULL: the generic way) */
static int nnames;
static PyTypeObject *member_type;   /* type(a slot's descriptor), learnt from the first class */
static descrgetfunc member_get;
static descrsetfunc member_set;

static int generic_type(PyTypeObject *t) {
    return (PyType_GetFlags(t) & Py_TPFLAGS_HEAPTYPE) &&
           PyType_GetSlot(t, Py_tp_getattro) == (void *)PyObject_GenericGetAttr &&
           PyType_GetSlot(t, Py_tp_setattro) == (void *)PyObject_GenericSetAttr;
}

/* the member descriptor of `name` on `t` (borrowed), or NULL: the generic way */
static PyObject *descriptor(PyTypeObject *t, PyObject *name) {
    if (t != cached_type) {
        if (!generic_type(t))
            return NULL;
        for (int i = 0; i < TABLE; i++) {
            Py_CLEAR(names[i]);
            Py_CLEAR(descrs[i]);
        }
        nnames = 0;
        memset(by_attr_known, 0, sizeof by_attr_known);
        Py_XDECREF((PyObject *)cached_type);
        Py_INCREF((PyObject *)t);
        cached_type = t;
    }
    unsigned h = (unsigned)(((uintptr_t)name >> 4) * 0x9E3779B1u >> 26) & (TABLE - 1);
    while (names[h] != NULL && names[h] != name)
        h = (h + 1) & (TABLE - 1);
    if (names[h] == name)
        return descrs[h];
    if (nnames == TABLE / 2)
        return NULL;
    PyObject *d = PyObject_GetAttr((PyObject *)t, name); /* a slot: its member descriptor itself */
    if (d == NULL) {
        PyErr_Clear();
    } else if (member_type == NULL) {
        PyObject *type_name = PyObject_GetAttrString((PyObject *)Py_TYPE(d), "__name__");
        int is_member = type_name != NULL && PyUnicode_Check(type_name) &&
                        PyUnicode_CompareWithASCIIString(type_name, "member_descriptor") == 0;
        Py_XDECREF(type_name);
        PyErr_Clear();
        if (is_member) {
            member_type = Py_TYPE(d);
            member_get = (descrgetfunc)PyType_GetSlot(member_type, Py_tp_descr_get);
            member_set = (descrsetfunc)PyType_GetSlot(member_type, Py_tp_descr_set);
            if (member_get == NULL || member_set == NULL) {
                member_type = NULL;
                PyErr_Clear();
            }
        }
    }
    if (d != NULL && (member_type == NULL || Py_TYPE(d) != member_type))
        Py_CLEAR(d); /* a method, a property, a class attribute: the generic way */
    Py_INCREF(name);
    names[h] = name;
    descrs[h] = d;
    nnames++;
    return d;
}

#if defined(__GNUC__)
#define LANE_NOINLINE __attribute__((noinline))
#else
#define LANE_NOINLINE
#endif

/* the first lookup of an attribute on a class (kept out of line: the common case stays a few instructions) */
static LANE_NOINLINE PyObject *descriptor_first(PyTypeObject *t, int a) {
    PyObject *d = descriptor(t, attr_names[a]);
    if (t == cached_type) { /* (not when the class goes the generic way: it never becomes the cached one) */
        by_attr[a] = d;
        by_attr_known[a] = 1;
    }
    return d;
}

/* an attribute's descriptor by its number: one array read once its class is the cached one */
static inline PyObject *descriptor_at(PyTypeObject *t, int a) {
    return t == cached_type && by_attr_known[a] ? by_attr[a] : descriptor_first(t, a);
}

PyObject *lane_get(PyObject *o, int a) {
    PyObject *d = descriptor_at(Py_TYPE(o), a);
    return d != NULL ? member_get(d, o, (PyObject *)Py_TYPE(o)) : PyObject_GetAttr(o, attr_names[a]);
}

int lane_set(PyObject *o, int a, PyObject *v) {
    PyObject *d = descriptor_at(Py_TYPE(o), a);
    return d != NULL ? member_set(d, o, v) : PyObject_SetAttr(o, attr_names[a], v);
}

int lane_slots_init(void) {
    static const char *const text[A_COUNT] = {"topic", "queue_id", "body", "flag", "properties_raw", "tags_code",
                                              "sys_flag", "born_timestamp", "born_host", "born_port",
                                              "reconsume_times", "prepared_transaction_offset", "keys"};
    for (int a = 0; a < A_COUNT; a++)
        if ((attr_names[a] = PyUnicode_InternFromString(text[a])) == NULL)
            return -1;
    return 0;
}
