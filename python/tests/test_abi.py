"""The ctypes mirrors of the public structs must match the C header: a mismatch lets the library write past a
Python buffer (heap corruption that shows up much later). A C compiler tells the real sizes and offsets."""
import ctypes
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from trireme import _lib, custom

HEADER_DIR = Path(__file__).resolve().parents[2] / "include"
STRUCTS = {
    "trr_tensor": _lib.Tensor,
    "trr_op_params": _lib.OpParams,
    "trr_op_info": _lib.OpInfo,
    "trr_backend_info": _lib.BackendInfo,
    "trr_device_info": _lib.DeviceInfo,
    "trr_param_info": custom.ParamInfo,
    "trr_tile_param": custom.TileParam,
    "trr_kernel_code": custom.KernelCode,
    "trr_op_launch": custom.OpLaunch,
    "trr_op_cpu_args": custom.CpuArgs,
    "trr_op_cpu_row_args": custom.CpuRowArgs,
    "trr_op_def": custom.OpDef,
    "trr_tool_options": custom.ToolOptions,
}


def c_layout():
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc or not (HEADER_DIR / "trireme.h").exists():
        pytest.skip("no C compiler or no header beside the package: the layout cannot be checked")
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "trireme.h"', "int main(void) {"]
    for cname, py in STRUCTS.items():
        lines.append(f'printf("{cname} size %zu\\n", sizeof({cname}));')
        for field, _ in py._fields_:
            lines.append(f'printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
    lines.append("return 0; }")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "abi.c", Path(tmp) / "abi"
        src.write_text("\n".join(lines))
        subprocess.run([cc, "-I", str(HEADER_DIR), str(src), "-o", str(exe)], check=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {tuple(l.split()[:2]): int(l.split()[2]) for l in out.splitlines()}


def test_struct_mirrors_match_the_header():
    layout = c_layout()
    for cname, py in STRUCTS.items():
        assert ctypes.sizeof(py) == layout[(cname, "size")], f"{cname}: ctypes {ctypes.sizeof(py)} bytes"
        for field, _ in py._fields_:
            assert getattr(py, field).offset == layout[(cname, field)], f"{cname}.{field}"
