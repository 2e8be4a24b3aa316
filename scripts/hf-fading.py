#!/usr/bin/env python3
"""Fading files for codec2's channel simulator `ch --mpg/--mpp/--mpd` (Benchmarks/hf.sh).

codec2 makes them with Octave (octave/ch_fading.m and doppler_spread.m); this follows the same
recipe without Octave: two independent Doppler-spreading functions (one per path), each complex white
Gaussian noise at a low rate (10 x the spread) through a Gaussian-shaped FIR filter (sigma = spread/2,
100 taps designed like Octave's fir2), resampled to the channel's rate; the gain that makes the
two paths' average power 1.

The file ch reads: four float32 values of hf_gain, then per sample the float32 quadruple
re(path 1), im(path 1), re(path 2), im(path 2). Names: slow_fading_samples.float (0.1 Hz, --mpg),
fast_fading_samples.float (1 Hz, --mpp), faster_fading_samples.float (2 Hz, --mpd).

    hf-fading.py DIR SECONDS [--fs 8000] [--seed 1] [--which fast,slow,faster]
"""
import argparse
import os
import sys

import numpy as np
from scipy import signal

FILES = {"slow": ("slow_fading_samples.float", 0.1), "fast": ("fast_fading_samples.float", 1.0),
         "faster": ("faster_fading_samples.float", 2.0)}


def doppler_spread(spread_hz, fs, nsam, rng):
    """Gaussian-filtered complex noise with a Doppler spread of spread_hz, at fs, nsam samples."""
    sigma = spread_hz / 2
    low_fs = int(np.ceil(10 * spread_hz))
    ntaps = 100
    x = np.arange(0, low_fs / 2 + 1e-9, low_fs / 100)
    y = (1 / (sigma * np.sqrt(2 * np.pi))) * np.exp(-(x ** 2) / (2 * sigma * sigma))
    # fir2 wants an odd length for a nonzero response at Nyquist; the Gaussian is ~0 there.
    b = signal.firwin2(ntaps - 1 if ntaps % 2 == 0 else ntaps, x / (low_fs / 2), y, window="hamming")
    up = fs / low_fs
    nlow = int(np.ceil(nsam / up)) + 2 * ntaps
    noise = rng.standard_normal(nlow) + 1j * rng.standard_normal(nlow)
    filtered = signal.lfilter(b, 1, noise)[ntaps:]
    from fractions import Fraction
    f = Fraction(fs, low_fs) if float(up).is_integer() else Fraction(up).limit_denominator(1000)
    out = signal.resample_poly(filtered, f.numerator, f.denominator)
    return out[:nsam]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("seconds", type=float)
    ap.add_argument("--fs", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--which", default="fast")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    nsam = int(a.seconds * a.fs)
    for i, which in enumerate(a.which.split(",")):
        name, spread = FILES[which]
        rng = np.random.default_rng(a.seed + 1000 * i)
        s1 = doppler_spread(spread, a.fs, nsam, rng)
        s2 = doppler_spread(spread, a.fs, nsam, rng)
        gain = 1.0 / np.sqrt(np.var(s1) + np.var(s2))
        path = os.path.join(a.dir, name)
        with open(path + ".tmp", "wb") as f:
            np.full(4, gain, dtype=np.float32).tofile(f)
            step = 1 << 20
            for at in range(0, nsam, step):
                q = np.empty((min(step, nsam - at), 4), dtype=np.float32)
                q[:, 0] = s1[at:at + step].real
                q[:, 1] = s1[at:at + step].imag
                q[:, 2] = s2[at:at + step].real
                q[:, 3] = s2[at:at + step].imag
                q.tofile(f)
        os.replace(path + ".tmp", path)
        print(f"{path}: {nsam} samples, {spread} Hz spread, hf_gain {gain:.4f}", file=sys.stderr)


if __name__ == "__main__":
    main()
