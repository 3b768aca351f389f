"""Stop 40 (h42d): can a reader that comes late to a TCP socket learn when the OLDEST unread segment arrived?

A sender process writes CHUNKS small SSE-like chunks GAP_MS apart on a loopback TCP connection and records
CLOCK_REALTIME around each send() (on loopback the receive stamp is taken inside the sender's send()). The
reader asks for the trial, sleeps LATE ms, and then tries one method to get the first chunk's arrival:

  newest    recvmsg(65536) with SO_TIMESTAMPNS: the stamp the runner uses today
  peek1     recvmsg(1, MSG_PEEK) with SO_TIMESTAMPNS, then a normal read
  first     recvmsg(len(first chunk)) with SO_TIMESTAMPNS: reading only up to the first chunk
  tsing     recvmsg(1, MSG_PEEK) with SO_TIMESTAMPING (RX_SOFTWARE|SOFTWARE), the software stamp
  siocg     ioctl(SIOCGSTAMPNS) after the normal read
  probe     benchpack.measurement.latestamp.first_unread_stamp through the end of the first event (3 peeks)
            plus the peek that finds that end: the stamp and whether it is exact

Every method's error = stamp - (sender's clock reading after the first chunk's send() returned); the send()
bracket width is printed too. `--per-chunk` reads each chunk by its exact length and prints every chunk's stamp,
which shows whether queued segments were merged into one buffer (one stamp for all).

Usage: uv run python bench/late_stamp.py --trials 200 --late 1,10,50 [--nagle] [--per-chunk]
"""

from __future__ import annotations

import argparse
import fcntl
import multiprocessing
import os
import socket
import statistics
import struct
import time

from benchpack.measurement.latestamp import first_unread_stamp

SO_TIMESTAMPNS = 35
SO_TIMESTAMPING = 37
SOF_RX_SOFTWARE = 1 << 3
SOF_SOFTWARE = 1 << 4
SIOCGSTAMPNS = 0x8907
TIMESPEC = struct.Struct("@ll")
ANC = 256
QUICKACK = False


def sender(port: int, chunks: int, gap_s: float, nodelay: bool, pipe) -> None:
    conn = socket.create_connection(("127.0.0.1", port))
    if nodelay:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    payloads = [b"data: {\"choices\":[{\"delta\":{\"content\":\"tok%03d\"}}]}\n\n" % i for i in range(chunks)]
    while True:
        go = conn.recv(1)
        if not go or go == b"q":
            break
        times = []
        start = time.perf_counter()
        for i, payload in enumerate(payloads):
            while time.perf_counter() < start + i * gap_s:
                time.sleep(min(0.001, max(0.0, start + i * gap_s - time.perf_counter())))
            before = time.time_ns()
            conn.send(payload)
            times.append((before, time.time_ns()))
        pipe.send(times)
    conn.close()


def stamp_of(ancillary, kind=SO_TIMESTAMPNS):
    for level, k, payload in ancillary:
        if level == socket.SOL_SOCKET and k == kind and len(payload) >= TIMESPEC.size:
            s, ns = TIMESPEC.unpack_from(payload)
            return s * 1_000_000_000 + ns
    return None


def drain(sock, want: int) -> None:
    got = 0
    while got < want:
        got += len(sock.recv(65536))


def run(method: str, late_ms: float, trials: int, chunks: int, gap_ms: float, nodelay: bool, per_chunk: bool):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=sender, args=(listener.getsockname()[1], chunks, gap_ms / 1000, nodelay, child))
    proc.start()
    sock, _ = listener.accept()
    listener.close()
    if method == "tsing":
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, SOF_RX_SOFTWARE | SOF_SOFTWARE)
    else:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sizes = [len(b"data: {\"choices\":[{\"delta\":{\"content\":\"tok%03d\"}}]}\n\n" % i) for i in range(chunks)]
    total = sum(sizes)
    errors, costs, widths, rows, exact_flags = [], [], [], [], []
    for trial in range(trials + 3):  # three warm-up trials
        sock.send(b"g")
        if QUICKACK:
            # ACK every segment at once, so the sender frees its copy and the receive queue's tail can be merged
            deadline = time.perf_counter() + late_ms / 1000
            while time.perf_counter() < deadline:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
                time.sleep(0.0005)
        else:
            time.sleep(late_ms / 1000)
        queued = None
        if per_chunk:
            stamps = []
            for size in sizes:
                got = b""
                stamp = None
                while len(got) < size:
                    data, anc, _, _ = sock.recvmsg(size - len(got), ANC)
                    got += data
                    stamp = stamp if stamp is not None else stamp_of(anc)
                stamps.append(stamp)
            times = parent.recv()
            if trial >= 3:
                rows.append([(st - after) / 1000 for st, (_, after) in zip(stamps, times)])
            continue
        t0 = time.perf_counter_ns()
        if method == "newest":
            data, anc, _, _ = sock.recvmsg(65536, ANC)
            stamp = stamp_of(anc)
            consumed = len(data)
        elif method == "peek1":
            data, anc, _, _ = sock.recvmsg(1, ANC, socket.MSG_PEEK)
            stamp = stamp_of(anc)
            consumed = 0
        elif method == "first":
            data, anc, _, _ = sock.recvmsg(sizes[0], ANC)
            stamp = stamp_of(anc)
            consumed = len(data)
        elif method == "tsing":
            data, anc, _, _ = sock.recvmsg(1, ANC, socket.MSG_PEEK)
            stamp = stamp_of(anc, SO_TIMESTAMPING)
            consumed = 0
        elif method == "probe":
            peeked = sock.recv(65536, socket.MSG_PEEK)
            first_event_end = peeked.index(b"\n\n") + 2
            found = first_unread_stamp(sock, first_event_end)
            stamp = found.stamp_ns if found else None
            exact_flags.append(bool(found and found.exact))
            consumed = 0
        elif method == "siocg":
            data = sock.recv(65536)
            consumed = len(data)
            try:
                raw = fcntl.ioctl(sock.fileno(), SIOCGSTAMPNS, b"\0" * 16)
                s, ns = TIMESPEC.unpack(raw)
                stamp = s * 1_000_000_000 + ns
            except OSError as error:
                stamp = None
                queued = error.errno
        cost = time.perf_counter_ns() - t0
        drain(sock, total - consumed)
        times = parent.recv()
        if trial < 3:
            exact_flags.clear()
            continue
        costs.append(cost / 1000)
        before, after = times[0]
        widths.append((after - before) / 1000)
        errors.append(None if stamp is None else (stamp - after) / 1000)
    sock.send(b"q")
    proc.join()
    sock.close()
    return errors, costs, widths, rows, queued, exact_flags


def rcv_coalesce() -> int:
    lines = open("/proc/net/netstat").read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:])))["TCPRcvCoalesce"]
    return -1


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--late", default="1,10,50")
    parser.add_argument("--methods", default="newest,peek1,first,tsing,siocg,probe")
    parser.add_argument("--chunks", type=int, default=12)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--nagle", action="store_true", help="leave Nagle on at the sender (no TCP_NODELAY)")
    parser.add_argument("--per-chunk", action="store_true")
    parser.add_argument("--quickack", action="store_true", help="reader keeps TCP_QUICKACK on while it waits")
    args = parser.parse_args()
    global QUICKACK
    QUICKACK = args.quickack
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, kernel {os.uname().release}, "
          f"load {open('/proc/loadavg').read().split()[:3]}, chunks {args.chunks} x {args.gap_ms} ms, "
          f"sender {'Nagle on' if args.nagle else 'TCP_NODELAY'}, reader quickack {args.quickack}, "
          f"TCPRcvCoalesce (netns-wide) {rcv_coalesce()}")
    for late in [float(x) for x in args.late.split(",")]:
        if args.per_chunk:
            _, _, _, rows, _, _ = run("first", late, args.trials, args.chunks, args.gap_ms, not args.nagle, True)
            print(f"late {late:g} ms: per-chunk stamp - send (µs), median over {len(rows)} trials:")
            print("   " + " ".join(f"{statistics.median(col):8.0f}" for col in zip(*rows)))
            print(f"   TCPRcvCoalesce now {rcv_coalesce()}")
            continue
        for method in args.methods.split(","):
            errors, costs, widths, _, errno, exact_flags = run(method, late, args.trials, args.chunks, args.gap_ms,
                                                  not args.nagle, False)
            good = [e for e in errors if e is not None]
            if not good:
                print(f"late {late:4g} ms {method:7s}: no stamp (errno {errno})")
                continue
            within = sum(1 for e in good if abs(e) <= 100) / len(good)
            print(f"late {late:4g} ms {method:7s}: n={len(good)} err median {statistics.median(good):9.1f} µs "
                  f"p99 {pct(good, .99):9.1f} µs max {max(good):9.1f}  |err|<=100µs {within:6.1%}  "
                  f"call {statistics.median(costs):5.1f} µs  send bracket p99 {pct(widths, .99):5.1f} µs  coalesce {rcv_coalesce()}")
            if exact_flags:
                exact_errors = [e for e, flag in zip(errors, exact_flags) if flag and e is not None]
                inexact = [e for e, flag in zip(errors, exact_flags) if not flag and e is not None]
                print(f"      said exact {len(exact_errors)}/{len(exact_flags)}: err max {max(exact_errors, default=float('nan')):.1f} µs"
                      f" min {min(exact_errors, default=float('nan')):.1f} µs; said inexact: err min "
                      f"{min(inexact, default=float('nan')):.1f} µs median {statistics.median(inexact) if inexact else float('nan'):.1f} µs")


if __name__ == "__main__":
    main()
