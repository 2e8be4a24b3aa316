#!/usr/bin/env python3
"""Throughput over simulated lines: SwiftModem's OFDM and FSK against amodem, in one run.

  bench-rate.py lines      the sound-card cable and speaker-like lines, 256 KiB each, the best
                           byte-exact rate of each modem (effective: payload bits over seconds of audio)
  bench-rate.py sweep      rate against SNR on the cable line's band and drift (16 KiB per point)
  bench-rate.py thresholds the lowest SNR at which each OFDM configuration carries 16 KiB byte-exact

Needs MODEM (the modem binary), AMODEM (amodem's executable, for lines and sweep) and sox. Every
impairment is `modem impair` at 48 kHz; amodem's 32 kHz audio is resampled to 48 kHz and back around
it by sox, as a 48 kHz sound card would. Results go to standard output (Markdown) and, with
--csv FILE, to a CSV file (series,snr,bitrate) for the plot.
"""
import argparse, os, subprocess, sys, tempfile, time, wave

MODEM = os.environ.get("MODEM", ".build-tests/release/modem")
AMODEM = os.environ.get("AMODEM")

LINES = {
    # The sound-card cable: SNR 40 dB over the full band, 100 ppm, 20-20,000 Hz, gain 0.7.
    "cable": ["--snr", "40", "--drift", "100", "--band", "20-20000", "--gain", "-3.1"],
    # A speaker and a microphone: SNR 24 dB, 250-9000 Hz, a 1.5 ms echo at half amplitude, 300 ppm.
    "speaker": ["--snr", "24", "--band", "250-9000", "--echo", "1.5:0.5", "--drift", "300"],
}
OFDM_LADDER = [320000, 240000, 200000, 160000, 120000, 96000, 64000, 48000, 32000, 24000, 16000, 8000, 4000]
FSK_LADDER = [12000, 9600, 4800, 2400, 1200]  # (slower ones take minutes of audio per try)
AMODEM_LADDER = [80, 72, 64, 48, 36, 24, 16, 12, 8, 4, 2, 1]


def run(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def seconds_of(path):
    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


def impair(src, dst, line_args, seed):
    r = run([MODEM, "impair", src, dst, "--format", "s16", "--seed", str(seed)] + line_args)
    if r.returncode != 0:
        sys.exit("modem impair failed: " + r.stderr.decode())


class Work:
    def __init__(self, size, seed):
        self.dir = tempfile.mkdtemp(prefix="bench-rate.")
        self.payload = os.path.join(self.dir, "in.bin")
        with open(self.payload, "wb") as f:
            f.write(os.urandom(size))
        self.size = size
        self.seed = seed

    def p(self, name):
        return os.path.join(self.dir, name)

    def same(self, path):
        with open(path, "rb") as a, open(self.payload, "rb") as b:
            return a.read() == b.read()

    def ofdm(self, bitrate, line_args):
        if run([MODEM, "tx", "-q", "--profile", "ofdm", "--bitrate", str(bitrate), "--out", self.p("o.wav"), self.payload]).returncode != 0:
            return None
        impair(self.p("o.wav"), self.p("oi.wav"), line_args, self.seed)
        start = time.time()
        with open(self.p("o.out"), "wb") as out:
            subprocess.run([MODEM, "rx", "-q", "--profile", "ofdm", self.p("oi.wav")], stdout=out, stderr=subprocess.DEVNULL)
        elapsed = time.time() - start
        if not self.same(self.p("o.out")):
            return None
        secs = seconds_of(self.p("o.wav"))
        return self.size * 8 / secs, secs / elapsed

    def fsk(self, baud, line_args):
        if run([MODEM, "tx", "-q", "--baud", str(baud), "--out", self.p("f.wav"), self.payload]).returncode != 0:
            return None
        impair(self.p("f.wav"), self.p("fi.wav"), line_args, self.seed)
        # A hang guard: on an echoing line the FSK receiver was seen to take 20 CPU minutes for 218 s of audio.
        try:
            with open(self.p("f.out"), "wb") as out:
                subprocess.run([MODEM, "rx", "-q", "--baud", str(baud), self.p("fi.wav")], stdout=out, stderr=subprocess.DEVNULL,
                               timeout=max(120, 2 * seconds_of(self.p("f.wav"))))
        except subprocess.TimeoutExpired:
            return None
        if not self.same(self.p("f.out")):
            return None
        return self.size * 8 / seconds_of(self.p("f.wav")), 0

    def amodem(self, kbps, line_args):
        env = dict(os.environ, BITRATE=str(kbps))
        if run([AMODEM, "send", "-q", "-i", self.payload, "-o", self.p("a.raw")], env=env, timeout=600).returncode != 0:
            return None
        samples = os.path.getsize(self.p("a.raw")) // 2
        run(["sox", "-q", "-t", "raw", "-r", "32000", "-e", "signed", "-b", "16", "-c", "1", self.p("a.raw"), "-r", "48000", self.p("a48.wav"), "rate", "-v"])
        impair(self.p("a48.wav"), self.p("a48i.wav"), line_args, self.seed)
        run(["sox", "-q", self.p("a48i.wav"), "-r", "32000", "-t", "raw", "-e", "signed", "-b", "16", "-c", "1", self.p("ai.raw"), "rate", "-v"])
        start = time.time()
        try:
            run([AMODEM, "recv", "-q", "-i", self.p("ai.raw"), "-o", self.p("a.out")], env=env, timeout=900)
        except subprocess.TimeoutExpired:
            return None
        elapsed = time.time() - start
        if not os.path.exists(self.p("a.out")) or not self.same(self.p("a.out")):
            return None
        return self.size * 8 * 32000 / samples, (samples / 32000) / elapsed


def best(try_one, ladder, line_args):
    """The first (fastest) rung of the ladder that comes back byte-exact: (rung, effective bit/s, rx speed)."""
    for rung in ladder:
        got = try_one(rung, line_args)
        if got:
            return rung, got[0], got[1]
    return None, 0, 0


def lines(args):
    w = Work(args.size, args.seed)
    print(f"| line | ours OFDM | rx speed | amodem 1.16 | ours / amodem | ours FSK |")
    print(f"|---|---|---|---|---|---|")
    for name, line_args in LINES.items():
        o = best(w.ofdm, OFDM_LADDER, line_args)
        a = best(w.amodem, AMODEM_LADDER, line_args) if AMODEM else (None, 0, 0)
        f = best(w.fsk, FSK_LADDER[:4], line_args)
        ratio = f"{o[1] / a[1]:.2f}x" if a[1] > 0 else ("nothing through amodem" if AMODEM else "not run")
        am = f"{a[1]:,.0f} bit/s (BITRATE={a[0]})" if a[1] > 0 else ("nothing at any rate" if AMODEM else "not run")
        print(f"| {name} | {o[1]:,.0f} bit/s (--bitrate {o[0]}) | {o[2]:.0f}x real time | {am} | {ratio} | {f[1]:,.0f} bit/s (--baud {f[0]}) |", flush=True)


def sweep(args):
    w = Work(args.size, args.seed)
    csv = open(args.csv, "w") if args.csv else None
    if csv:
        csv.write("series,snr,bitrate\n")
    band = ["--drift", "100", "--band", "20-20000", "--gain", "-3.1"]
    print("| SNR dB | ours OFDM | ours FSK | amodem |")
    print("|---|---|---|---|")
    for snr in args.snrs:
        line_args = ["--snr", str(snr)] + band
        o = best(w.ofdm, OFDM_LADDER, line_args)
        f = best(w.fsk, FSK_LADDER, line_args)
        a = best(w.amodem, AMODEM_LADDER, line_args) if AMODEM else (None, 0, 0)
        print(f"| {snr} | {o[1]:,.0f} | {f[1]:,.0f} | {a[1]:,.0f} |", flush=True)
        if csv:
            for series, v in (("ours OFDM", o[1]), ("ours FSK", f[1]), ("amodem", a[1])):
                csv.write(f"{series},{snr},{v:.0f}\n")
            csv.flush()


def thresholds(args):
    w = Work(args.size, args.seed)
    profiles = []
    for line in run([MODEM, "tx", "--help"]).stdout.decode().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1] == "bit/s" and parts[0].isdigit():
            profiles.append((int(parts[0]), " ".join(parts[2:6])))
    print("| configuration | net bit/s | lowest SNR byte-exact (dB, flat line) |")
    print("|---|---|---|")
    for rate, name in profiles:
        # Down in 4 dB steps to the first failure, then up 1 dB at a time to the first success.
        lowest, snr = None, args.top
        while snr >= args.bottom and w.ofdm(rate, ["--snr", str(snr)]) is not None:
            lowest, snr = snr, snr - 4
        if lowest is not None:
            for s in range(snr + 1, lowest):
                if w.ofdm(rate, ["--snr", str(s)]) is not None:
                    lowest = s
                    break
        print(f"| {name} | {rate:,} | {lowest if lowest is not None else f'> {args.top}'} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["lines", "sweep", "thresholds"])
    ap.add_argument("--size", type=int, default=None, help="payload bytes (lines: 262144; others: 16384)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--csv")
    ap.add_argument("--snrs", type=int, nargs="+", default=[0, 5, 10, 15, 20, 25, 30, 35, 40])
    ap.add_argument("--top", type=int, default=44)
    ap.add_argument("--bottom", type=int, default=-6)
    args = ap.parse_args()
    if args.size is None:
        args.size = 262144 if args.what == "lines" else 16384
    {"lines": lines, "sweep": sweep, "thresholds": thresholds}[args.what](args)


if __name__ == "__main__":
    main()
