"""Whole models from PyPI's model libraries, stock and converted (issue 37).

    pip install -c benchmarks/constraints.txt ".[models]"   # MONAI, transformers, diffusers
    python benchmarks/models.py [--rounds 15] [--models unet-2d,hifigan] [--out docs/benchmarks/<name>.md]

Each architecture is built from its library's own classes with random weights (no
downloads), once as the library builds it ("stock": torch.nn's ConvTranspose layers)
and once through ``onednn_graph.torch.convert`` (the same parameters). For f32 and
under ``torch.autocast("cpu", dtype=torch.bfloat16)``, inference (eval, ``torch.no_grad``)
and one training step (forward, a mean-square loss, backward, an SGD step), the two
run in interleaved rounds of a few calls each (``--calls``, more where they would last under
``--round-ms``: ``suite.calls_per_round``; in an order balanced over the rounds:
``suite.round_order``); the table gives the median time per call of each and the median
of the per-round ratios converted/stock with the lowest and highest round (below 1: the
converted model is faster), and beside it the same ratio for the model's ConvTranspose
layers alone (each called on the input it had in the model, summed). "ConvTranspose
share" is the part of the stock model's time in its ConvTranspose layers: the stock time
less that of a copy whose ConvTranspose layers return a preallocated result (and zero
gradients) at once. ``--check`` makes the run
fail (exit 1) where a converted model's median ratio is over 1.00.

The libraries are optional extras of the benchmarks (``models``), never dependencies
of the package; a model whose library is missing is left out and said so.
"""

from __future__ import annotations

import argparse
import copy
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from train_conv_transpose import generator as _example_generator  # noqa: E402
import suite  # noqa: E402  (round_order; the benchmarks' folder is the script's)

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph._impl import version as _version  # noqa: E402

Built = tuple[torch.nn.Module, tuple, Callable[[Any], torch.Tensor]]


def _mean_square(out: Any) -> torch.Tensor:
    return out.float().pow(2).mean()


def _first(fn: Callable[[Any], torch.Tensor]) -> Callable[[Any], torch.Tensor]:
    return lambda out: fn(out[0] if isinstance(out, (tuple, list)) else out)


def hifigan() -> Built:
    """transformers' SpeechT5 HiFi-GAN vocoder with weight_norm (parametrizations):
    4 ConvTranspose1d (kernel 8, stride 4)."""
    from transformers import SpeechT5HifiGan, SpeechT5HifiGanConfig
    m = SpeechT5HifiGan(SpeechT5HifiGanConfig(model_in_dim=80, upsample_initial_channel=128,
                                              upsample_rates=[4, 4, 4, 4],
                                              upsample_kernel_sizes=[8, 8, 8, 8]))
    m.apply_weight_norm()
    return m, (torch.randn(2, 32, 80),), _mean_square


def encodec_decoder() -> Built:
    """transformers' EnCodec decoder (weight_norm at construction): 4 ConvTranspose1d."""
    from transformers import EncodecConfig, EncodecModel
    m = EncodecModel(EncodecConfig(hidden_size=64, num_filters=8, upsampling_ratios=[8, 5, 4, 2],
                                   num_lstm_layers=1, codebook_size=64)).decoder
    return m, (torch.randn(2, 64, 25),), _mean_square


def oobleck_decoder() -> Built:
    """diffusers' Oobleck audio VAE decoder (the older weight_norm hook): 4 ConvTranspose1d."""
    from diffusers import AutoencoderOobleck
    m = AutoencoderOobleck(encoder_hidden_size=16, downsampling_ratios=[2, 4, 4, 8],
                           channel_multiples=[1, 2, 4, 8], decoder_channels=16,
                           decoder_input_channels=16, audio_channels=1).decoder
    return m, (torch.randn(2, 16, 32),), _mean_square


def unet_2d() -> Built:
    """MONAI's 2-D UNet (residual units): 3 ConvTranspose2d (kernel 3, stride 2)."""
    from monai.networks.nets import UNet
    m = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(16, 32, 64, 128),
             strides=(2, 2, 2), num_res_units=2)
    return m, (torch.randn(2, 1, 64, 64),), _mean_square


def basic_unet_2d() -> Built:
    """MONAI's BasicUNet with deconvolution upsampling: 4 ConvTranspose2d (kernel 2, stride 2)."""
    from monai.networks.nets import BasicUNet
    m = BasicUNet(spatial_dims=2, in_channels=1, out_channels=2, features=(8, 8, 16, 32, 64, 8),
                  upsample="deconv")
    return m, (torch.randn(2, 1, 64, 64),), _mean_square


def unet_3d() -> Built:
    """MONAI's 3-D UNet: 3 ConvTranspose3d (kernel 3, stride 2, output_padding 1)."""
    from monai.networks.nets import UNet
    m = UNet(spatial_dims=3, in_channels=1, out_channels=2, channels=(8, 16, 32, 64),
             strides=(2, 2, 2), num_res_units=1)
    return m, (torch.randn(1, 1, 32, 32, 32),), _mean_square


def gan_generator() -> Built:
    """MONAI's GAN Generator: 3 ConvTranspose2d (kernel 3)."""
    from monai.networks.nets import Generator
    m = Generator(latent_shape=(64,), start_shape=(64, 8, 8), channels=(32, 16, 1),
                  strides=(2, 2, 1), num_res_units=1)
    return m, (torch.randn(8, 64),), _mean_square


def sam_mask_decoder() -> Built:
    """transformers' SAM mask decoder (a mask head): 2 ConvTranspose2d (kernel 2, stride 2)."""
    from transformers import SamMaskDecoderConfig
    from transformers.models.sam.modeling_sam import SamMaskDecoder
    cfg = SamMaskDecoderConfig(hidden_size=64, mlp_dim=256, num_hidden_layers=2,
                               num_attention_heads=4, iou_head_hidden_dim=64)
    cfg._attn_implementation = "sdpa"
    m = SamMaskDecoder(cfg)
    inputs = dict(image_embeddings=torch.randn(2, 64, 32, 32),
                  image_positional_embeddings=torch.randn(2, 64, 32, 32),
                  sparse_prompt_embeddings=torch.randn(2, 1, 2, 64),
                  dense_prompt_embeddings=torch.randn(2, 64, 32, 32), multimask_output=True)
    return m, (inputs,), _first(_mean_square)


def unetr() -> Built:
    """MONAI's UNETR (a ViT encoder, a 3-D convolutional decoder): 10 ConvTranspose3d
    (kernel 2, stride 2)."""
    from monai.networks.nets import UNETR
    m = UNETR(in_channels=1, out_channels=2, img_size=(32, 32, 32), feature_size=8, hidden_size=96,
              mlp_dim=192, num_heads=4)
    return m, (torch.randn(1, 1, 32, 32, 32),), _mean_square


def dpt() -> Built:
    """transformers' DPT depth estimator (a ViT, reassembled at four scales): 2
    ConvTranspose2d (kernel = stride = 4 and 2)."""
    from transformers import DPTConfig, DPTForDepthEstimation
    cfg = DPTConfig(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=128,
                    image_size=64, patch_size=8, neck_hidden_sizes=[16, 32, 64, 64], fusion_hidden_size=32,
                    backbone_out_indices=[0, 1, 2, 3], reassemble_factors=[4, 2, 1, 0.5])
    m = DPTForDepthEstimation(cfg)
    return m, ({"pixel_values": torch.randn(2, 3, 64, 64)},), \
        lambda out: _mean_square(out.predicted_depth)


def training_example() -> Built:
    """examples/train_conv_transpose.py's DCGAN-style generator: 3 ConvTranspose2d."""
    return _example_generator(torch.nn.ConvTranspose2d), (torch.randn(8, 16, 4, 4),), _mean_square


def dcgan_generator(batch: int = 16) -> Built:
    """The DCGAN paper's generator (nz 100, ngf 64): 5 ConvTranspose2d (kernel 4), each of
    the first four followed by BatchNorm2d and ReLU, the last by Tanh."""
    layers: list[torch.nn.Module] = []
    chans = [100, 512, 256, 128, 64]
    for i, (a, b) in enumerate(zip(chans, chans[1:])):
        layers += [torch.nn.ConvTranspose2d(a, b, 4, 1 if i == 0 else 2, 0 if i == 0 else 1, bias=False),
                   torch.nn.BatchNorm2d(b), torch.nn.ReLU(True)]
    layers += [torch.nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False), torch.nn.Tanh()]
    m = torch.nn.Sequential(*layers)
    with torch.no_grad():  # running statistics as a trained model has them
        for bn in m.modules():
            if isinstance(bn, torch.nn.BatchNorm2d):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
    return m, (torch.randn(batch, 100, 1, 1),), _mean_square


def mask_head() -> Built:
    """torchvision's Mask R-CNN mask predictor (ConvTranspose2d(256, 256, 2, stride 2), ReLU,
    a 1x1 Conv2d to 91 classes) on 32 RoIs of 14 x 14."""
    m = torch.nn.Sequential(torch.nn.ConvTranspose2d(256, 256, 2, 2), torch.nn.ReLU(),
                            torch.nn.Conv2d(256, 91, 1))
    return m, (torch.randn(32, 256, 14, 14),), _mean_square


class _KeypointPredictor(torch.nn.Module):
    """torchvision's Keypoint R-CNN predictor: ConvTranspose2d(512, 17, 4, 2, 1), then a
    bilinear x2 upsampling."""

    def __init__(self) -> None:
        super().__init__()
        self.kps_score_lowres = torch.nn.ConvTranspose2d(512, 17, 4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.interpolate(self.kps_score_lowres(x), scale_factor=2.0,
                                               mode="bilinear", align_corners=False)


def keypoint_head() -> Built:
    """torchvision's Keypoint R-CNN predictor on 16 RoIs of 14 x 14."""
    return _KeypointPredictor(), (torch.randn(16, 512, 14, 14),), _mean_square


#: A round's least length per runner (milliseconds), by default: a model shorter than this
#: makes more calls a round than ``--calls`` (``suite.calls_per_round``).
ROUND_MS = 30.0


def _round_flag(args: argparse.Namespace) -> str:
    """``--round-ms`` as the command line needs it to reproduce a table (the default: none)."""
    return "" if args.round_ms == ROUND_MS else f" --round-ms {args.round_ms:g}"


MODELS: dict[str, tuple[str, Callable[[], Built]]] = {
    "dcgan": ("DCGAN generator, BatchNorm + ReLU, batch 16", dcgan_generator),
    "dcgan-1": ("DCGAN generator, BatchNorm + ReLU, batch 1", lambda: dcgan_generator(1)),
    "dcgan-64": ("DCGAN generator, BatchNorm + ReLU, batch 64", lambda: dcgan_generator(64)),
    "mask-head": ("Mask R-CNN mask predictor, 32 RoIs", mask_head),
    "keypoint-head": ("Keypoint R-CNN predictor, 16 RoIs", keypoint_head),
    "hifigan": ("HiFi-GAN vocoder, weight_norm (transformers)", hifigan),
    "encodec": ("EnCodec decoder, weight_norm (transformers)", encodec_decoder),
    "oobleck": ("Oobleck decoder, older weight_norm (diffusers)", oobleck_decoder),
    "unet-2d": ("2-D U-Net (MONAI UNet)", unet_2d),
    "basic-unet-2d": ("2-D U-Net, deconv (MONAI BasicUNet)", basic_unet_2d),
    "unet-3d": ("3-D U-Net (MONAI UNet)", unet_3d),
    "gan": ("GAN generator (MONAI Generator)", gan_generator),
    "sam": ("SAM mask decoder (transformers)", sam_mask_decoder),
    "unetr": ("UNETR (MONAI)", unetr),
    "dpt": ("DPT depth estimator (transformers)", dpt),
    "example": ("the training example's generator", training_example),
}


def _call(model: torch.nn.Module, inputs: tuple) -> Any:
    return model(**inputs[0]) if len(inputs) == 1 and isinstance(inputs[0], dict) else model(*inputs)


class _Instant(torch.autograd.Function):
    """A ConvTranspose that costs nothing: a preallocated result, zero gradients."""

    @staticmethod
    def forward(ctx, x, w, out):  # type: ignore[no-untyped-def]
        ctx.grads = (torch.zeros_like(x), torch.zeros_like(w))
        return out.clone()

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        return (*ctx.grads, None)


class _InstantLayer(torch.nn.Module):
    def __init__(self, layer: torch.nn.Module, out: torch.Tensor) -> None:
        super().__init__()
        self.layer, self.out = layer, out

    def __getattr__(self, name: str) -> Any:  # the layer's attributes (kernel_size, ...)
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("layer"), name)

    def forward(self, x: torch.Tensor, output_size: Any = None) -> torch.Tensor:
        return _Instant.apply(x, self.layer.weight, self.out.to(x.dtype))


def _without_conv_transpose(model: torch.nn.Module, inputs: tuple, autocast: bool) -> torch.nn.Module:
    """A copy of `model` whose ConvTranspose layers return their results at once."""
    rest = ot.revert(model)  # (a copy, also of the older weight_norm's models)
    outs: dict[str, torch.Size] = {}
    layers = [(p, m) for p, m in rest.named_modules()
              if isinstance(m, torch.nn.modules.conv._ConvTransposeNd)]
    hooks = [m.register_forward_hook(lambda m, a, o, p=p: outs.__setitem__(p, o.shape))
             for p, m in layers]
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        _call(rest, inputs)
    for h in hooks:
        h.remove()
    for path, layer in layers:
        parent = rest.get_submodule(path.rpartition(".")[0])
        setattr(parent, path.rpartition(".")[2], _InstantLayer(layer, torch.randn(outs[path])))
    return rest


def _runner(model: torch.nn.Module, inputs: tuple, loss: Callable[[Any], torch.Tensor],
            train: bool, autocast: bool) -> Callable[[], None]:
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)

    def infer() -> None:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            _call(model, inputs)

    def step() -> None:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = _call(model, inputs)
        loss(out).backward()
        optimizer.step()
    return step if train else infer


def measure(build: Callable[[], Built], train: bool, autocast: bool, rounds: int,
            calls: int, round_ms: float = 0.0) -> dict[str, list[float]]:
    """Milliseconds per call in each of interleaved rounds: the stock model, the converted
    one, the stock one without its ConvTranspose work ("rest"), and its ConvTranspose
    layers alone, stock and converted ("stock layers", "converted layers": each layer on
    the input it had in the model, summed)."""
    torch.manual_seed(0)
    stock, inputs, loss = build()
    if not train:  # inference is eval's (BatchNorm's running statistics, no dropout)
        stock.eval()
    models = {"stock": stock, "converted": ot.convert(stock),
              "rest": _without_conv_transpose(stock, inputs, autocast)}
    runs = {k: _runner(m, inputs, loss, train, autocast) for k, m in models.items()}
    runs.update(_layers_alone(stock, inputs, train, autocast))
    times: dict[str, list[float]] = {k: [] for k in runs}
    for fn in runs.values():
        for _ in range(2):  # compile, warm up
            fn()
    calls = suite.calls_per_round(list(runs.values()), calls, round_ms)
    names = list(runs)
    for r in range(rounds):
        for name in suite.round_order(names, r):
            start = time.perf_counter()
            for _ in range(calls):
                runs[name]()
            times[name].append((time.perf_counter() - start) / calls * 1e3)
    return times


def _layers_alone(model: torch.nn.Module, inputs: tuple, train: bool,
                  autocast: bool) -> dict[str, Callable[[], None]]:
    """The model's ConvTranspose layers, each called on the input it has in the model (a
    forward, or a forward and backward): stock copies and converted ones."""
    seen: list[tuple[torch.nn.Module, torch.Tensor]] = []
    layers = [m for m in model.modules() if isinstance(m, torch.nn.modules.conv._ConvTransposeNd)]
    hooks = [m.register_forward_hook(lambda m, a, o: seen.append((m, a[0].detach().clone())))
             for m in layers]
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        _call(model, inputs)
    for h in hooks:
        h.remove()
    stock = [(ot.revert(m), x) for m, x in seen]  # copies, the older weight_norm's too
    ours = [(ot.convert(m), x) for m, x in stock]

    def run(pairs: list[tuple[torch.nn.Module, torch.Tensor]]) -> Callable[[], None]:
        def call() -> None:
            for layer, x in pairs:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                    if train:
                        y = layer(x.requires_grad_())
                    else:
                        with torch.no_grad():
                            y = layer(x)
                if train:
                    y.float().sum().backward()
        return call
    return {"stock layers": run(stock), "converted layers": run(ours)}


def measure_inference(build: Callable[[], Built], autocast: bool, rounds: int, calls: int,
                      compiled: bool, round_ms: float = 0.0) -> dict[str, list[float]]:
    """Milliseconds per call in each of interleaved rounds, in eval under
    ``torch.inference_mode``: the stock model and ``convert(model, inference=True)``, eager
    and (`compiled`) under ``torch.compile``."""
    torch.manual_seed(0)
    # Each model compiled afresh: Dynamo counts recompilations per code object across
    # models (nn.Module's call wrapper among them) and past its limit runs them eagerly.
    torch._dynamo.reset()
    stock, inputs, _ = build()
    stock.eval()
    models = {"stock": stock, "converted": ot.convert(stock, inference=True)}
    if compiled:
        models["stock compiled"] = torch.compile(stock)
        models["converted compiled"] = torch.compile(ot.convert(stock, inference=True))

    def runner(model: torch.nn.Module) -> Callable[[], None]:
        def infer() -> None:
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                _call(model, inputs)
        return infer
    runs = {k: runner(m) for k, m in models.items()}
    for fn in runs.values():
        for _ in range(3):  # compile, pack, warm up
            fn()
    calls = suite.calls_per_round(list(runs.values()), calls, round_ms)
    times: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    for r in range(rounds):
        for name in suite.round_order(names, r):
            start = time.perf_counter()
            for _ in range(calls):
                runs[name]()
            times[name].append((time.perf_counter() - start) / calls * 1e3)
    return times


def _available(keys: str, missing: list[str]):
    """(key, title, build) of each model named in `keys` (comma-separated) whose library is
    installed; the others' reasons go to `missing`."""
    for key in keys.split(","):
        title, build = MODELS[key]
        try:
            build()
        except ImportError as exc:
            missing.append(f"{title}: {exc.name or exc} not installed")
            continue
        yield key, title, build


def _written(lines: list[str], missing: list[str], out: str | None) -> int:
    """Print the table `lines` (and what was left out), and write it to `out` if given."""
    if missing:
        lines += ["", "Left out: " + "; ".join(missing) + "."]
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        Path(out).write_text(text)
    return 0


def _ratio(ours: list[float], theirs: list[float]) -> tuple[float, float, float]:
    """The median of per-round ratios and their spread (lowest, highest)."""
    ratios = [a / b for a, b in zip(ours, theirs)]
    return statistics.median(ratios), min(ratios), max(ratios)


def main_inference(args: argparse.Namespace) -> int:
    """``--inference``: eval, stock against ``convert(model, inference=True)``, eager and compiled."""
    rows, missing = [], []
    start = time.perf_counter()
    for key, title, build in _available(args.models, missing):
        for dtype, autocast in (("f32", False), ("bf16 autocast", True))[:1 if args.f32 else 2]:
            t = measure_inference(build, autocast, args.rounds, args.calls, not args.eager, args.round_ms)
            row = [title, dtype, statistics.median(t["stock"]), statistics.median(t["converted"]),
                   _ratio(t["converted"], t["stock"])]
            if not args.eager:
                row += [statistics.median(t["stock compiled"]), statistics.median(t["converted compiled"]),
                        _ratio(t["converted compiled"], t["stock compiled"])]
            rows.append(row)
            print(f"{key} {dtype}: " + " ".join(f"{k} {statistics.median(v):.2f}" for k, v in t.items()),
                  file=sys.stderr, flush=True)
    v = og.system.onednn_version()
    lines = [
        f"`python benchmarks/models.py --inference --rounds {args.rounds} --calls {args.calls}"
        f"{_round_flag(args)}{' --eager' if args.eager else ''}{' --f32' if args.f32 else ''}"
        f"{f' --threads {args.threads}' if args.threads else ''}"
        f"{' --keep-freed-memory' if args.keep_freed_memory else ''}` on {_version.cpu_model()} "
        f"(oneDNN ISA {og.system.cpu_isa()}), {torch.get_num_threads()} threads, oneDNN "
        f"{v.major}.{v.minor}.{v.patch}, PyTorch {torch.__version__}, "
        f"{time.perf_counter() - start:.0f} s. Eval under torch.inference_mode: the stock model "
        "and `convert(model, inference=True)`, eager and under torch.compile, in interleaved "
        f"rounds of at least {args.calls} calls and {args.round_ms:g} ms. Milliseconds per call, "
        f"medians of {args.rounds} rounds; "
        "converted/stock is the median of per-round ratios (lowest-highest round); below 1: "
        "the converted model is faster.",
        "",
        "| model | dtype | stock eager ms | converted eager ms | converted/stock eager |"
        + ("" if args.eager else " stock compiled ms | converted compiled ms | converted/stock compiled |"),
        "| --- | --- | --- | --- | --- |" + ("" if args.eager else " --- | --- | --- |"),
    ]
    for row in rows:
        cells = [row[0], row[1], f"{row[2]:.2f}", f"{row[3]:.2f}",
                 "**{:.2f}** ({:.2f}-{:.2f})".format(*row[4])]
        if not args.eager:
            cells += [f"{row[5]:.2f}", f"{row[6]:.2f}", "**{:.2f}** ({:.2f}-{:.2f})".format(*row[7])]
        lines.append("| " + " | ".join(cells) + " |")
    return _written(lines, missing, args.out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=3, help="the fewest calls per round and model")
    parser.add_argument("--round-ms", type=float, default=ROUND_MS,
                        help="more calls per round where the slowest runner's fall short of this "
                             "(short models: suite.calls_per_round); 0: --calls exactly")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", type=int, default=0, help="0: PyTorch's default")
    parser.add_argument("--out", default=None)
    parser.add_argument("--inference", action="store_true",
                        help="eval: stock against convert(model, inference=True), eager and compiled")
    parser.add_argument("--eager", action="store_true", help="with --inference: no torch.compile")
    parser.add_argument("--f32", action="store_true", help="with --inference: no bf16 autocast")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 where a converted model's median ratio is over 1.00")
    parser.add_argument("--keep-freed-memory", action="store_true",
                        help="og.system.keep_freed_memory() first: freed tensors' memory stays warm "
                             "in the heap (both models of a row share the process)")
    args = parser.parse_args(argv)
    if args.keep_freed_memory and not og.system.keep_freed_memory():
        parser.error("--keep-freed-memory: this C library takes no mallopt (not glibc)")
    warnings.simplefilter("ignore")  # the libraries' deprecation notices
    logging.getLogger("onednn_graph.torch").setLevel(logging.ERROR)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.inference:
        return main_inference(args)
    rows, missing = [], []
    start = time.perf_counter()
    for key, title, build in _available(args.models, missing):
        for dtype, autocast in (("f32", False), ("bf16 autocast", True)):
            for mode, train in (("inference", False), ("training step", True)):
                t = measure(build, train, autocast, args.rounds, args.calls, args.round_ms)
                stock, ours = statistics.median(t["stock"]), statistics.median(t["converted"])
                ratio = _ratio(t["converted"], t["stock"])
                layers = _ratio(t["converted layers"], t["stock layers"])
                share = (stock - statistics.median(t["rest"])) / stock
                rows.append((title, dtype, mode, stock, ours, ratio, layers, share))
                print(f"{key} {dtype} {mode}: {stock:.2f} / {ours:.2f} ms: {ratio[0]:.2f} "
                      f"({ratio[1]:.2f}-{ratio[2]:.2f}); layers alone {layers[0]:.2f}; "
                      f"ConvTranspose {share:.0%}", file=sys.stderr, flush=True)
    v = og.system.onednn_version()
    ratios = [r[5][0] for r in rows]
    geomean = statistics.geometric_mean(ratios) if ratios else float("nan")
    lines = [
        f"`python benchmarks/models.py --rounds {args.rounds} --calls {args.calls}{_round_flag(args)}"
        f"{f' --threads {args.threads}' if args.threads else ''}"
        f"{' --keep-freed-memory' if args.keep_freed_memory else ''}` on {_version.cpu_model()} "
        f"(oneDNN ISA {og.system.cpu_isa()}), {torch.get_num_threads()} threads, oneDNN "
        f"{v.major}.{v.minor}.{v.patch}, PyTorch {torch.__version__}, "
        f"{time.perf_counter() - start:.0f} s. Milliseconds per call, medians of {args.rounds} "
        f"interleaved rounds (of at least {args.calls} calls and {args.round_ms:g} ms); converted/stock "
        "is the median of per-round ratios (lowest-highest round), below 1: the converted model is "
        "faster; \"layers alone\" the same for the model's ConvTranspose layers called on their "
        "own inputs, summed.",
        "",
        f"Converted/stock geometric mean {geomean:.3f} over {len(rows)} rows; "
        f"{sum(r > 1.0 for r in ratios)} over 1.00, {sum(r > 1.05 for r in ratios)} over 1.05.",
        "",
        "| model | dtype | mode | stock ms | converted ms | converted/stock | layers alone | "
        "ConvTranspose share of stock |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {m} | {d} | {mode} | {s:.2f} | {c:.2f} | **{r[0]:.2f}** ({r[1]:.2f}-{r[2]:.2f}) | "
              f"{lay[0]:.2f} ({lay[1]:.2f}-{lay[2]:.2f}) | {max(share, 0):.0%} |"
              for m, d, mode, s, c, r, lay, share in rows]
    written = _written(lines, missing, args.out)
    if args.check and any(r > 1.0 for r in ratios):
        print(f"--check: {sum(r > 1.0 for r in ratios)} rows over 1.00", file=sys.stderr)
        return 1
    return written


if __name__ == "__main__":
    sys.exit(main())
