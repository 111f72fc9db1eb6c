"""convtune.torch without a GPU: the ops' registration and fake implementations
(fake CUDA tensors need no device), the modules' quantization and params,
torch.compile's capture of a block of them in one graph (a backend that
records the graph instead of running it), and the refusals. Skipped where
PyTorch is not installed (CI's environment has none: it is a large download;
the GPU machine's PyTorch runs bench/issue37_gpu.py)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import convtune  # noqa: E402
import convtune.torch as ctt  # noqa: E402
from convtune import ConvtuneError  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

SPEC = json.dumps(dict(op="conv2d", c=64, k=32, kernel=3, stride=2, pad=1, layout="nhwc",
                       out_type="int8", bias=True, scale="channel"))


def test_the_ops_are_registered():
    assert hasattr(torch.ops.convtune, "qconv2d") and hasattr(torch.ops.convtune, "qconv3d")


def test_fake_shapes_from_the_workload():
    with FakeTensorMode():
        x = torch.empty((3, 15, 17, 64), dtype=torch.int8, device="cuda")
        k = torch.empty((32, 3, 3, 64), dtype=torch.int8, device="cuda")
        y = torch.ops.convtune.qconv2d(x, k, None, None, SPEC, "")
        assert y.shape == (3, 8, 9, 32) and y.dtype == torch.int8 and y.device.type == "cuda"
        key = convtune.Workload(op="conv3d", n=2, c=8, k=16, d=4, h=6, w=6, kernel=3, pad=1,
                                layout="ndhwc").key
        x3 = torch.empty((2, 4, 6, 6, 8), dtype=torch.int8, device="cuda")
        y3 = torch.ops.convtune.qconv3d(x3, torch.empty((16, 3, 3, 3, 8), dtype=torch.int8,
                                                        device="cuda"), None, None, key, "")
        assert y3.shape == (2, 4, 6, 6, 16) and y3.dtype == torch.int32


def test_workload_for_fills_the_sizes_from_data():
    w = ctt.workload_for(SPEC, (3, 15, 17, 64))
    assert (w.n, w.input_size, w.output_shape) == (3, (15, 17), (3, 8, 9, 32))
    nchw = json.dumps(dict(op="conv2d", c=8, k=8, kernel=1))
    assert ctt.workload_for(nchw, (1, 8, 5, 6)).input_size == (5, 6)
    with pytest.raises(ConvtuneError, match=r"data: 3 dimensions \(1, 2, 3\); a nhwc conv2d takes 4"):
        ctt.workload_for(SPEC, (1, 2, 3))
    with pytest.raises(ConvtuneError, match="not a key and not a JSON object"):
        ctt.workload_for("{oops", (1, 2, 3, 4))


def test_the_op_refuses_cpu_tensors_and_the_wrong_form():
    x = torch.zeros((1, 8, 8, 64), dtype=torch.int8)
    k = torch.zeros((32, 3, 3, 64), dtype=torch.int8)
    with pytest.raises(ConvtuneError, match="data: on cpu; convtune::qconv2d runs on CUDA tensors"):
        torch.ops.convtune.qconv2d(x, k, None, None, SPEC, "")
    with pytest.raises(ConvtuneError, match="is a conv2d: use convtune::qconv2d"):
        torch.ops.convtune.qconv3d(x, k, None, None, SPEC, "")


def test_a_torch_cpu_tensor_is_refused_by_the_context():
    from convtune import _tensor

    with pytest.raises(ConvtuneError, match=r"data: a torch tensor on cpu; .* \(\.cuda\(\)\)"):
        _tensor.describe(torch.zeros(4, dtype=torch.int8), "data")
    assert _tensor._torch_dtype(torch.int8) == np.int8 and _tensor._torch_dtype(torch.int32) == np.int32
    t = _tensor.Tensor(None, 0, (2, 3), _tensor._torch_dtype(torch.bfloat16), True, "torch", 0)
    with pytest.raises(ConvtuneError, match="data: dtype bfloat16, K needs int8"):
        _tensor.check(t, "data", "K", (2, 3), np.int8, "nhwc", None)


def test_from_float_quantizes_per_channel():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(16, 8, 3, padding=1)
    m = ctt.QConv2d.from_float(conv, 0.02, 0.05, relu=True)
    wf = conv.weight.detach().double()
    sw = wf.abs().amax(dim=(1, 2, 3)) / 127
    wq = torch.clamp(torch.round(wf / sw.reshape(-1, 1, 1, 1)), -127, 127).to(torch.int8)
    assert torch.equal(m.weight, wq.permute(0, 2, 3, 1).contiguous())  # OHWI
    assert m.quant.bias == torch.round(conv.bias.detach().double() / (0.02 * sw)).int().tolist()
    assert np.allclose(m.quant.scale, (0.02 * sw / 0.05).tolist())
    assert (m.quant.clamp_min, m.quant.clamp_max) == (0, 127)
    w = m.workload(torch.empty((2, 16, 10, 12), dtype=torch.int8))
    assert w.key == "conv2d-nhwc-i8.i8.i8-n2-c16-k8-10x12-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc"
    assert m.params.dtype == torch.uint8 and m.params.numel() == convtune._capi.lib.ct_params_bytes(w._ptr())
    # params are those of make_params for the real workload's size too
    with convtune.open_arch(None, "sm_90") as ctx:
        assert np.array_equal(m.params.numpy(), ctx.make_params(w, m.quant, m.weight_plain))


def test_modules_refuse_what_they_cannot_run():
    conv = torch.nn.Conv2d(16, 8, 3, padding=1)
    with pytest.raises(ConvtuneError, match="input_size: needed with a data zero point and padding"):
        ctt.QConv2d.from_float(conv, 0.02, 0.05, input_zero_point=128, data_type="uint8")
    m = ctt.QConv2d.from_float(conv, 0.02, 0.05, input_zero_point=128, data_type="uint8",
                               input_size=(10, 12))
    assert '"h":10' in m.spec and '"w":12' in m.spec
    with pytest.raises(ConvtuneError, match="data: on cpu; convtune::qconv2d runs on CUDA tensors"):
        ctt.QConv2d.from_float(conv, 0.02, 0.05)(torch.zeros((1, 16, 8, 8), dtype=torch.int8))
    with pytest.raises(ConvtuneError, match="from_float: a Conv3d, not Conv2d"):
        ctt.QConv3d.from_float(conv, 0.02, 0.05)
    with pytest.raises(ConvtuneError, match="padding_mode 'reflect'"):
        ctt.QConv2d.from_float(torch.nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"), 1.0, 1.0)
    with pytest.raises(ConvtuneError, match="scale: 3 values; 1 or 8"):
        ctt.QConv2d(torch.zeros((8, 16, 3, 3), dtype=torch.int8), [0.1, 0.2, 0.3])
    with pytest.raises(ConvtuneError, match="weight: torch.float32"):
        ctt.QConv2d(torch.zeros((8, 16, 3, 3)), 0.1)


class Recorded(Exception):
    pass


def test_a_block_compiles_into_one_graph():
    """torch.compile(fullgraph=True) refuses any graph break; the backend keeps
    the graph and stops before running it (the op needs a GPU)."""
    torch.manual_seed(1)
    q1 = ctt.QConv2d.from_float(torch.nn.Conv2d(64, 16, 1), 0.05, 0.04, relu=True)
    q2 = ctt.QConv2d.from_float(torch.nn.Conv2d(16, 16, 3, padding=1), 0.04, 0.03, relu=True)
    q3 = ctt.QConv2d.from_float(torch.nn.Conv2d(16, 64, 1), 0.03, 0.06, relu=True, residual_scale=0.8)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q1, self.q2, self.q3 = q1, q2, q3

        def forward(self, x):
            return self.q3(self.q2(self.q1(x)), residual=x)

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)

        def run(*args):
            raise Recorded()

        return run

    torch._dynamo.reset()
    cm = torch.compile(Block(), backend=backend, fullgraph=True)
    x = torch.zeros((2, 64, 7, 7), dtype=torch.int8).contiguous(memory_format=torch.channels_last)
    with pytest.raises(Recorded):
        cm(x)
    assert len(graphs) == 1
    calls = [n for n in graphs[0].graph.nodes if n.op == "call_function" and "convtune" in str(n.target)]
    assert len(calls) == 3, graphs[0].graph


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (the GPU machine runs it)")


@cuda
def test_on_the_gpu_the_op_is_the_reference_and_bad_tensors_are_named():
    rng = np.random.default_rng(5)
    w = convtune.Workload(op="conv2d", n=2, c=32, k=16, h=9, w=11, kernel=3, stride=2, pad=1,
                          layout="nhwc", data_type="uint8", out_type="int8", data_zero_point=True,
                          bias=True, scale="channel", residual=True)
    x = rng.integers(0, 256, w.data_shape, dtype=np.uint8)
    k = rng.integers(-128, 128, w.plain_weight_shape, dtype=np.int8)
    r = rng.integers(-128, 128, w.output_shape, dtype=np.int8)
    q = convtune.Quant(data_zero_point=117, bias=rng.integers(-999, 999, 16).tolist(),
                       scale=(rng.uniform(0.5, 1.5, 16) / 3000).tolist(), residual_scale=0.7)
    want = convtune.reference_qconv(w, x, k, q, r)
    ctx = ctt.context("")
    xt, kt, rt = (torch.from_numpy(a).cuda() for a in (x, k, r))
    pt = torch.from_numpy(ctx.make_params(w, q, k)).cuda()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # the caller's current stream
        y = torch.ops.convtune.qconv2d(xt, kt, pt, rt, w.key, "")
    side.synchronize()
    assert np.array_equal(y.cpu().numpy(), want)
    assert np.array_equal(ctx.qconv2d(w, xt, kt, pt, rt).cpu().numpy(), want)
    bad = [
        (dict(data=xt.to(torch.int8)), "data: dtype int8, .* needs uint8"),
        (dict(data=xt.permute(0, 3, 1, 2)), r"data: shape \(2, 32, 9, 11\)"),
        (dict(weights=kt.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)), "weights: not contiguous"),
        (dict(params=pt.cpu()), "params: a torch tensor on cpu"),
        (dict(params=pt[:16]), r"params: 16 bytes, .* needs"),
        (dict(residual=None), "adds a residual; none was given"),
        (dict(out=torch.empty(w.output_shape, dtype=torch.int32, device="cuda")), "out: dtype int32"),
    ]
    for over, pattern in bad:
        a = dict(data=xt, weights=kt, params=pt, residual=rt)
        a.update(over)
        with pytest.raises(ConvtuneError, match=pattern):
            ctx.qconv2d(w, a["data"], a["weights"], a["params"], a["residual"], out=a.get("out"))
