"""The one thing pyproject.toml cannot declare without setuptools' experimental tables: two small
C extensions, the details-CSV scanner (gpuprof/readers/_ncu_csv_native.c) and the metric table's
launch × key pivot (gpuprof/model/_lookup_native.c). Both are optional: where no C compiler is
found the build goes on without them, and gpuprof reads those files through pyarrow or pandas and
pivots with NumPy."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gpuprof.readers._ncu_csv_native",
            sources=["gpuprof/readers/_ncu_csv_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "gpuprof.model._lookup_native",
            sources=["gpuprof/model/_lookup_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
