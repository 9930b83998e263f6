"""Builds the `stepscope._stepscope` extension with the project's CMake build (see pyproject.toml).

Environment: STEPSCOPE_BUILD_JOBS (default 2) parallel compile jobs; CMAKE_ARGS extra arguments
to the configure step.
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DSTEPSCOPE_TESTS=OFF", "-DSTEPSCOPE_BENCH=OFF", "-DSTEPSCOPE_PYTHON=ON",
            f"-DSTEPSCOPE_PYTHON_EXECUTABLE={sys.executable}",
            f"-DSTEPSCOPE_PYTHON_OUTPUT_DIR={out_dir}",
        ] + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        jobs = os.environ.get("STEPSCOPE_BUILD_JOBS", "2")
        subprocess.run(configure, check=True)
        # The extension and the command-line tool, in one build: `pip install .` puts the
        # `stepscope` command on PATH (the console script runs the binary shipped in the package).
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "stepscope_python", "stepscope",
                        "-j", jobs], check=True)
        bin_dir = out_dir / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(build_dir / "stepscope", bin_dir / "stepscope")


setup(
    ext_modules=[CMakeExtension("stepscope._stepscope")],
    cmdclass={"build_ext": CMakeBuild},
    # The project's own CMake build lives in build/; keep setuptools' files apart from it.
    options={"build": {"build_base": "build-pip"}},
)
