"""The native part of `pip install .` (pyproject.toml): setuptools' build_ext, handed the work to CMake.

It configures and builds the targets the package needs (the module qgossip._core for the Python that
runs pip, and the qgossip command, installed as qgossip/bin/qgossip behind the `qgossip` script) and
copies them into the package. QGOSSIP_BUILD_DIR names an existing build of this checkout to build
into, as it is configured, instead of a fresh one under build-pip/ (CTest's pip case reuses the
suite's: nothing is compiled twice); its module must be for the Python that runs pip.
CMAKE_BUILD_PARALLEL_LEVEL sets the jobs (default: every CPU).
"""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        reused = os.environ.get("QGOSSIP_BUILD_DIR")
        build = Path(reused or HERE / "build-pip" / "cmake").resolve()
        if not reused:  # a build of its own; a reused one keeps its configuration (and its Python)
            subprocess.run(["cmake", "-S", str(HERE), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                            f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        elif not (build / "CMakeCache.txt").exists():
            sys.exit(f"setup.py: QGOSSIP_BUILD_DIR={reused} is not a configured build (scripts/build.sh makes one)")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build), "--parallel", jobs, "--target", "qgossip", "qgossip_python",
                        "qgossip_python_sources"], check=True)
        core = build / "python" / "qgossip" / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not core.exists():
            sys.exit(f"setup.py: {core} was not built: the build at {build} is for another Python than "
                     f"{sys.executable}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(core, target)
        (target.parent / "bin").mkdir(exist_ok=True)
        shutil.copy2(build / "qgossip", target.parent / "bin" / "qgossip")


(HERE / "build-pip").mkdir(exist_ok=True)
setup(ext_modules=[Extension("qgossip._core", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": str(HERE / "build-pip")}, "egg_info": {"egg_base": str(HERE / "build-pip")}})
