# -*- Python -*-
# The mlagen lit suite. lit.site.cfg.py (generated into the build's lit/)
# sets the directories below and loads this file.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "mlagen"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mlagen_obj_root, "lit")

# A [[VAR]] bound under one CHECK-LABEL is not visible under the next.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

# The build's tools come first, then LLVM's FileCheck and not.
llvm_config.with_environment(
    "PATH", [config.mlagen_tools_dir, config.llvm_tools_dir], append_path=True
)
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(
    ["mlagen-opt", "mlagen-translate", "mlagen"], [config.mlagen_tools_dir]
)

# Features for tests that compile emitted kernels ahead of time.
if shutil.which("clang++-22"):
    config.available_features.add("clang-hip")
if shutil.which("cuobjdump") or os.path.exists("/usr/local/cuda/bin/cuobjdump"):
    config.available_features.add("cuobjdump")
nvcc = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
if nvcc:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", nvcc))

# Kernels compiled by the tests go to a cache of the build's, not the user's.
config.environment["MLAGEN_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")
