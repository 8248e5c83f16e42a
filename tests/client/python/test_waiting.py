"""A blocked next(): other threads run (the GIL is released) and Ctrl-C
interrupts it. The daemon is stopped with SIGSTOP, so the wait is real; a
shell command resumes it after 10 s in any case, so a failure cannot hang."""
import os
import signal
import subprocess
import threading
import time

import bfeed


def _safety(d):
    return subprocess.Popen(["sh", "-c", "sleep 10; kill -CONT %d" % d.proc.pid])


def test_gil_released_while_waiting(own_daemon):
    d = own_daemon
    with bfeed.connect(d.addr) as c:
        s = c.stream("demo", batch=2, size=16, window=1)
        next(s)
        time.sleep(0.3)  # batch 1 is sent meanwhile; window 1 allows no more
        d.proc.send_signal(signal.SIGSTOP)
        safety = _safety(d)
        try:
            next(s)  # batch 1, at hand
            marks = {}

            def other():
                time.sleep(0.3)
                t0 = time.monotonic()
                n = 0
                while time.monotonic() - t0 < 0.1:  # Python code: needs the GIL
                    n += 1
                marks["ran"] = time.monotonic()
                marks["n"] = n
                for call in (lambda: next(s), s.close):  # one thread at a time per stream
                    try:
                        call()
                    except RuntimeError as e:
                        marks.setdefault("refused", []).append(str(e))
                d.proc.send_signal(signal.SIGCONT)

            th = threading.Thread(target=other)
            th.start()
            called = time.monotonic()
            b = next(s)  # blocks until the other thread resumes the daemon
            returned = time.monotonic()
            th.join()
        finally:
            d.proc.send_signal(signal.SIGCONT)
            safety.kill()
        assert b.torch("image").shape == (2, 3, 16, 16)
        assert "ran" in marks and called < marks["ran"] <= returned, (called, marks, returned)
        assert len(marks.get("refused", [])) == 2, marks  # next and stream close: refused
        assert returned - called < 5, "next() returned only when the safety resumed the daemon"


def test_close_from_another_thread_ends_a_blocked_wait(own_daemon):
    """Client.close() from another thread while next() waits: allowed (as
    bfeed_close is); the waiting next() raises at once, nothing freed is
    touched, and the stream and client read as closed."""
    d = own_daemon
    c = bfeed.connect(d.addr)
    s = c.stream("demo", batch=2, size=16, window=1)
    next(s)
    time.sleep(0.3)
    d.proc.send_signal(signal.SIGSTOP)
    safety = _safety(d)
    try:
        next(s)  # batch 1, at hand; batch 2 will not come
        threading.Timer(0.3, c.close).start()
        t0 = time.monotonic()
        try:
            next(s)
            raised = None
        except ValueError as e:
            raised = str(e)
        waited = time.monotonic() - t0
    finally:
        d.proc.send_signal(signal.SIGCONT)
        safety.kill()
    assert raised and "closed" in raised, raised
    assert waited < 5, "next() returned only when the safety resumed the daemon"
    assert c.closed and "closed" in repr(s)
    s.close()  # already closed: nothing to do
    c.close()


def test_ctrl_c_interrupts_a_blocked_wait(own_daemon):
    d = own_daemon
    with bfeed.connect(d.addr) as c:
        s = c.stream("demo", batch=2, size=16, window=1, epochs=1)
        first = next(s).index
        time.sleep(0.3)
        d.proc.send_signal(signal.SIGSTOP)
        safety = _safety(d)
        try:
            got = [next(s).index]
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            t0 = time.monotonic()
            try:
                got.append(next(s).index)
                interrupted = False
            except KeyboardInterrupt:
                interrupted = True
            waited = time.monotonic() - t0
        finally:
            d.proc.send_signal(signal.SIGCONT)
            safety.kill()
        assert interrupted and waited < 5
        # The stream goes on where it was: nothing lost, nothing repeated.
        got.append(next(s).index)
        assert [first] + got == [0, 1, 2]
