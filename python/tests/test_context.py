"""convtune.Context without a GPU: an architecture's context (ct_open_arch),
and every check the GPU calls make, on stand-ins that carry
__cuda_array_interface__ metadata and no memory (the library refuses to
launch on such a context before it reads any pointer)."""

import numpy as np
import pytest

import convtune
from convtune import ConvtuneError, Quant, Workload


class Dev:
    """A CUDA array's metadata alone."""

    def __init__(self, shape, typestr, ptr=0x10000, strides=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (ptr, False), "strides": strides, "version": 3}


class CpuTensor:
    """Like a torch CPU tensor: is_cuda, no __cuda_array_interface__."""

    is_cuda = False

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("not a CUDA tensor")


class DLPackOnly:
    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


W8 = dict(op="conv2d", c=16, k=16, h=8, w=8, kernel=3, pad=1, layout="nhwc", out_type="int8",
          bias=True, scale="channel")


@pytest.fixture
def ctx():
    with convtune.open_arch(None, "sm_90") as c:
        yield c


def args(w, **over):
    a = dict(data=Dev(w.data_shape, "|i1"), weights=Dev(w.conv_weight_shape, "|i1"),
             params=Dev((int(convtune._capi.lib.ct_params_bytes(w._ptr())),), "|u1"),
             out=Dev(w.output_shape, "|i1" if w.out_type == "int8" else "<i4"))
    a.update(over)
    return a


def test_open_without_a_gpu_or_with_one():
    try:
        c = convtune.open(None, 0)
    except ConvtuneError as e:  # CI: no device, the library's message
        assert e.status_name == "CT_ERR_NO_DEVICE" and "GPU" in str(e)
    else:
        c.close()
        c.close()  # twice is fine


def test_open_arch_names_the_known_architectures():
    with pytest.raises(ConvtuneError, match="sm_90"):
        convtune.open_arch(None, "sm_12")


def test_explain_and_make_params(ctx):
    w = Workload(**W8)
    ex = ctx.explain(w)
    assert ex.source == "default" and ex.template and isinstance(ex.config, dict) and ex.reason
    k = np.ones(w.plain_weight_shape, np.int8)
    p = ctx.make_params(w, Quant(bias=list(range(16)), scale=[0.01] * 16), k)
    assert p.dtype == np.uint8 and p.size == convtune._capi.lib.ct_params_bytes(w._ptr())
    bad = r"weights: int8 \(16, 16, 3, 3\), .* needs int8 \(16, 3, 3, 16\)"
    with pytest.raises(ConvtuneError, match=bad):
        ctx.make_params(w, Quant(bias=[0] * 16, scale=[0.01] * 16), np.ones((16, 16, 3, 3), np.int8))
    with pytest.raises(ConvtuneError, match="Quant.scale: 2 values"):
        ctx.make_params(w, Quant(bias=[0] * 16, scale=[0.01, 0.02]), k)
    with pytest.raises(ConvtuneError) as e:  # the library's own refusal, with its message
        ctx.make_params(w, Quant(bias=[0] * 16, scale=[-1.0] * 16), k)
    assert e.value.status_name == "CT_ERR_INVALID_ARG" and "scale" in str(e.value)


def test_calls_refuse_bad_tensors_with_clear_messages(ctx):
    w = Workload(**W8)
    cases = [
        (dict(data=np.zeros(w.data_shape, np.int8)), "data: a host array"),
        (dict(data=CpuTensor()), "data: a CPU tensor offers neither"),
        (dict(data=DLPackOnly()), "data: a DLPack tensor on device type 1, not CUDA"),
        (dict(data=Dev((1, 16, 8, 8), "|i1")),
         r"data: shape \(1, 16, 8, 8\), .* needs \(1, 8, 8, 16\) \(nhwc\)"),
        (dict(data=Dev(w.data_shape, "|u1")), "data: dtype uint8, .* needs int8"),
        (dict(weights=Dev(w.conv_weight_shape, "<i4")), "weights: dtype int32"),
        (dict(data=Dev(w.data_shape, "|i1", ptr=0x10008)), "data: address 0x10008 is not 16-byte aligned"),
        (dict(data=Dev(w.data_shape, "|i1", strides=(1024, 16, 128, 1))), "data: not contiguous"),
        (dict(params=Dev((7,), "|u1")), "params: 7 bytes, .* needs"),
        (dict(params=Dev((304,), "|u1", ptr=0x10004)), "params: address 0x10004 is not 16-byte aligned"),
        (dict(out=Dev(w.output_shape, "<i4")), "out: dtype int32, .* needs int8"),
        (dict(out=None), r"out: give one \(out=\)"),
        (dict(residual=Dev(w.output_shape, "|i1")), "residual: .* has no residual; one was given"),
    ]
    for over, pattern in cases:
        with pytest.raises(ConvtuneError, match=pattern):
            ctx.qconv2d(w, **args(w, **over))
    # the right call, refused by the library only because there is no GPU
    with pytest.raises(ConvtuneError) as e:
        ctx.qconv2d(w, **args(w))
    assert e.value.status_name == "CT_ERR_NO_DEVICE" and "no GPU" in str(e.value)


def test_calls_refuse_the_wrong_form(ctx):
    w = Workload(**W8)
    with pytest.raises(ConvtuneError, match="has an epilogue: call qconv2d"):
        ctx.conv2d(w, Dev(w.data_shape, "|i1"), Dev(w.conv_weight_shape, "|i1"),
                   out=Dev(w.output_shape, "|i1"))
    with pytest.raises(ConvtuneError, match="is a conv2d: call the conv2d form"):
        ctx.qconv3d(w, **args(w))
    plain = Workload(op="conv3d", c=16, k=16, d=4, h=8, w=8, kernel=3, pad=1, layout="ndhwc")
    with pytest.raises(ConvtuneError, match="has no epilogue: call conv3d"):
        ctx.qconv3d(plain, Dev(plain.data_shape, "|i1"), Dev(plain.conv_weight_shape, "|i1"))
    res = Workload(**dict(W8, residual=True))
    with pytest.raises(ConvtuneError, match="adds a residual; none was given"):
        ctx.qconv2d(res, **args(res))


def test_packed_layouts_take_packed_weights(ctx):
    w = Workload(op="conv2d", c=8, k=12, h=8, w=8, kernel=3, pad=1, layout="nchw")
    assert w.conv_weight_shape == (3, 2, 3, 3, 4, 4) and w.plain_weight_shape == (12, 8, 3, 3)
    with pytest.raises(ConvtuneError, match=r"weights: shape \(12, 8, 3, 3\), .* needs \(3, 2, 3, 3, 4, 4\)"):
        ctx.conv2d(w, Dev(w.data_shape, "|i1"), Dev(w.plain_weight_shape, "|i1"),
                   out=Dev(w.output_shape, "<i4"))
    with pytest.raises(ConvtuneError, match="no GPU"):
        ctx.pack_weights(w, Dev(w.plain_weight_shape, "|i1"), out=Dev(w.packed_weight_shape, "|i1"))
    nhwc = Workload(**W8)
    with pytest.raises(ConvtuneError, match="channels-last; its weights are used as they are"):
        ctx.pack_weights(nhwc, Dev(nhwc.plain_weight_shape, "|i1"))


def test_a_closed_context_refuses():
    c = convtune.open_arch(None, "sm_90")
    c.close()
    with pytest.raises(ConvtuneError, match="closed"):
        c.explain(Workload(**W8))


def test_streams():
    from convtune import _tensor

    class S:
        cuda_stream = 1234

    class C:
        ptr = 99

    assert _tensor.stream_handle(7) == 7 and _tensor.stream_handle(S()) == 1234
    assert _tensor.stream_handle(C()) == 99
    with pytest.raises(TypeError):
        _tensor.stream_handle("s")
