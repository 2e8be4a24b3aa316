#!/usr/bin/env python3
"""The HF benchmark: `modem tx/rx --profile hf` against FreeDV's data modes over codec2's `ch`.

8 KiB of random bytes at each point (AWGN 20, 10, 3, -3 dB; MPP 20, 10, 5, 0 dB: Watterson two paths
2 ms apart with 1 Hz Doppler spread). Noise is set so that ch's own measured SNR3k equals the point's
SNR: `ch in.raw /dev/null --No 0 [fading]` reads SNR3k C, then `--No (C - SNR)`.

Ours: for --bitrate in 24000 ... 50 (fastest first): tx at 48 kHz, sox to 8 kHz 16-bit and vol 0.25,
ch, sox back to 48 kHz, rx; the first byte-exact one scores 8192*8*rate/samples(o.wav) bit/s (preamble
and header included). FreeDV: freedv_data_raw_tx/rx over datac1/3/0/4/13, every intact frame's payload
counted over the transmission's whole length (silence between bursts included); its best mode is the
score. Run by Benchmarks/hf.sh (which builds everything and sets the environment below).

FreeDV's figures do not change with our code: they are kept in .build/hf-freedv.json and reused
(--fresh-freedv measures them again).

  MODEM=... CODEC2_BIN=... FADING_DIR=... hf.py [--points awgn20,mpp5] [--no-freedv] [--fresh-freedv] [--csv FILE]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import wave

RATES = [24000, 16000, 12000, 9600, 8000, 6000, 4800, 3600, 2400, 1600, 1200, 800, 600, 400, 300, 200, 150, 100, 75, 50]
POINTS = [("awgn", 20), ("awgn", 10), ("awgn", 3), ("awgn", -3), ("mpp", 20), ("mpp", 10), ("mpp", 5), ("mpp", 0)]
FREEDV_MODES = ["datac1", "datac3", "datac0", "datac4", "datac13"]
TARGET = {("awgn", 20): 8000}

MODEM = os.environ.get("MODEM", "modem")
BIN = os.environ.get("CODEC2_BIN", ".build/codec2/bin")
FADING = os.environ.get("FADING_DIR", ".build/hf-fading")


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def channel(src, dst, kind, snr):
    """src → dst (8 kHz 16-bit raw) through ch at `snr` dB SNR3k."""
    fading = ["--mpp", "--fading_dir", FADING] if kind == "mpp" else []
    r = run([f"{BIN}/ch", src, "/dev/null", "--No", "0"] + fading)
    m = re.search(r"SNR3k\(dB\):\s*(-?[\d.]+)", r.stderr.decode())
    if not m:
        raise RuntimeError("ch did not report SNR3k: " + r.stderr.decode()[-400:])
    c = float(m.group(1))
    r = run([f"{BIN}/ch", src, dst, "--No", f"{0 + c - snr:.3f}"] + fading)
    if r.returncode != 0:
        raise RuntimeError("ch failed: " + r.stderr.decode()[-400:])
    m = re.search(r"SNR3k\(dB\):\s*(-?[\d.]+)", r.stderr.decode())
    return float(m.group(1)) if m else float("nan")


def ours(work, data, kind, snr, log):
    for br in RATES:
        o = os.path.join(work, "o.wav")
        r = run([MODEM, "tx", "--profile", "hf", "--bitrate", str(br), "--out", o, data])
        if r.returncode != 0:
            raise RuntimeError("modem tx failed: " + r.stderr.decode())
        with wave.open(o) as w:
            rate, samples = w.getframerate(), w.getnframes()
        o8 = os.path.join(work, "o8.raw")
        subprocess.run(["sox", o, "-r", "8000", "-t", "raw", "-e", "signed", "-b", "16", "-c", "1", o8, "remix", "1", "vol", "0.25"], check=True)
        oc8 = os.path.join(work, "oc8.raw")
        measured = channel(o8, oc8, kind, snr)
        oc = os.path.join(work, "oc.wav")
        subprocess.run(["sox", "-r", "8000", "-t", "raw", "-e", "signed", "-b", "16", "-c", "1", oc8, "-r", str(rate), oc], check=True)
        out = os.path.join(work, "o.out")
        with open(out, "wb") as f:
            r = subprocess.run([MODEM, "rx", "--profile", "hf", oc], stdout=f, stderr=subprocess.PIPE)
        ok = open(out, "rb").read() == open(data, "rb").read()
        info = " ".join(l for l in r.stderr.decode().splitlines() if l.startswith("###") or "failed" in l or "no HF" in l)
        print(f"  ours {kind}{snr} --bitrate {br}: {'ok' if ok else 'FAIL'} (ch SNR3k {measured:.2f}) {info}", file=log, flush=True)
        if ok:
            return 8192 * 8 * rate / samples, br
    return 0.0, None


def freedv(work, data, kind, snr, log):
    """FreeDV's best mode at this point. A mode whose every frame coming through would still not
    beat the best so far is not run (its ceiling: the payload over its transmission's length)."""
    best, best_mode = 0.0, None
    for mode in FREEDV_MODES:
        tx = os.path.join(work, f"{mode}.raw")
        r = run([f"{BIN}/freedv_data_raw_tx", mode, data, tx])
        if r.returncode != 0:
            raise RuntimeError("freedv_data_raw_tx failed: " + r.stderr.decode()[-400:])
        seconds = os.path.getsize(tx) / 2 / 8000
        ceiling = os.path.getsize(data) * 8 / seconds
        if ceiling <= best:
            print(f"  freedv {kind}{snr} {mode}: not run (at most {ceiling:.0f} bit/s)", file=log, flush=True)
            continue
        rx_in = os.path.join(work, f"{mode}-ch.raw")
        channel(tx, rx_in, kind, snr)
        out = os.path.join(work, f"{mode}.out")
        r = run([f"{BIN}/freedv_data_raw_rx", mode, rx_in, out])
        got = os.path.getsize(out) if os.path.exists(out) else 0
        rate = got * 8 / seconds
        print(f"  freedv {kind}{snr} {mode}: {got} bytes intact in {seconds:.1f} s: {rate:.0f} bit/s", file=log, flush=True)
        if rate > best:
            best, best_mode = rate, mode
    return best, best_mode


def freedv_cached(cache, work, data, kind, snr, log, fresh):
    """FreeDV's figure from the cache file (it does not change with our code), or measured and kept."""
    key = f"{kind}{snr}"
    table = {}
    if cache and os.path.exists(cache):
        with open(cache) as f:
            table = json.load(f)
    if key in table and not fresh:
        print(f"  freedv {key}: {table[key][0]:.0f} bit/s ({table[key][1]}), from {cache}", file=log, flush=True)
        return table[key][0], table[key][1]
    result = freedv(work, data, kind, snr, log)
    if cache:
        table[key] = list(result)
        with open(cache, "w") as f:
            json.dump(table, f, indent=1)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", help="comma-separated, e.g. awgn20,mpp5 (default: all eight)")
    ap.add_argument("--no-freedv", action="store_true")
    ap.add_argument("--csv")
    ap.add_argument("--freedv-cache", default=os.environ.get("FREEDV_CACHE", ".build/hf-freedv.json"),
                    help="FreeDV's figures are kept here and reused (default .build/hf-freedv.json)")
    ap.add_argument("--fresh-freedv", action="store_true", help="measure FreeDV again")
    a = ap.parse_args()
    points = POINTS
    if a.points:
        want = a.points.split(",")
        points = [p for p in POINTS if f"{p[0]}{p[1]}" in want]
    work = tempfile.mkdtemp(prefix="hf-bench-")
    data = os.path.join(work, "in.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(8192))
    rows = []
    print(f"{'point':<10} {'ours bit/s':>10} {'(--bitrate)':>11} {'FreeDV bit/s':>12} {'(mode)':>9} {'ratio':>6} {'target':>7}  met")
    for kind, snr in points:
        o, br = ours(work, data, kind, snr, sys.stderr)
        fv, mode = (0.0, None) if a.no_freedv else freedv_cached(a.freedv_cache, work, data, kind, snr, sys.stderr, a.fresh_freedv)
        target = max(2 * fv, TARGET.get((kind, snr), 0))
        ratio = o / fv if fv > 0 else float("inf")
        met = "yes" if o >= target and (fv > 0 or a.no_freedv) else "no"
        print(f"{kind + ' ' + str(snr) + ' dB':<10} {o:>10.0f} {str(br):>11} {fv:>12.0f} {str(mode):>9} {ratio:>6.2f} {target:>7.0f}  {met}", flush=True)
        rows.append((kind, snr, o, br, fv, mode, ratio))
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("channel,snr_db,ours_bps,ours_bitrate,freedv_bps,freedv_mode,ratio\n")
            for r in rows:
                f.write(",".join(str(x) for x in r) + "\n")


if __name__ == "__main__":
    main()
