#!/usr/bin/env python3
"""The OFDM modem in real rooms: a loudspeaker and a microphone in shoebox rooms simulated by the
image-source method (pyroomacoustics), the best byte-exact effective rate per room.

  room.py rates     for each room (RT60 0.2/0.4/0.6 s at 0.5/1/3 m), the fastest OFDM configuration
                    (`modem tx --profile ofdm --bitrate B`, B each net rate `modem tx --help` lists,
                    fastest first) that `modem rx --profile ofdm` gives back byte-exact, as
                    effective bit/s (payload bits over the seconds of the whole transmission)
  room.py ir        the rooms' impulse responses: measured RT60, the share of the energy that
                    arrives later than a prefix of each length after the direct path (what prefix
                    a grid would need), and the direct-to-reverberant ratio

Every room is seeded: its size, the speaker's and the microphone's places and the clock drift come
from --seed and the room's name. The chain: the transmission, a small speaker's band (4th-order
Butterworth band-pass, 200-10,000 Hz), the room's impulse response (48 kHz), the level brought to
a fixed RMS, then `modem impair --drift PPM --snr SNR` (the clock drift of the sender's sound card,
100-300 ppm, and the microphone's white noise at --snr dB over 0-24 kHz).

Needs MODEM (the modem binary; default .build-tests/release/modem) and the venv of
scripts/room-venv.sh (pyroomacoustics, numpy, scipy):

  python=$(bash scripts/room-venv.sh)
  MODEM=.build-tests/release/modem nice -n 10 "$python" Benchmarks/room.py rates --size 65536
"""
import argparse, os, subprocess, sys, tempfile, time, wave, zlib

import numpy as np
import pyroomacoustics as pra
from scipy import signal

MODEM = os.environ.get("MODEM", ".build-tests/release/modem")
FS = 48000
RT60S = [0.2, 0.4, 0.6]
DISTANCES = [0.5, 1.0, 3.0]
# Prefix lengths (samples at 48 kHz) the impulse responses are weighed against.
PREFIXES = [256, 512, 1024, 2048, 4096, 8192]


def room_ir(rt60, distance, seed):
    """The impulse response (48 kHz) of a seeded shoebox room with reverberation time `rt60` s, the
    microphone `distance` m from the speaker; and a description."""
    rng = np.random.default_rng([seed, int(rt60 * 1000), int(distance * 1000)])
    # An ordinary room: 4-7 m by 3-5.5 m, 2.5-3 m high.
    dim = np.array([rng.uniform(4, 7), rng.uniform(3, 5.5), rng.uniform(2.5, 3.0)])
    e_abs, max_order = pra.inverse_sabine(rt60, dim)
    # The image sources up to the order Sabine asks (capped for time); the rest of the tail is
    # what the images up to there give, measured below.
    room = pra.ShoeBox(dim, fs=FS, materials=pra.Material(e_abs), max_order=min(max_order, 40), air_absorption=True)
    # The speaker on a shelf height somewhere in the room, the microphone `distance` away at a
    # random bearing, both at least 0.4 m from any wall.
    for _ in range(1000):
        src = np.array([rng.uniform(0.4, dim[0] - 0.4), rng.uniform(0.4, dim[1] - 0.4), rng.uniform(0.8, 1.5)])
        az, el = rng.uniform(0, 2 * np.pi), rng.uniform(-0.3, 0.3)
        mic = src + distance * np.array([np.cos(az) * np.cos(el), np.sin(az) * np.cos(el), np.sin(el)])
        if np.all(mic > 0.4) and np.all(mic < dim - 0.4):
            break
    else:
        sys.exit(f"no place for {distance} m in {dim}")
    room.add_source(src.tolist())
    room.add_microphone(mic.tolist())
    room.compute_rir()
    ir = np.asarray(room.rir[0][0], dtype=np.float64)
    desc = f"{dim[0]:.1f}x{dim[1]:.1f}x{dim[2]:.1f} m"
    return ir, desc


def ir_figures(ir):
    """Measured RT60 (s), direct-to-reverberant ratio (dB, ±2.5 ms around the direct path), and the
    share of the energy later than each prefix after the direct path (dB)."""
    direct = int(np.argmax(np.abs(ir)))
    e = ir.astype(np.float64) ** 2
    total = e.sum()
    win = int(0.0025 * FS)
    d = e[max(0, direct - win):direct + win].sum()
    drr = 10 * np.log10(d / max(total - d, 1e-30))
    late = {p: 10 * np.log10(max(e[direct + p:].sum(), 1e-30) / total) for p in PREFIXES}
    try:
        rt = pra.experimental.measure_rt60(ir, fs=FS, decay_db=30)
    except Exception:
        rt = float("nan")
    return rt, drr, late, direct


def speaker_band(x):
    sos = signal.butter(4, [200, 10000], btype="bandpass", fs=FS, output="sos")
    return signal.sosfilt(sos, x)


def read_wav(path):
    with wave.open(path) as w:
        assert w.getframerate() == FS and w.getnchannels() == 1
        raw = w.readframes(w.getnframes())
        width = w.getsampwidth()
    if width == 2:
        return np.frombuffer(raw, dtype="<i2").astype(np.float64) / 32768
    if width == 4:
        return np.frombuffer(raw, dtype="<i4").astype(np.float64) / 2147483648
    sys.exit(f"{path}: {width}-byte samples")


def write_wav(path, x):
    y = np.clip(np.round(x * 32767), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(FS)
        w.writeframes(y.tobytes())


def run(args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


class Room:
    def __init__(self, rt60, distance, seed, snr):
        self.rt60, self.distance, self.snr = rt60, distance, snr
        self.name = f"RT60 {rt60:.1f} s, {distance:g} m"
        self.seed = zlib.crc32(self.name.encode()) ^ seed
        self.ir, self.desc = room_ir(rt60, distance, seed)
        rng = np.random.default_rng([seed, int(rt60 * 1000), int(distance * 1000), 1])
        self.drift = int(rng.uniform(100, 300)) * (1 if rng.uniform() < 0.5 else -1)

    def through(self, src, dst, tmp):
        x = read_wav(src)
        # The room's tail after the transmission's end: the recording goes on 0.7 s longer.
        x = np.concatenate([speaker_band(x), np.zeros(int(0.7 * FS))])
        y = signal.oaconvolve(x, self.ir)[: len(x)]
        # A microphone's gain: the transmission's level as sent (its RMS a fifth of 0.7 full scale).
        y *= 0.14 / max(1e-12, np.sqrt(np.mean(y[: len(x) - int(0.7 * FS)] ** 2)))
        write_wav(tmp, y)
        r = run([MODEM, "impair", tmp, dst, "--format", "s16", "--seed", str(self.seed & 0x7FFFFFFF),
                 "--drift", str(self.drift), "--snr", str(self.snr)])
        if r.returncode != 0:
            sys.exit("modem impair failed: " + r.stderr.decode())


class Work:
    def __init__(self, size, seed):
        self.dir = tempfile.mkdtemp(prefix="bench-room.")
        rng = np.random.default_rng(seed)
        self.payload = os.path.join(self.dir, "in.bin")
        with open(self.payload, "wb") as f:
            f.write(rng.bytes(size))
        self.size = size
        self.tx = {}

    def p(self, name):
        return os.path.join(self.dir, name)

    def transmission(self, bitrate):
        """The transmission's file and its configuration (from `modem tx`'s report), made once."""
        if bitrate not in self.tx:
            out = self.p(f"tx-{bitrate}.wav")
            r = run([MODEM, "tx", "--profile", "ofdm", "--bitrate", str(bitrate), "--out", out, self.payload])
            if r.returncode != 0:
                self.tx[bitrate] = None
            else:
                line = r.stderr.decode().strip().splitlines()[-1]
                name = line.split(" as OFDM ")[1].split(" (")[0] if " as OFDM " in line else "?"
                self.tx[bitrate] = (out, name)
        return self.tx[bitrate]

    def attempt(self, room, bitrate):
        """(effective bit/s, configuration, rx speed) when byte-exact, else (None, configuration, None)."""
        t = self.transmission(bitrate)
        if t is None:
            return None, "?", None
        path, name = t
        room.through(path, self.p("rx.wav"), self.p("room.wav"))
        start = time.time()
        with open(self.p("rx.bin"), "wb") as out:
            subprocess.run([MODEM, "rx", "-q", "--profile", "ofdm", self.p("rx.wav")], stdout=out, stderr=subprocess.DEVNULL)
        elapsed = time.time() - start
        with open(self.p("rx.bin"), "rb") as a, open(self.payload, "rb") as b:
            ok = a.read() == b.read()
        with wave.open(path) as w:
            secs = w.getnframes() / w.getframerate()
        if not ok:
            return None, name, None
        return self.size * 8 / secs, name, secs / elapsed


def configurations(top, grid=None):
    """Every OFDM configuration `modem tx --help` lists at or below `top` bit/s (of `grid` alone when
    given: air, cable or room), fastest first: (net bit/s, name); `--bitrate` with its net rate picks
    it (a grid alone: when no other grid's configuration lies between it and the rung)."""
    out = []
    for line in run([MODEM, "tx", "--help"]).stdout.decode().splitlines():
        parts = line.split()
        if len(parts) > 6 and parts[1] == "bit/s" and parts[3] == "rate" and parts[0].isdigit() and int(parts[0]) <= top:
            if grid is None or parts[5] == grid:
                out.append((int(parts[0]), " ".join(parts[2:6])))
    return sorted(out, reverse=True)


def rooms(args):
    for rt60 in args.rt60:
        for distance in args.distance:
            yield Room(rt60, distance, args.seed, args.snr)


def ir_cmd(args):
    heads = " | ".join(f"> {p / FS * 1000:.1f} ms" for p in PREFIXES)
    print(f"| room | size | measured RT60 | direct/reverberant | energy later than the direct path + {heads} |")
    print("|---|---|---|---|" + "---|" * len(PREFIXES))
    for room in rooms(args):
        rt, drr, late, _ = ir_figures(room.ir)
        cells = " | ".join(f"{late[p]:.1f} dB" for p in PREFIXES)
        print(f"| {room.name} | {room.desc} | {rt:.2f} s | {drr:.1f} dB | {cells} |", flush=True)


def rates_cmd(args):
    w = Work(args.size, args.seed)
    print(f"| room | size, drift | best byte-exact | configuration | rx speed | failed above |")
    print("|---|---|---|---|---|---|")
    ladder = [b for b, _ in configurations(args.top, args.grid)]
    for room in rooms(args):
        got, failed = None, []
        for b in ladder:
            rate, name, speed = w.attempt(room, b)
            if rate is not None:
                got = (b, rate, name, speed)
                break
            failed.append(f"{b} ({name})")
            if args.verbose:
                print(f"  {room.name}: --bitrate {b} ({name}) lost", file=sys.stderr, flush=True)
        if got:
            b, rate, name, speed = got
            print(f"| {room.name} | {room.desc}, {room.drift:+d} ppm | {rate:,.0f} bit/s (`--bitrate {b}`) | {name} | {speed:.0f}x real time | {', '.join(failed[:3]) or '-'} |", flush=True)
        else:
            print(f"| {room.name} | {room.desc}, {room.drift:+d} ppm | nothing | | | all |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["rates", "ir"])
    ap.add_argument("--size", type=int, default=65536, help="payload bytes (default 65536)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--snr", type=float, default=30, help="microphone noise: dB over 0-24 kHz (default 30)")
    ap.add_argument("--rt60", type=float, nargs="+", default=RT60S)
    ap.add_argument("--distance", type=float, nargs="+", default=DISTANCES)
    ap.add_argument("--top", type=int, default=50000, help="the fastest configuration tried (net bit/s; default 50000)")
    ap.add_argument("--grid", choices=["air", "cable", "room"], help="only this grid's configurations")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    {"rates": rates_cmd, "ir": ir_cmd}[args.what](args)


if __name__ == "__main__":
    main()
