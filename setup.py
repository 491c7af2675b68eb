"""The compiled kernels of feedrouter (:mod:`feedrouter.kernel`); everything else is in pyproject.toml.

The kernels are optional: where no C compiler is at hand the build goes on without them and the
Python path does their work (slower, the same results).
"""

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = [
    Extension(
        "feedrouter.kernel._children",
        ["plugins/feedrouter/kernel/_children.pyx"],
        # lxml's public declarations of its element type and of libxml2's node structs
        include_dirs=lxml.get_include(),
        optional=True,
    ),
    # the witness writer's loops over an hour's filed messages (Python objects only)
    Extension("feedrouter.kernel._columns", ["plugins/feedrouter/kernel/_columns.pyx"], optional=True),
    # the deciders of a join base's factored tests (Python objects only)
    Extension("feedrouter.kernel._deciders", ["plugins/feedrouter/kernel/_deciders.pyx"], optional=True),
    # the reader of event times in their usual forms (Python objects only)
    Extension("feedrouter.kernel._clock", ["plugins/feedrouter/kernel/_clock.pyx"], optional=True),
]

setup(ext_modules=cythonize(KERNELS, compiler_directives={"language_level": "3"}, quiet=True))
