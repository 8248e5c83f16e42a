"""What the benchmark scripts share: the machine's state printed beside
the figures, and a bfeedd of their own on a Unix socket."""
import os
import subprocess
import tempfile
import time


def quiet_report():
    """The load average and the busiest processes: a figure counts only
    when nothing else ran."""
    print("load average: %s" % open("/proc/loadavg").read().strip())
    top = subprocess.run(["ps", "-eo", "pcpu,pid,comm", "--sort=-pcpu"], capture_output=True, text=True).stdout
    print("busiest processes:\n" + "\n".join(top.splitlines()[:6]), flush=True)


def start_daemon(binp, dataset_dir, workers, prefix):
    """bfeedd serving dataset_dir as "imagenet" with `workers` workers:
    (process, address); its log in a temporary folder."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    addr = "unix:" + os.path.join(tmp, "d.sock")
    log = open(os.path.join(tmp, "bfeedd.log"), "wb")
    d = subprocess.Popen([os.path.join(binp, "bfeedd"), "--listen", addr, "--workers", str(workers),
                          "--dataset", "imagenet=" + dataset_dir], stdout=log, stderr=log)
    time.sleep(1.0)
    return d, addr
