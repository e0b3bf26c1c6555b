/* rocketmq_emulator.native._lane, fifth part: the message objects' attributes without the generic lookup.
 *
 *   lane_getattr(o, name) / lane_setattr(o, name, v)
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
        Py_XDECREF(cached_type);
        Py_INCREF(t);
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

PyObject *lane_getattr(PyObject *o, PyObject *name) {
    PyObject *d = descriptor(Py_TYPE(o), name);
    return d != NULL ? member_get(d, o, (PyObject *)Py_TYPE(o)) : PyObject_GetAttr(o, name);
}

int lane_setattr(PyObject *o, PyObject *name, PyObject *v) {
    PyObject *d = descriptor(Py_TYPE(o), name);
    return d != NULL ? member_set(d, o, v) : PyObject_SetAttr(o, name, v);
}
