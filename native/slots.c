/* rocketmq_emulator.native._lane, fifth part: the message objects' attributes without the generic lookup.
 *
 *   lane_get(o, A_TOPIC) / lane_set(o, A_TOPIC, v)
 *       what PyObject_GetAttr / PyObject_SetAttr do with lane.h's thirteen attribute names, for the one class
 *       whose objects the lane reads and makes by the thousand (MessageExtBrokerInner, a class with __slots__):
 *       its member descriptors are looked up once and called directly (the generic path looks each one up in the
 *       class's MRO every time, about a third of what an attribute costs). Any other object, a class with its own
 *       __getattribute__ / __setattr__, or a name that is not a slot of the class goes the generic way. A class's
 *       slots are taken as they were when first seen: the project never replaces a slot descriptor on a class.
 */
#include "lane.h"

static PyTypeObject *cached_type;            /* a strong reference: the pointer is never reused while cached */
static PyObject *attr_names[A_COUNT];        /* lane.h's attributes, interned */
static PyObject *by_attr[A_COUNT];           /* their member descriptors on cached_type (strong references) */
static unsigned char by_attr_known[A_COUNT]; /* 1: by_attr[a] is cached_type's (NULL: the generic way) */
static PyTypeObject *member_type;            /* type(a slot's descriptor), learnt from the first class */
static descrgetfunc member_get;
static descrsetfunc member_set;

static int generic_type(PyTypeObject *t) {
    return (PyType_GetFlags(t) & Py_TPFLAGS_HEAPTYPE) &&
           PyType_GetSlot(t, Py_tp_getattro) == (void *)PyObject_GenericGetAttr &&
           PyType_GetSlot(t, Py_tp_setattro) == (void *)PyObject_GenericSetAttr;
}

/* type(d) is a slot's member descriptor type (learnt from the first descriptor seen, by its name) */
static int is_member(PyObject *d) {
    if (member_type == NULL) {
        PyObject *type_name = PyObject_GetAttrString((PyObject *)Py_TYPE(d), "__name__");
        int named = type_name != NULL && PyUnicode_Check(type_name) &&
                    PyUnicode_CompareWithASCIIString(type_name, "member_descriptor") == 0;
        Py_XDECREF(type_name);
        PyErr_Clear();
        if (!named)
            return 0;
        member_get = (descrgetfunc)PyType_GetSlot(Py_TYPE(d), Py_tp_descr_get);
        member_set = (descrsetfunc)PyType_GetSlot(Py_TYPE(d), Py_tp_descr_set);
        PyErr_Clear();
        if (member_get == NULL || member_set == NULL)
            return 0;
        member_type = Py_TYPE(d);
    }
    return Py_TYPE(d) == member_type;
}

#if defined(__GNUC__)
#define LANE_NOINLINE __attribute__((noinline))
#else
#define LANE_NOINLINE
#endif

/* The first lookup of attribute `a` on `t` (kept out of line: the common case stays a few instructions): its
 * member descriptor (borrowed), or NULL: the generic way. A new class (one the generic way serves: never cached)
 * replaces the cached one and its descriptors. */
static LANE_NOINLINE PyObject *descriptor_first(PyTypeObject *t, int a) {
    if (t != cached_type) {
        if (!generic_type(t))
            return NULL;
        for (int i = 0; i < A_COUNT; i++)
            Py_CLEAR(by_attr[i]);
        memset(by_attr_known, 0, sizeof by_attr_known);
        Py_XDECREF((PyObject *)cached_type);
        Py_INCREF((PyObject *)t);
        cached_type = t;
    }
    PyObject *d = PyObject_GetAttr((PyObject *)t, attr_names[a]); /* a slot: its member descriptor itself */
    if (d == NULL)
        PyErr_Clear();
    else if (!is_member(d))
        Py_CLEAR(d); /* a method, a property, a class attribute: the generic way */
    by_attr[a] = d;
    by_attr_known[a] = 1;
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
