"""TFRecord and tar shards in a bucket and on a web server, through the real
daemon: every batch byte-identical to the same shards on local disk.

The servers are independent implementations, started here on loopback:
s3rver (an S3 server from the npm registry) behind a proxy that checks
every request's AWS Signature V4 with botocore's own signer (s3rver checks
none), the shards uploaded with boto3; nginx serving the same files with
Range; and a proxy in front of both that injects faults
(tests/integration/remote/). What is checked:
- s3://, gs:// (the S3 XML API with HMAC keys) and http:// with braces, for
  TFRecord and tar, train and eval: the batches equal the local shards'.
- Keys: from the environment, from a credentials_file with a profile; a
  wrong secret is refused by the verifier and the dataset's error says so
  (and never holds the secret, nor does the log, stats or /metrics); a
  missing bucket, an empty listing, a missing braced name: clear errors.
- Faults: 503s, connections reset mid-body, bodies cut short, a stall past
  remote_timeout: the same bytes; a server that fails for good: the batch
  fails naming the URL, and serves again once the server is back.
- A shard replaced in the bucket while served: the stream fails naming
  it, the dataset is reloaded, and serves the new shard's samples.
- A shard deleted from the bucket while served: the stream fails naming
  it, the dataset reloads with the shards left.
- A web server with weak ETags (a little server of the test's own): the
  same bytes, no If-Match sent (it compares strongly: every read would
  be refused).
- cache_dir: a restarted daemon reads its blocks and indexes from the
  folder (no GET of a shard), and the folder stays under cache_max_bytes.
- Three daemons on one bucket behind one stream (--connect A,B,C), sharing
  one cache_dir, one killed with SIGKILL mid-epoch: the stream's batches
  are those of one daemon on local disk, each once.

usage: remote_fetch_oracle.py BFEEDD BFEED SHARD_WRITER_DIR FIXTURE_DIR [IMAGENET_DIR]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "remote"))
sys.path.insert(0, HERE)
import shards_fetch_oracle as sfo  # noqa: E402  (its shard writers; argv[3] on the path)
from oracle_util import Daemon, check, failures, wait_for  # noqa: E402
from remote_env import Nginx, s3_stack, upload  # noqa: E402

AK, SK = "AKIDBFEEDTEST", "bfeed/test+secret/KEY"
WRONG_SK = "not-the-secret-at-all"
BUCKET = "data"
BATCH, SIZE = 4, 32


def fetch(bfeed, addr, ds, out, index, mode="train", extra=()):
    """Batch `index` of ds as {tensor: bytes}, or (None, stderr)."""
    r = subprocess.run([bfeed, "fetch", "--connect", addr, "--dataset", ds, "--out", out, "--batch", str(BATCH),
                        "--size", str(SIZE), "--mode", mode, "--batch-index", str(index), "--seed", "3"] + list(extra),
                       capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        return None, r.stderr
    return {n: open(os.path.join(out, n + ".npy"), "rb").read() for n in ("image", "label", "index")
            if os.path.exists(os.path.join(out, n + ".npy"))}, r.stderr


def write_conf(path, sections, daemon=None):
    with open(path, "w") as f:
        if daemon:
            f.write("[bfeedd]\n" + "".join("%s = %s\n" % kv for kv in daemon.items()))
        for name, keys in sections.items():
            f.write("[dataset %s]\n" % name + "".join("%s = %s\n" % kv for kv in keys.items()))
    return path


def start(bfeedd, tmp, name, datasets, sections, env, daemon=None, workers=2):
    """bfeedd in tmp/name with these datasets and config sections, env set."""
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    # A --dataset flag replaces its section: those with keys go in the file.
    sections = {k: dict(v) for k, v in sections.items()}
    flags = []
    for spec in datasets:
        ds, rest = spec.split("=", 1)
        kind, path = rest.split(":", 1)
        if ds in sections:
            sections[ds].update(kind=kind, path=path)
        else:
            flags.append(spec)
    datasets = flags
    conf = write_conf(os.path.join(d, "bfeedd.conf"), sections, daemon)
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return Daemon(bfeedd, d, datasets, workers=workers, extra=["--config", conf])
    finally:
        os.environ.clear()
        os.environ.update(old)


def ready(bfeed, dmn, ds):
    """Wait for ds to be indexed (the log says so; an OPEN answers BUSY
    meanwhile), or to fail."""
    wait_for(lambda: re.search(r"dataset %s: (\d+ samples in|.*left out)" % re.escape(ds), dmn.log()), 60,
             "dataset %s indexed" % ds, step=0.1)


def base_env(endpoint):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_ENDPOINT_URL=endpoint, AWS_REGION="us-east-1",
               HOME=os.environ.get("HOME", "/root"))
    return env


def compare(bfeed, tmp, dmn, pairs, nbatches, modes=("train", "eval"), what=""):
    """Each (local, remote) pair's batches equal, byte for byte."""
    for local, remote in pairs:
        for mode in modes:
            for k in range(nbatches):
                a, ea = fetch(bfeed, dmn.addr, local, os.path.join(tmp, "f", local, mode, str(k)), k, mode)
                b, eb = fetch(bfeed, dmn.addr, remote, os.path.join(tmp, "f", remote, mode, str(k)), k, mode)
                check(a is not None, "%s batch %d (%s) fetched: %s" % (local, k, mode, ea))
                check(b is not None, "%s batch %d (%s) fetched%s: %s" % (remote, k, mode, what, eb))
                if a is not None and b is not None:
                    check(a == b, "%s batch %d (%s) equals %s's byte for byte%s" % (remote, k, mode, local, what))


def metrics(port):
    return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------


def test_identity(bfeedd, bfeed, tmp, shards, faults, web, nbatches):
    """s3://, gs:// and http:// against local disk; keys from the
    environment and from a credentials file; no secret anywhere."""
    creds = os.path.join(tmp, "aws-credentials")
    with open(creds, "w") as f:
        f.write("[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n"
                "[bfeed]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                "[wrong]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (AK, SK, AK, WRONG_SK))
    mport = free_port()
    sections = {
        "gs_tar": {"endpoint": faults.endpoint, "region": "us-east-1", "credentials_file": creds, "profile": "bfeed"},
        "bad_key": {"credentials_file": creds, "profile": "wrong"},
    }
    ntf = len([f for f in os.listdir(os.path.join(shards, "tfrecord")) if f.startswith("train-")])
    ntar = len([f for f in os.listdir(os.path.join(shards, "tar")) if f.endswith(".tar")])
    datasets = [
        "local_tf=tfrecord:%s/tfrecord/train-*" % shards,
        "s3_tf=tfrecord:s3://%s/tfrecord/train-*" % BUCKET,
        "local_tar=tar:%s/tar/shard-*.tar" % shards,
        "s3_tar=tar:s3://%s/tar/shard-*.tar" % BUCKET,
        "gs_tar=tar:gs://%s/tar/shard-*.tar" % BUCKET,
        "web_tar=tar:%s/tar/shard-{000..%03d}.tar" % (web.base_url, ntar - 1),
        "web_tf=tfrecord:%s/tfrecord/train-{00000..%05d}-of-%05d" % (web.base_url, ntf - 1, ntf),
        "bad_key=tar:s3://%s/tar/shard-*.tar" % BUCKET,
        "no_bucket=tar:s3://nobucket/tar/shard-*.tar",
        "empty=tar:s3://%s/nothing/shard-*.tar" % BUCKET,
        "web_missing=tar:%s/tar/shard-{000..%03d}.tar" % (web.base_url, ntar),
    ]
    env = base_env(faults.endpoint)
    dmn = start(bfeedd, tmp, "identity", datasets, sections, env, {"metrics_listen": "127.0.0.1:%d" % mport})
    try:
        for ds in ("local_tf", "s3_tf", "local_tar", "s3_tar", "gs_tar", "web_tar", "web_tf"):
            ready(bfeed, dmn, ds)
        compare(bfeed, tmp, dmn, [("local_tf", "s3_tf"), ("local_tar", "s3_tar"), ("local_tar", "gs_tar"),
                                  ("local_tar", "web_tar"), ("local_tf", "web_tf")], nbatches)
        log = dmn.log()
        for ds, want in (("bad_key", "SignatureDoesNotMatch"), ("no_bucket", "NoSuchBucket"),
                         ("empty", "matches no file"), ("web_missing", "no such file (named by the braces")):
            got, err = fetch(bfeed, dmn.addr, ds, os.path.join(tmp, "f", ds), 0)
            check(got is None and want in err, "dataset %s is refused with '%s': %s" % (ds, want, err.strip()))
            check(want in log, "the log says why %s is left out (%s)" % (ds, want))
        check("keys: profile [bfeed] of %s" % creds in log, "the log says where gs_tar's keys came from")
        check("keys: AWS_ACCESS_KEY_ID" in log, "the log says s3_tf's keys came from the environment")
        stats = subprocess.run([bfeed, "stats", "--connect", dmn.addr, "--json"], capture_output=True, text=True).stdout
        rep = json.loads(stats)
        remote = rep.get("remote", {})
        check(remote.get("requests", 0) > 0 and remote.get("bytes_fetched", 0) > 0,
              "bfeed stats has the remote requests and bytes (%s)" % remote)
        check(remote.get("cache_hits", 0) > 0, "blocks were read from the cache (%s)" % remote)
        m = metrics(mport)
        check("bfeed_remote_requests_total" in m and "bfeed_remote_cache_hits_total" in m,
              "/metrics has the remote counters")
        for where, text in (("the log", log), ("bfeed stats", stats), ("/metrics", m)):
            check(SK not in text and WRONG_SK not in text and "bfeed/test" not in text,
                  "no secret key in %s" % where)
    finally:
        check(dmn.stop() is None, "the daemon stops")


def test_faults(bfeedd, bfeed, tmp, shards, faults, nbatches):
    """Faults of the moment leave the bytes as they are; one that lasts
    fails the batch naming the URL."""
    env = base_env(faults.endpoint)
    daemon = {"remote_timeout": "2", "remote_retries": "4", "cache_max_bytes": "16M"}
    ds = ["local_tar=tar:%s/tar/shard-*.tar" % shards, "s3_tar=tar:s3://%s/tar/shard-*.tar" % BUCKET]
    # The shard indexes are kept (the first daemon builds them, under the
    # first faults); the blocks are not: each daemon's batches fetch them.
    sections = {"s3_tar": {"cache_dir": os.path.join(tmp, "fault-indexes")}}
    os.makedirs(sections["s3_tar"]["cache_dir"], exist_ok=True)
    for kind, arm in (("503", lambda: faults.fail_next(3, status=503)),
                      ("reset mid-body", lambda: faults.reset_next(2)),
                      ("truncated body", lambda: faults.truncate_next(2)),
                      ("stall past the timeout", lambda: faults.stall_next(1, seconds=6.0))):
        faults.clear()
        before = sum(faults.delivered.values())
        arm()
        # A fresh daemon: its cache is empty, so indexing and batches fetch.
        dmn = start(bfeedd, tmp, "faults-" + kind.split()[0], ds, sections, env, daemon)
        try:
            ready(bfeed, dmn, "s3_tar")
            compare(bfeed, tmp, dmn, [("local_tar", "s3_tar")], nbatches, modes=("train",), what=" after " + kind)
            check(sum(faults.delivered.values()) > before, "the proxy delivered the %s faults (%s)" %
                  (kind, dict(faults.delivered)))
            dealt = sum(faults.delivered.values()) - before
            rep = json.loads(subprocess.run([bfeed, "stats", "--connect", dmn.addr, "--json"], capture_output=True,
                                            text=True).stdout)
            check(rep["remote"].get("retries", 0) >= dealt,
                  "bfeed stats counts a retry per fault (%d faults, %s)" % (dealt, rep["remote"]))
        finally:
            faults.clear()
            check(dmn.stop() is None, "the daemon stops after the %s faults" % kind)
    # For good: every data GET fails while the batch is built.
    dmn = start(bfeedd, tmp, "faults-down", ds, sections, env, dict(daemon, remote_retries="1"))
    try:
        ready(bfeed, dmn, "s3_tar")
        subprocess.run([bfeed, "stats", "--connect", dmn.addr], capture_output=True)
        faults.clear()
        faults.fail_next(100000, status=503)
        got, err = fetch(bfeed, dmn.addr, "s3_tar", os.path.join(tmp, "f", "down"), nbatches - 1)
        faults.clear()
        check(got is None and "s3://%s/tar/shard-" % BUCKET in err and "503" in err,
              "a batch whose shard cannot be read fails naming the URL: %s" % err.strip())
        a, _ = fetch(bfeed, dmn.addr, "local_tar", os.path.join(tmp, "f", "down-l"), nbatches - 1)
        b, eb = fetch(bfeed, dmn.addr, "s3_tar", os.path.join(tmp, "f", "down-r"), nbatches - 1)
        check(b is not None and a == b, "with the server back, the same batch is served, the same bytes: %s" % eb)
    finally:
        faults.clear()
        check(dmn.stop() is None, "the daemon stops after the lasting failure")


def test_changed(bfeedd, bfeed, tmp, shards, sig, faults, nbatches):
    """A shard replaced in the bucket while served: caught, reloaded."""
    env = base_env(faults.endpoint)
    key = "changed/shard-000.tar"
    src = sorted(f for f in os.listdir(os.path.join(shards, "tar")) if f.endswith(".tar"))
    upload(sig.endpoint, BUCKET, {key: os.path.join(shards, "tar", src[0])}, AK, SK)
    dmn = start(bfeedd, tmp, "changed", ["c=tar:s3://%s/changed/shard-*.tar" % BUCKET], {}, env)
    try:
        ready(bfeed, dmn, "c")
        a, err = fetch(bfeed, dmn.addr, "c", os.path.join(tmp, "f", "c0"), 0)
        check(a is not None, "the shard serves before it changes: %s" % err)
        upload(sig.endpoint, BUCKET, {key: os.path.join(shards, "tar", src[-1])}, AK, SK)
        # What the daemon knows of an object stands 10 s, then is asked again.
        time.sleep(11)
        b, err = fetch(bfeed, dmn.addr, "c", os.path.join(tmp, "f", "c1"), 0)
        check(b is None and "s3://%s/%s" % (BUCKET, key) in err and "changed" in err,
              "a stream on the replaced shard fails naming it: %s" % err.strip())
        wait_for(lambda: "reloaded after its files changed" in dmn.log(), 30, "the dataset reloaded")
        ready(bfeed, dmn, "c")
        c, err = fetch(bfeed, dmn.addr, "c", os.path.join(tmp, "f", "c2"), 0, mode="eval")
        d, _ = fetch(bfeed, dmn.addr, "c", os.path.join(tmp, "f", "c3"), 0, mode="eval")
        check(c is not None and c == d, "after the reload it serves the new shard: %s" % err)
    finally:
        check(dmn.stop() is None, "the daemon stops")


def test_deleted(bfeedd, bfeed, tmp, shards, sig, faults):
    """A shard deleted from the bucket while served, its blocks not yet
    fetched: the stream fails naming it, and the dataset reloads with the
    shards that are left (never skipping its samples one by one)."""
    from remote_env import s3_client
    env = base_env(faults.endpoint)
    src = sorted(f for f in os.listdir(os.path.join(shards, "tar")) if f.endswith(".tar"))
    upload(sig.endpoint, BUCKET, {"gone/%s" % f: os.path.join(shards, "tar", f) for f in src}, AK, SK)
    idx = os.path.join(tmp, "gone-indexes")
    os.makedirs(idx, exist_ok=True)
    sections = {"g": {"cache_dir": idx}}
    spec = ["g=tar:s3://%s/gone/shard-*.tar" % BUCKET]
    first = start(bfeedd, tmp, "gone-index", spec, sections, env)  # builds the indexes
    ready(bfeed, first, "g")
    check(first.stop() is None, "the indexing daemon stops")
    dmn = start(bfeedd, tmp, "gone", spec, sections, env)  # indexes reused: no block read yet
    try:
        ready(bfeed, dmn, "g")
        c = s3_client(sig.endpoint, AK, SK)
        for f in src[1:]:
            c.delete_object(Bucket=BUCKET, Key="gone/" + f)
        c.close()
        errs = []
        for k in range(4):
            got, err = fetch(bfeed, dmn.addr, "g", os.path.join(tmp, "f", "g%d" % k), k)
            errs.append(err)
            if got is None:
                break
        check(got is None and "gone since the dataset was loaded" in err and "s3://%s/gone/shard-" % BUCKET in err,
              "a stream over a deleted shard fails naming it: %s" % err.strip())
        check("skipping" not in dmn.log(), "no sample of the deleted shard is skipped as a bad one")
        wait_for(lambda: "reloaded after its files changed" in dmn.log(), 30, "the dataset reloaded")
        ready(bfeed, dmn, "g")
        got, err = fetch(bfeed, dmn.addr, "g", os.path.join(tmp, "f", "g-after"), 0, mode="eval")
        check(got is not None, "after the reload it serves the shard that is left: %s" % err)
    finally:
        check(dmn.stop() is None, "the daemon stops")


def data_gets(faults):
    """GETs of object bytes the proxy has seen (listings left out)."""
    return sum(1 for h in faults.history if h[0] == "GET" and "list-type" not in h[1])


def test_cache_dir(bfeedd, bfeed, tmp, shards, faults, nbatches):
    """Blocks and indexes kept in cache_dir serve a restarted daemon; a
    damaged block file is dropped and fetched again."""
    env = base_env(faults.endpoint)
    cache = os.path.join(tmp, "cache")
    blocks_dir = os.path.join(cache, "remote")
    daemon = {"cache_dir": cache, "cache_max_bytes": "16M"}
    ds = ["local_tf=tfrecord:%s/tfrecord/train-*" % shards, "s3_tf=tfrecord:s3://%s/tfrecord/train-*" % BUCKET]
    for run in ("cold", "warm", "damaged", "warm again"):
        if run == "damaged":
            for f in os.listdir(blocks_dir):
                with open(os.path.join(blocks_dir, f), "r+b") as b:
                    b.seek(os.path.getsize(b.name) // 2)
                    x = b.read(1)
                    b.seek(-1, 1)
                    b.write(bytes([x[0] ^ 0x40]))
        before = data_gets(faults)
        dmn = start(bfeedd, tmp, "cache-" + run.replace(" ", "-"), ds, {}, env, daemon)
        try:
            ready(bfeed, dmn, "s3_tf")
            compare(bfeed, tmp, dmn, [("local_tf", "s3_tf")], nbatches, modes=("train",), what=" (%s cache)" % run)
            fetched = data_gets(faults) - before
            if run.startswith("warm"):
                check("reused from" in dmn.log(), "the %s daemon reuses the shard indexes from cache_dir" % run)
                check(fetched == 0, "the %s daemon fetched no shard bytes (%d GETs)" % (run, fetched))
            else:
                check(fetched > 0, "the %s daemon fetched the shards (%d GETs)" % (run, fetched))
        finally:
            check(dmn.stop() is None, "the daemon stops (%s)" % run)
    blocks = [f for f in os.listdir(blocks_dir) if f.endswith(".blk")]
    total = sum(os.path.getsize(os.path.join(blocks_dir, f)) for f in blocks)
    check(blocks and total <= 16 << 20, "the cache folder holds %d blocks, %d bytes, under 16M" % (len(blocks), total))


class WeakServer:
    """A plain HTTP server of its own kind: ranged GETs and HEADs of a
    folder's files with a weak ETag (W/"..."), as servers that compress or
    generate content send, and no Last-Modified. If-Match compares strongly,
    so a reader that sent it would be refused every read (412)."""

    def __init__(self, root):
        import http.server
        import threading
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.do_GET(body=False)

            def do_GET(self, body=True):
                path = os.path.join(root, self.path.lstrip("/"))
                if not os.path.isfile(path):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                if self.headers.get("If-Match"):
                    # RFC 9110: If-Match compares strongly; a weak ETag
                    # never matches.
                    outer.if_match += 1
                    self.send_response(412)
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                data = open(path, "rb").read()
                start, end, status = 0, len(data) - 1, 200
                rng = self.headers.get("Range", "")
                if rng.startswith("bytes="):
                    a, b = rng[6:].split("-")
                    start, end, status = int(a), min(int(b), len(data) - 1), 206
                self.send_response(status)
                self.send_header("ETag", 'W/"%x-%x"' % (len(data), int(os.path.getmtime(path))))
                self.send_header("Content-Length", str(end - start + 1))
                if status == 206:
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data[start:end + 1])

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # bfeedd's read-ahead connects many at once

        self.if_match = 0
        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.base_url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_weak_etag(bfeedd, bfeed, tmp, shards, faults, nbatches):
    """A server with weak ETags serves the same bytes (no If-Match sent)."""
    ntar = len([f for f in os.listdir(os.path.join(shards, "tar")) if f.endswith(".tar")])
    with WeakServer(shards) as weak:
        ds = ["local_tar=tar:%s/tar/shard-*.tar" % shards,
              "weak_tar=tar:%s/tar/shard-{000..%03d}.tar" % (weak.base_url, ntar - 1)]
        dmn = start(bfeedd, tmp, "weak", ds, {}, base_env(faults.endpoint))
        try:
            ready(bfeed, dmn, "weak_tar")
            compare(bfeed, tmp, dmn, [("local_tar", "weak_tar")], nbatches, what=" (weak ETags)")
            check(weak.if_match == 0, "no If-Match is sent with a weak ETag (%d sent)" % weak.if_match)
        finally:
            check(dmn.stop() is None, "the daemon stops")


def test_fanout(bfeedd, bfeed, tmp, shards, faults):
    """Three daemons on one bucket behind one stream; one killed."""
    env = base_env(faults.endpoint)
    stream_hash = os.path.join(os.path.dirname(bfeed), "stream_hash")
    ref = start(bfeedd, tmp, "fan-ref", ["d=tar:%s/tar/shard-*.tar" % shards], {}, env)
    # The three share one cache folder, as daemons on one host would.
    shared = {"cache_dir": os.path.join(tmp, "fan-cache")}
    members = [start(bfeedd, tmp, "fan-%d" % k, ["d=tar:s3://%s/tar/shard-*.tar" % BUCKET], {}, env, shared)
               for k in range(3)]
    try:
        for d in [ref] + members:
            ready(bfeed, d, "d")

        def hashes(addr, n, kill=None):
            p = subprocess.Popen([stream_hash, addr, "d", "--batch", str(BATCH), "--size", str(SIZE), "--window", "2",
                                  "--seed", "5", "--first", str(n // 2)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            lines = [p.stdout.readline().strip() for _ in range(n // 2 + 1)][1:]
            if kill:
                kill.proc.send_signal(signal.SIGKILL)
                kill.proc.wait()
            p.stdin.write("next %d\nquit\n" % (n - n // 2))
            p.stdin.flush()
            lines += [p.stdout.readline().strip() for _ in range(n - n // 2)]
            p.wait(60)
            return lines

        n = 3 * 2 * 2  # batches across two epochs at least
        want = hashes(ref.addr, n)
        got = hashes(",".join(m.addr for m in members), n, kill=members[1])
        check(len(want) == n and all(w and not w.startswith("error") for w in want), "the reference stream ran")
        check(got == want, "the fan-out stream over three bucket daemons, one killed, equals one local daemon's "
                           "batches, each once (%d of %d equal)" % (sum(a == b for a, b in zip(got, want)), n))
    finally:
        ref.stop()
        for m in members:
            m.kill()


def main():
    bfeedd, bfeed, _, fixtures = sys.argv[1:5]
    imagenet = sys.argv[5] if len(sys.argv) > 5 else None
    tmp = tempfile.mkdtemp(prefix="bfeed-remote-")
    try:
        samples = sfo.build_folder(os.path.join(tmp, "folder"), fixtures, imagenet)
        shards = os.path.join(tmp, "shards")
        sfo.write_tfrecords(os.path.join(shards, "tfrecord"), samples, 3)
        sfo.write_tars(os.path.join(shards, "tar"), samples, 3)
        nbatches = min(4, len(samples) // BATCH)
        files = {}
        for sub in ("tfrecord", "tar"):
            for f in sorted(os.listdir(os.path.join(shards, sub))):
                files["%s/%s" % (sub, f)] = os.path.join(shards, sub, f)
        with s3_stack(os.path.join(tmp, "s3"), AK, SK) as (s3, sig, faults), Nginx(shards) as web:
            upload(sig.endpoint, BUCKET, files, AK, SK)
            tests = {
                "identity": lambda: test_identity(bfeedd, bfeed, tmp, shards, faults, web, nbatches),
                "faults": lambda: test_faults(bfeedd, bfeed, tmp, shards, faults, nbatches),
                "cache": lambda: test_cache_dir(bfeedd, bfeed, tmp, shards, faults, nbatches),
                "changed": lambda: test_changed(bfeedd, bfeed, tmp, shards, sig, faults, nbatches),
                "deleted": lambda: test_deleted(bfeedd, bfeed, tmp, shards, sig, faults),
                "weak": lambda: test_weak_etag(bfeedd, bfeed, tmp, shards, faults, nbatches),
                "fanout": lambda: test_fanout(bfeedd, bfeed, tmp, shards, faults),
            }
            # BFEED_REMOTE_ONLY=a,b runs those alone (BFEED_KEEP_TMP=1 keeps the logs).
            for name in os.environ.get("BFEED_REMOTE_ONLY", ",".join(tests)).split(","):
                tests[name]()
    finally:
        if os.environ.get("BFEED_KEEP_TMP"):
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
