"""The one thing pyproject.toml cannot say: the optional native lane (native/*.c, see native/__init__.py).

`optional=True`: when it cannot be compiled (no C compiler), `pip install` warns and installs the package
without it; the broker then runs its Python path. One abi3 build serves CPython 3.11 and later.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("rocketmq_emulator.native._lane", ["native/_lane.c", "native/read_sends.c", "native/index_drain.c",
                                                             "native/dispatch.c", "native/slots.c"],
                             depends=["native/lane.h"], optional=True,
                             py_limited_api=True, define_macros=[("Py_LIMITED_API", "0x030B0000")],
                             extra_compile_args=["-O2"])],
      options={"bdist_wheel": {"py_limited_api": "cp311"}})
