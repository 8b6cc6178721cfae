# Builds myop debuggable: python3 setup.py build_ext --inplace
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(name="myop",
      ext_modules=[CppExtension("myop", ["scaled_add.cpp"], extra_compile_args=["-O0", "-g"])],
      cmdclass={"build_ext": BuildExtension})
