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

/* _lane.c: a common message's stored properties (plain_properties without the argument parsing) */
PyObject *lane_plain_properties(PyObject *raw_o, const char *suffix, Py_ssize_t sl);

/* read_sends.c */
PyObject *lane_read_sends(PyObject *self, PyObject *args);
PyObject *lane_success_frames(PyObject *self, PyObject *args);
PyObject *lane_send_header(PyObject *self, PyObject *args);
int lane_read_sends_init(void);

#endif
