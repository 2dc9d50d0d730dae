"""Convolution geometry shared by the backends: a kernel call's :class:`ConvInfo` from TF.js-style attributes
(cached), the check of a backward pass's ``dy``, and the geometry of Dilation2D."""

from __future__ import annotations

from ...core.conv_util import ConvInfo, conv_info


def _frozen(v: object) -> object:
    """A hashable form of an attribute value (explicit pads come as nested lists)."""
    return tuple(_frozen(e) for e in v) if isinstance(v, list | tuple) else v


_INFO_CACHE: dict[tuple, ConvInfo] = {}
_INFO_CACHE_SIZE = 512


def info_from_attrs(
    in_shape: tuple[int, ...], filter_shape: tuple[int, ...], attrs: dict, kernel: str, depthwise: bool = False
) -> ConvInfo:
    """The geometry of a kernel call from TF.js-style attributes (cached: models repeat the same calls)."""
    get = attrs.get
    strides, dilations, pad = get("strides", 1), get("dilations", 1), get("pad", "valid")
    rest = (get("dim_rounding_mode"), get("data_format"))
    key = (tuple(in_shape), tuple(filter_shape), kernel, depthwise, strides, dilations, pad, *rest)
    try:
        info = _INFO_CACHE.get(key)
    except TypeError:  # lists (explicit pads) in the attributes: their hashable form
        key = (*key[:4], _frozen(strides), _frozen(dilations), _frozen(pad), *rest)
        try:
            info = _INFO_CACHE.get(key)
        except TypeError:  # an unhashable attribute value: compute it (and let conv_info report it)
            return _conv_info(in_shape, filter_shape, attrs, kernel, depthwise)
    if info is None:
        info = _conv_info(in_shape, filter_shape, attrs, kernel, depthwise)
        if len(_INFO_CACHE) >= _INFO_CACHE_SIZE:
            _INFO_CACHE.clear()
        _INFO_CACHE[key] = info
    return info


def _conv_info(
    in_shape: tuple[int, ...], filter_shape: tuple[int, ...], attrs: dict, kernel: str, depthwise: bool
) -> ConvInfo:
    data_format = attrs.get("data_format") or ("NHWC" if len(in_shape) == 4 else "NDHWC")
    return conv_info(
        in_shape,
        filter_shape,
        attrs.get("strides", 1),
        attrs.get("dilations", 1),
        attrs.get("pad", "valid"),
        attrs.get("dim_rounding_mode"),
        depthwise=depthwise,
        channels_last=data_format in ("NHWC", "NDHWC", "NWC"),
        op=kernel,
    )


def check_dy(dy_shape: tuple[int, ...], info: ConvInfo, kernel: str) -> None:
    """A backward pass's ``dy`` must have the convolution's output shape: ValueError otherwise."""
    if tuple(dy_shape) != tuple(info.out_shape):
        raise ValueError(
            f"{kernel}: dy has shape {list(dy_shape)} but the convolution's output shape is {list(info.out_shape)}"
        )


def dilation_info(x_shape: tuple[int, ...], f_shape: tuple[int, ...], attrs: dict, kernel: str) -> ConvInfo:
    """The geometry of a Dilation2D call (NHWC, filter ``(h, w, channels)``): a depthwise-like window."""
    attrs = {**attrs, "data_format": "NHWC", "dim_rounding_mode": None}
    return info_from_attrs(x_shape, (*f_shape, f_shape[-1]), attrs, kernel)
