"""The one thing pyproject.toml cannot declare without setuptools' experimental tables: the
details-CSV scanner in C (gpuprof/readers/_ncu_csv_native.c). It is optional: where no C compiler
is found the build goes on without it, and gpuprof reads those files through pyarrow or pandas."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gpuprof.readers._ncu_csv_native",
            sources=["gpuprof/readers/_ncu_csv_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
