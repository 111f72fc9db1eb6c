"""The ctypes layouts of convtune._capi against convtune.h: every field's
offset and each struct's size as a C program compiled against the header
prints them (skipped without a C compiler or the header, as after a bare
`pip install`), and a fused workload's fields and nested ct_quant through
the library."""

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import convtune
from convtune import Quant, Workload
from convtune import _capi

HEADER = Path(__file__).resolve().parents[2] / "include" / "convtune" / "convtune.h"

# (ctypes struct, C type, fields to check: every one of the ctypes struct)
STRUCTS = [
    (_capi.Epilogue, "ct_epilogue"),
    (_capi.WorkloadStruct, "ct_workload"),
    (_capi.QuantStruct, "ct_quant"),
    (_capi.ExplanationStruct, "ct_explanation"),
]
C_NAMES = {"in_": "in"}  # a Python keyword renamed


def c_layouts(tmp_path):
    """{C type: (size, {field: offset})} from a program built against convtune.h."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc or not HEADER.exists():
        pytest.skip("no C compiler or no convtune.h beside the package (a source checkout has both)")
    inc = tmp_path / "inc" / "convtune"
    inc.mkdir(parents=True)
    # version.h is CMake's; the layouts do not depend on it
    (inc / "version.h").write_text("#define CT_VERSION_STRING \"0\"\n")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "convtune/convtune.h"',
             "int main(void) {"]
    for st, ctype in STRUCTS:
        lines.append(f'  printf("{ctype} . %zu\\n", sizeof({ctype}));')
        for name, *_ in st._fields_:
            c = C_NAMES.get(name, name)
            lines.append(f'  printf("{ctype} {name} %zu\\n", offsetof({ctype}, {c}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layouts.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layouts"
    subprocess.run([cc, "-std=c11", "-I", str(tmp_path / "inc"), "-I", str(HEADER.parents[1]),
                    str(src), "-o", str(exe)], check=True, capture_output=True, text=True)
    out = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n"):
        if line:
            ctype, field, value = line.split()
            size, fields = out.setdefault(ctype, (None, {}))
            if field == ".":
                out[ctype] = (int(value), fields)
            else:
                fields[field] = int(value)
    return out


def test_struct_layouts_match_the_header(tmp_path):
    c = c_layouts(tmp_path)
    for st, ctype in STRUCTS:
        size, offsets = c[ctype]
        assert ctypes.sizeof(st) == size, f"{ctype}: ctypes {ctypes.sizeof(st)} bytes, C {size}"
        for name, *_ in st._fields_:
            assert getattr(st, name).offset == offsets[name], (
                f"{ctype}.{name}: ctypes offset {getattr(st, name).offset}, C {offsets[name]}")
    # the fused convolution's fields close each struct
    assert _capi.WorkloadStruct._fields_[-3][0] == "pre_c"
    assert _capi.QuantStruct._fields_[-2][0] == "pre"


def test_fused_fields_read_through_the_struct():
    # every pre field set, so that a field at the wrong offset reads another's value
    w = Workload("conv3d-ndhwc-u8.i8.u8-n2-c8-k8-4x9x9-r3x3x3-s1x2x2-p1x1x1.1x1x1-d1x1x1-zd-onnx-g8"
                 "-pre5.u8.zd.zw.bias.qc.onnx")
    s = w.struct
    assert (s.pre_c, s.pre_data_type) == (5, _capi.DTYPE_UINT8)
    e = s.pre_epi
    assert (e.data_zero_point, e.weight_zero_point, e.bias, e.scale, e.residual, e.d2s_block,
            e.rounding) == (1, 1, 1, 1, 0, 0, 1)
    assert (s.epi.data_zero_point, s.epi.weight_zero_point, s.epi.rounding, s.groups) == (1, 0, 1, 8)
    # a struct built here, field by field, gives the library's key back
    t = _capi.WorkloadStruct()
    _capi.lib.ct_workload_init(ctypes.byref(t), _capi.OP_CONV2D)
    t.layout, t.out_type, t.n, t.c, t.k, t.groups = _capi.LAYOUT_NHWC, _capi.DTYPE_INT8, 1, 12, 12, 12
    for i in range(2):
        t.in_[i], t.kernel[i], t.pad_before[i], t.pad_after[i] = 9, 3, 1, 1
    t.pre_c, t.pre_data_type, t.pre_epi.bias, t.pre_epi.rounding = 7, _capi.DTYPE_UINT8, 1, 1
    key = ctypes.create_string_buffer(_capi.KEY_MAX)
    assert _capi.lib.ct_workload_key(ctypes.byref(t), key, len(key)) == 0, key.value
    assert key.value.decode() == ("conv2d-nhwc-i8.i8.i8-n1-c12-k12-9x9-r3x3-s1x1-p1x1.1x1-d1x1-g12"
                                  "-pre7.u8.bias.onnx")


def test_make_params_carries_the_nested_quant():
    """ct_make_params reads q->pre and q->pre_weights through the nested struct:
    the block ends with the pointwise weights, one row of pre_c per channel
    padded with zeros to 32 bytes."""
    w = Workload(op="conv2d", c=12, k=12, groups=12, h=7, w=6, kernel=3, pad=1, layout="nhwc",
                 out_type="int8", bias=True, scale="channel",
                 pre={"c": 5, "bias": True, "scale": "channel"})
    rng = np.random.default_rng(5)
    pw = rng.integers(-128, 128, size=w.pre_weight_shape, dtype=np.int8)
    q = Quant(bias=[1] * 12, scale=[0.01] * 12,
              pre=Quant(bias=[2] * 12, scale=[0.02] * 12), pre_weights=pw)
    with convtune.open_arch(None, "sm_90") as ctx:
        p = ctx.make_params(w, q, np.ones(w.plain_weight_shape, np.int8))
        assert p.size == _capi.lib.ct_params_bytes(w._ptr())
        rows = p[-12 * 32:].view(np.int8).reshape(12, 32)
        np.testing.assert_array_equal(rows[:, :5], pw)
        assert not rows[:, 5:].any()
        with pytest.raises(convtune.ConvtuneError, match="Quant.pre: the workload fuses"):
            ctx.make_params(w, Quant(bias=[1] * 12, scale=[0.01] * 12),
                            np.ones(w.plain_weight_shape, np.int8))
