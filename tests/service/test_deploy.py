#!/usr/bin/python3
"""deploy/ against the real binaries: the Kubernetes manifests (parsed with
PyYAML), the Slurm script and the container file must agree with what
bfeedd and bfeed-train accept, so that they do not rot as options change.

  * the ConfigMap's bfeedd.conf passes `bfeedd --check-config` (its dataset
    folders and token swapped for real ones);
  * the probes ask /readyz and /healthz on the port metrics_listen opens,
    the client port is the one `listen` opens, the data volume is mounted
    read-only, limits are set, the config is mounted where --config reads;
  * the Service is headless and selects the pods;
  * bfeedd run with that configuration answers the probes as documented:
    /healthz 200 "ok", /readyz 200 "ready", and 503 with a one-line reason
    while a dataset cannot serve (here a tar shard whose index fails);
  * the Slurm script is valid bash and every flag it gives bfeedd and
    bfeed-train is one their --help lists.

usage: test_deploy.py BUILD_DIR
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)) + "/..")
from oracle_util import check, failures  # noqa: E402

BUILD = sys.argv[1]
BIN = os.path.join(BUILD, "bin")
DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")
TMP = tempfile.mkdtemp(prefix="bfeed-deploy-")


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def conf_keys(text):
    keys = {}
    for line in text.splitlines():
        m = re.match(r"\s*([a-z_]+)\s*=\s*(\S+)", line)
        if m and not line.lstrip().startswith("#"):
            keys.setdefault(m.group(1), m.group(2))
    return keys


def port_of(addr):
    return int(addr.rsplit(":", 1)[1])


def test_kubernetes():
    docs = [d for d in yaml.safe_load_all(open(os.path.join(DEPLOY, "kubernetes", "bfeed.yaml"))) if d]
    by_kind = {d["kind"]: d for d in docs}
    check(set(by_kind) >= {"ConfigMap", "Deployment", "Service"}, f"a ConfigMap, Deployment and Service ({list(by_kind)})")
    conf = by_kind["ConfigMap"]["data"]["bfeedd.conf"]
    keys = conf_keys(conf)

    # The configuration itself, checked by the daemon on real folders.
    demo = os.path.join(TMP, "demo")
    r = run([os.path.join(BIN, "bfeed"), "make-demo", demo, "--train", "2", "--val", "1"])
    check(r.returncode == 0, "make-demo for the check")
    token = os.path.join(TMP, "token")
    with open(token, "w") as f:
        f.write("t0ken\n")
    local = conf.replace("/data/imagenet/", demo + "/").replace(keys["auth_token_file"], token)
    local = local.replace(keys["cache_dir"], os.path.join(TMP, "cache"))
    path = os.path.join(TMP, "bfeedd.conf")
    with open(path, "w") as f:
        f.write(local)
    r = run([os.path.join(BIN, "bfeedd"), "--check-config", path])
    check(r.returncode == 0, f"the ConfigMap's bfeedd.conf passes --check-config ({(r.stdout + r.stderr).strip()[-300:]!r})")
    test_probes_answer(local, keys)

    pod = by_kind["Deployment"]["spec"]["template"]
    c = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(ports.get("bfeed") == port_of(keys["listen"]), f"the client port is listen's ({ports}, {keys['listen']})")
    check(ports.get("metrics") == port_of(keys["metrics_listen"]),
          f"the metrics port is metrics_listen's ({ports}, {keys['metrics_listen']})")
    for probe, want in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        g = c.get(probe, {}).get("httpGet", {})
        check(g.get("path") == want and g.get("port") in ("metrics", ports.get("metrics")),
              f"{probe} asks {want} on the metrics port ({g})")
    lim = c.get("resources", {}).get("limits", {})
    check("cpu" in lim and "memory" in lim, f"CPU and memory limits are set ({lim})")
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    data = mounts.get("data", {})
    check(data.get("readOnly") is True and data.get("mountPath") == "/data",
          f"the data (the datasets' /data/...) is mounted read-only at /data ({data})")
    claim = vols.get("data", {}).get("persistentVolumeClaim", {})
    check(claim.get("readOnly") is True, f"and its claim is read-only ({claim})")
    args = c.get("args", [])
    conf_path = args[args.index("--config") + 1] if "--config" in args else None
    check(conf_path == mounts.get("conf", {}).get("mountPath"), f"--config reads the mounted ConfigMap ({args})")
    check(os.path.dirname(keys["auth_token_file"]) == mounts.get("token", {}).get("mountPath"),
          "the token file is in the mounted Secret")
    labels = pod["metadata"]["labels"]

    svc = by_kind["Service"]["spec"]
    check(svc.get("clusterIP") == "None", "the Service is headless (its name resolves to every pod)")
    check(all(labels.get(k) == v for k, v in svc["selector"].items()), "the Service selects the pods")
    check({p["targetPort"] for p in svc["ports"]} <= set(ports), "its ports are the pod's")


def http_get(url):
    """(status, body) of a GET, or (None, reason) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_daemon(conf, what):
    """Run bfeedd on conf (its metrics on a free local port, clients on a
    Unix socket) and call what(base_url) once /healthz answers."""
    port = free_port()
    conf = re.sub(r"(?m)^(\s*)listen\s*=.*$", r"\1listen = unix:" + os.path.join(TMP, "bfeedd.sock"), conf)
    conf = re.sub(r"(?m)^(\s*)metrics_listen\s*=.*$", r"\1metrics_listen = 127.0.0.1:%d" % port, conf)
    path = os.path.join(TMP, "probe.conf")
    with open(path, "w") as f:
        f.write(conf)
    log = open(os.path.join(TMP, "probe.log"), "w+")
    p = subprocess.Popen([os.path.join(BIN, "bfeedd"), "--config", path], stdout=log, stderr=subprocess.STDOUT)
    base = "http://127.0.0.1:%d" % port
    try:
        deadline = time.time() + 30
        while http_get(base + "/healthz")[0] is None and p.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        log.seek(0)
        check(http_get(base + "/healthz") == (200, "ok\n"), f"/healthz answers 200 ok ({log.read()[-500:]!r})")
        what(base)
    finally:
        p.terminate()
        p.wait(timeout=30)
        log.close()


def test_probes_answer(conf, keys):
    # The metrics port the probes ask is the one the daemon opens: the
    # ConfigMap's metrics_listen (checked against the pod's port above).
    def ready(base):
        # Image folders load before the daemon listens: ready at once.
        check(http_get(base + "/readyz") == (200, "ready\n"), "/readyz answers 200 ready with every dataset loaded")
        status, _ = http_get(base + "/nothing")
        check(status == 404, f"other paths are 404 ({status})")

    with_daemon(conf, ready)
    # A tar dataset whose only shard is not a tar: its index fails, and
    # /readyz says so, on one line, for as long as the daemon runs.
    os.makedirs(os.path.join(TMP, "broken"), exist_ok=True)
    with open(os.path.join(TMP, "broken", "a.tar"), "wb") as f:
        f.write(b"this is not a tar archive\n" * 40)
    broken = conf + "\n[dataset broken]\nkind = tar\npath = %s\n" % os.path.join(TMP, "broken", "*.tar")

    def not_ready(base):
        deadline = time.time() + 30
        status, body = http_get(base + "/readyz")
        while status == 503 and "being indexed" in body and time.time() < deadline:
            time.sleep(0.1)
            status, body = http_get(base + "/readyz")
        check(status == 503 and "broken" in body and body.endswith("\n") and body.count("\n") == 1,
              f"/readyz answers 503 and one line naming the dataset that cannot serve ({status}, {body!r})")

    with_daemon(broken, not_ready)


def help_flags(binary):
    r = run([binary, "--help"])
    return set(re.findall(r"--[a-z][a-z-]+", r.stdout + r.stderr))


def test_slurm():
    script = os.path.join(DEPLOY, "slurm", "bfeed-train.sbatch")
    r = run(["bash", "-n", script])
    check(r.returncode == 0, f"the Slurm script is valid bash ({r.stderr.strip()!r})")
    text = open(script).read()
    for binary, var in (("bfeedd", "BFEEDD"), ("bfeed-train", "TRAIN")):
        known = help_flags(os.path.join(BIN, binary))
        # the lines that run it: from "$VAR" to the end of its command
        m = re.search(r'"\$%s"(.*?)(?:&\n|\n\n|\Z)' % var, text, re.S)
        used = set(re.findall(r"(--[a-z][a-z-]+)", m.group(1))) if m else set()
        check(used and used <= known, f"{binary}'s flags in the script exist ({sorted(used - known) or sorted(used)})")


def test_container():
    text = open(os.path.join(DEPLOY, "container", "Containerfile")).read()
    check('ENTRYPOINT ["/usr/bin/bfeedd"]' in text, "the image runs the packaged /usr/bin/bfeedd")


if __name__ == "__main__":
    try:
        test_kubernetes()
        test_slurm()
        test_container()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
