"""Perceived colour difference: CIE L*a*b* from sRGB, and the CIEDE2000 distance between two colours.

The formulas are the published ones (IEC 61966-2-1 for sRGB, D65 white and the 2 degree observer for
L*a*b*; Sharma, Wu and Dalal 2005 for CIEDE2000), as scikit-image computes them, so a threshold
OSWorld sets on scikit-image's ``deltaE_ciede2000`` means the same here. A difference of about 2 to 3
is just noticeable.

>>> round(delta_e_2000((255, 0, 0), (255, 0, 0)), 6)
0.0
>>> round(delta_e_2000((255, 0, 0), (0, 0, 255)), 2)
52.88
"""

from __future__ import annotations

from math import atan2, cos, degrees, exp, hypot, radians, sin, sqrt

__all__ = ["delta_e_2000", "lab"]

# sRGB (linear) to CIE XYZ, and the D65 reference white
_XYZ = ((0.412453, 0.357580, 0.180423), (0.212671, 0.715160, 0.072169), (0.019334, 0.119193, 0.950227))
_WHITE = (0.95047, 1.0, 1.08883)


def _linear(channel: int) -> float:
    c = channel / 255.0
    return ((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92


def _f(t: float) -> float:
    return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116


def lab(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """The CIE L*a*b* coordinates of an 8-bit sRGB colour.

    >>> [round(v, 2) for v in lab((255, 0, 0))]
    [53.24, 80.09, 67.2]
    """
    linear = [_linear(c) for c in rgb]
    x, y, z = (_f(sum(m * c for m, c in zip(row, linear, strict=True)) / white)
               for row, white in zip(_XYZ, _WHITE, strict=True))
    return 116 * y - 16, 500 * (x - y), 200 * (y - z)


def _hue(b: float, a: float) -> float:
    return degrees(atan2(b, a)) % 360 if (a or b) else 0.0


def delta_e_2000(rgb1: tuple[int, int, int], rgb2: tuple[int, int, int]) -> float:
    """The CIEDE2000 difference between two 8-bit sRGB colours (0 for the same colour)."""
    (l1, a1, b1), (l2, a2, b2) = lab(rgb1), lab(rgb2)
    c_mean7 = ((hypot(a1, b1) + hypot(a2, b2)) / 2) ** 7
    g = 0.5 * (1 - sqrt(c_mean7 / (c_mean7 + 25**7)))
    a1, a2 = a1 * (1 + g), a2 * (1 + g)
    c1, c2 = hypot(a1, b1), hypot(a2, b2)
    h1, h2 = _hue(b1, a1), _hue(b2, a2)
    dh = 0.0 if c1 * c2 == 0 else h2 - h1
    if dh > 180:
        dh -= 360
    elif dh < -180:
        dh += 360
    d_l, d_c, d_h = l2 - l1, c2 - c1, 2 * sqrt(c1 * c2) * sin(radians(dh) / 2)
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * cos(radians(h_mean - 30)) + 0.24 * cos(radians(2 * h_mean))
         + 0.32 * cos(radians(3 * h_mean + 6)) - 0.20 * cos(radians(4 * h_mean - 63)))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    r_t = -2 * sqrt(c_mean**7 / (c_mean**7 + 25**7)) * sin(radians(60 * exp(-(((h_mean - 275) / 25) ** 2))))
    return sqrt((d_l / s_l) ** 2 + (d_c / s_c) ** 2 + (d_h / s_h) ** 2 + r_t * (d_c / s_c) * (d_h / s_h))
