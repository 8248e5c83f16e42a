"""Local stand-ins for remote storage, for bfeed's object-storage backend
tests: an S3 (s3rver behind a SigV4-checking proxy), a plain HTTP
server with Range (nginx; no TLS), a fault-injecting proxy, and boto3
uploads.

    with S3rver(tmp) as s3, SigV4Proxy(s3.endpoint, AK, SK) as sig, \\
            FaultProxy(sig.endpoint) as faults, Nginx(www) as web:
        upload(sig.endpoint, "bucket", {"a/x.bin": path}, AK, SK)
        # point bfeed at faults.endpoint (signed with AK/SK, us-east-1,
        # path-style) or at web.base_url; faults.reset_next(2) ...

Every piece binds 127.0.0.1 only, on a free port, and stops what it
started on stop() or `with` exit, also when starting fails. Nothing is
needed beyond Debian's python3-boto3, nginx and node/npm (s3rver is
installed once with npm into a cache folder, see S3rver).

What s3rver 3.7.1 does (checked against its source and by requests)
-------------------------------------------------------------------
* ListObjectsV2 (list-type=2): prefix, delimiter (CommonPrefixes),
  max-keys (capped at 1000), start-after, continuation-token. The token
  is DES-encrypted, which Node's OpenSSL 3 refuses unless node runs with
  --openssl-legacy-provider (S3rver passes it; without it every
  *truncated* listing is a 500 InternalError); it only decodes for region
  us-east-1. Tokens hold '/', '+', '=': a client must percent-encode
  them. <ETag> values are quoted (&quot;md5&quot; in the XML),
  <LastModified> is present
  (2026-01-02T03:04:05.000Z, millisecond ISO 8601), <Size>,
  <StorageClass>STANDARD; KeyCount, IsTruncated, NextContinuationToken
  are there. encoding-type=url is ignored (keys come back raw: use keys
  of [A-Za-z0-9._/-] so both readings agree). The xmlns is
  "http://doc.s3.amazonaws.com/2006-03-01/", not real S3's: parse
  without depending on the namespace.
* HEAD/GET: ETag is '"<md5 hex>"' (quoted, strong; also for multipart
  uploads, where real S3 has '"<hash>-<parts>"'; upload() does single
  PUTs), Content-Length, Last-Modified (HTTP date, whole
  seconds), Accept-Ranges: bytes, Content-Type as uploaded. HEAD of a
  missing key: 404 without body; GET: 404 NoSuchKey XML.
* Range: 'bytes=a-b' and 'bytes=a-' give 206 with
  'Content-Range: bytes a-b/size'; past the end: 416 InvalidRange (XML,
  but no Content-Range header). Wrong: 'bytes=0-0' returns the whole
  object (206, Content-Range bytes 0-(size-1)/size), 'bytes=-N' (suffix)
  returns bytes 0..N, multiple ranges are mis-parsed.
* Conditionals: If-None-Match (exact string compare, quotes included) and
  If-Modified-Since give 304. If-Match and If-Unmodified-Since are NOT
  implemented (ignored: 200).
* Authentication: V4 signatures are not verified at all (V2 ones are),
  requests without Authorization are served anonymously.

What SigV4Proxy adds (remote_proxies.py, sigv4_verify.py)
---------------------------------------------------------
* Every request must carry a header-based SigV4 signature that botocore's
  S3 signer, fed the request's own X-Amz-Date (never the clock), agrees
  with. Canonical URI and query are rebuilt from the decoded path and
  parameters, as S3 does: the client must sign the query sorted by name
  and RFC 3986-encoded ('/' -> %2F, '+' -> %2B, space -> %20) and the
  path with each segment encoded. Refusals: 403 SignatureDoesNotMatch
  (bad signature, or a missing/garbled Authorization, a wrong scope
  region/service, a missing signed header), 403 InvalidAccessKeyId,
  403 AccessDenied (no valid X-Amz-Date), 403 RequestTimeTooSkewed
  (over 15 minutes off), and, as real S3: 400 InvalidRequest when
  x-amz-content-sha256 is missing (require_content_sha256=False drops
  that), 400 XAmzContentSHA256Mismatch when it is a hash other than the
  body's. The header's value (UNSIGNED-PAYLOAD or the hex SHA-256) is
  what goes in the canonical request, as botocore does when present.
  Error bodies are S3's XML; SignatureDoesNotMatch carries the
  CanonicalRequest and StringToSign computed here, to diff against the
  client's. (Real S3 answers an anonymous request with AccessDenied and a
  wrong region with 400 AuthorizationHeaderMalformed; all are 403 here.)
* Object reads: If-Match (412 PreconditionFailed, GET and HEAD, ETag
  compared, quotes optional, with the object's from a HEAD upstream),
  single ranges resolved as S3 does (suffix, 0-0, open end; 416 with
  Content-Range: bytes */size; any range of an empty object is 416; a
  malformed or multi-range header is ignored: 200 whole object). Tests
  can rely on these through the proxy, not on s3rver directly.

Signing with libcurl 7.88 (checked with Debian's curl CLI, same library)
-----------------------------------------------------------------------
* --aws-sigv4 / CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3" adds X-Amz-Date and
  Authorization ("Credential=..., SignedHeaders=..., Signature=...") and
  signs host, x-amz-date and every header set with -H / CURLOPT_HTTPHEADER
  (lowercased: range, if-match, x-amz-content-sha256, ...), not
  User-Agent or Accept. A Range set with -r / CURLOPT_RANGE is not signed
  (fine for S3).
* It sends NO x-amz-content-sha256 of its own, which real S3 requires:
  add "x-amz-content-sha256: e3b0c442...b855" (SHA-256 of nothing) or
  "UNSIGNED-PAYLOAD" to the headers; curl then signs that value as the
  payload hash, and both are accepted here.
* It signs the path and the query exactly as given: not sorted, not
  re-encoded. So build URLs with the query parameters in sorted order and
  strictly percent-encoded, or S3 (and this proxy) answers 403.

What nginx (Debian's 1.22) does for static files
------------------------------------------------
* Range: single ranges including suffix and open-ended ones (206,
  Content-Range), several ranges (multipart/byteranges), 416 with
  'Content-Range: bytes */size' past the end; a Range on an empty file
  is ignored (200, no body).
* ETag: on by default and set explicitly: '"<mtime hex>-<size hex>"'
  (strong). If-Match: honoured (412 with an HTML body when it differs,
  '*' matches), also If-None-Match / If-Modified-Since / If-Range.
"""
import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

try:  # as part of a package, or with this folder on sys.path
    from .remote_proxies import FaultProxy, Managed, SigV4Proxy
    from .sigv4_verify import SigV4Error, verify_sigv4
except ImportError:
    from remote_proxies import FaultProxy, Managed, SigV4Proxy
    from sigv4_verify import SigV4Error, verify_sigv4

__all__ = ["S3rver", "Nginx", "SigV4Proxy", "FaultProxy", "SigV4Error", "verify_sigv4",
           "upload", "s3_client", "s3_stack", "ensure_s3rver", "npm_cache", "free_port",
           "S3RVER_VERSION"]

S3RVER_VERSION = "3.7.1"
NGINX = "/usr/sbin/nginx"


def free_port():
    """A port free on 127.0.0.1 now (for servers that cannot take port 0
    and report it; callers retry if it is taken before they bind it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, proc, timeout=30.0):
    """Wait until `url` answers any HTTP status; fail early if `proc` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return True
        except urllib.error.HTTPError:
            return True  # an error status is an answer
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("%s did not answer within %.0f s" % (url, timeout))


def stop_process(proc, grace=5.0):
    """SIGTERM, then SIGKILL after `grace` seconds; always reaps it."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _log_tail(path, n=2000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


class _Service(Managed):
    """The child-process servers: spawned on a free port, stopped with
    their temp dir (`with` from Managed)."""

    def _spawn(self, argv, name, ready_path):
        """Start argv on a free port (argv is a function of the port), up to
        three times if the port was taken meanwhile; log in the temp dir."""
        self._tmp = self._tmp or tempfile.mkdtemp(prefix="bfeed-%s-" % name)
        self.log_path = os.path.join(self._tmp, name + ".log")
        for _ in range(3):
            self.port = free_port()
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(argv(self.port), stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True)
            if wait_http("http://127.0.0.1:%d%s" % (self.port, ready_path), self.proc):
                return self
            stop_process(self.proc)
        raise RuntimeError("%s did not start:\n%s" % (name, _log_tail(self.log_path)))

    def stop(self):
        stop_process(getattr(self, "proc", None))
        self.proc = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


# --------------------------------------------------------------------------
# s3rver
# --------------------------------------------------------------------------

def npm_cache():
    """Where s3rver is installed: $BFEED_TEST_CACHE, else ~/.cache/bfeed-tests/npm."""
    return os.environ.get("BFEED_TEST_CACHE") or \
        os.path.join(os.path.expanduser("~"), ".cache", "bfeed-tests", "npm")


def ensure_s3rver(cache=None):
    """Install s3rver@S3RVER_VERSION into `cache` unless it is there (under
    a lock: parallel tests install it once); return its bin script."""
    cache = cache or npm_cache()
    os.makedirs(cache, exist_ok=True)
    pkg_dir = os.path.join(cache, "node_modules", "s3rver")

    def installed():
        try:
            with open(os.path.join(pkg_dir, "package.json")) as f:
                return json.load(f).get("version") == S3RVER_VERSION
        except (OSError, ValueError):
            return False

    with open(os.path.join(cache, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed():
            r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", cache,
                                "s3rver@" + S3RVER_VERSION],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               env=dict(os.environ, npm_config_update_notifier="false"))
            if r.returncode != 0 or not installed():
                raise RuntimeError("npm install s3rver@%s failed:\n%s%s"
                                   % (S3RVER_VERSION, r.stdout[-2000:], r.stderr[-2000:]))
    with open(os.path.join(pkg_dir, "package.json")) as f:
        bin_field = json.load(f)["bin"]
    script = bin_field if isinstance(bin_field, str) else bin_field["s3rver"]
    return os.path.join(pkg_dir, script)  # node_modules/s3rver/bin/s3rver.js


def _node_flags():
    """--openssl-legacy-provider where node knows it (OpenSSL 3 builds):
    s3rver's continuation tokens use DES."""
    r = subprocess.run(["node", "--openssl-legacy-provider", "-e", "0"],
                       capture_output=True)
    return ["--openssl-legacy-provider"] if r.returncode == 0 else []


class S3rver(_Service):
    """s3rver (S3 emulator, Node) storing its buckets under root_dir (in its
    own layout: put objects with upload(), not by copying files there).
    It checks no V4 signature: put SigV4Proxy in front of it."""

    def __init__(self, root_dir):
        self.root_dir = os.path.abspath(root_dir)
        self.proc = self._tmp = None
        self.port = None

    def start(self):
        script = ensure_s3rver()
        os.makedirs(self.root_dir, exist_ok=True)
        flags = _node_flags()
        return self._spawn(lambda port: ["node", *flags, script,
                                         "--address", "127.0.0.1", "--port", str(port),
                                         "--directory", self.root_dir, "--silent",
                                         "--no-vhost-buckets"],
                           "s3rver", "/")

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port


# --------------------------------------------------------------------------
# nginx
# --------------------------------------------------------------------------

_NGINX_CONF = """\
# One process in the foreground (killed by its parent): no master, no
# daemon, no 'user' directive (as root it then serves as root; as another
# user there is nothing to switch), every path inside the temp dir.
daemon off;
master_process off;
worker_processes 1;
pid "{tmp}/nginx.pid";
lock_file "{tmp}/nginx.lock";
error_log "{tmp}/error.log" warn;
events {{ worker_connections 512; }}
http {{
    # one line a request: connection number (shows keep-alive), status,
    # body bytes sent, request line, Range asked for
    log_format bfeed '$connection $status $body_bytes_sent "$request" "$http_range"';
    access_log "{tmp}/access.log" bfeed;
    client_body_temp_path "{tmp}/body";
    proxy_temp_path "{tmp}/proxy";
    fastcgi_temp_path "{tmp}/fastcgi";
    uwsgi_temp_path "{tmp}/uwsgi";
    scgi_temp_path "{tmp}/scgi";
    default_type application/octet-stream;
    sendfile on;
    etag on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        root "{root}";
        location / {{ }}
        location = /__bfeed_ready {{ access_log off; return 204; }}
    }}
}}
"""


def _nginx_quotable(path):
    """The path, if it can sit between double quotes in nginx.conf."""
    if '"' in path or "\\" in path or "$" in path:
        raise ValueError("nginx root with a quote, backslash or $: %r" % path)
    return path


class Nginx(_Service):
    """nginx serving root_dir's files over plain HTTP (Range, ETag and
    If-Match come with its static file handling)."""

    def __init__(self, root_dir):
        self.root_dir = os.path.abspath(root_dir)
        self.proc = self._tmp = None
        self.port = None

    def _argv(self, port):
        conf = os.path.join(self._tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(_NGINX_CONF.format(tmp=self._tmp, port=port, root=_nginx_quotable(self.root_dir)))
        return [NGINX, "-p", self._tmp, "-c", conf, "-e", os.path.join(self._tmp, "error.log")]

    def start(self):
        self._tmp = tempfile.mkdtemp(prefix="bfeed-nginx-")
        return self._spawn(self._argv, "nginx", "/__bfeed_ready")

    @property
    def base_url(self):
        return "http://127.0.0.1:%d" % self.port

    def error_log(self):
        """nginx's error log so far (for failure messages)."""
        return _log_tail(os.path.join(self._tmp, "error.log")) if self._tmp else ""

    def access_log(self):
        """The requests nginx served so far, one line each:
        'CONNECTION STATUS BYTES "REQUEST LINE" "RANGE"'."""
        try:
            with open(os.path.join(self._tmp, "access.log")) as f:
                return f.read().splitlines()
        except (OSError, TypeError):
            return []


# --------------------------------------------------------------------------
# boto3
# --------------------------------------------------------------------------

def s3_client(endpoint, access_key, secret_key, region="us-east-1", **config):
    """A boto3 S3 client for a local endpoint: SigV4, path-style
    addressing (bucket in the path, as bfeed is pointed at 127.0.0.1).
    `config`: more botocore Config options. Call .close() when done."""
    import boto3
    from botocore.config import Config
    cfg = Config(signature_version="s3v4", s3={"addressing_style": "path"}, **config)
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=region, aws_access_key_id=access_key,
        aws_secret_access_key=secret_key, config=cfg)


def upload(endpoint, bucket, files, access_key, secret_key, region="us-east-1"):
    """Put local files as objects ({key: local path}), creating the bucket
    if needed; return {key: ETag as S3 sends it, quoted}."""
    from botocore.exceptions import ClientError
    with contextlib.closing(s3_client(endpoint, access_key, secret_key, region)) as client:
        try:
            client.head_bucket(Bucket=bucket)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
                raise
            client.create_bucket(Bucket=bucket)
        etags = {}
        for key, path in files.items():
            with open(path, "rb") as f:
                etags[key] = client.put_object(Bucket=bucket, Key=key, Body=f)["ETag"]
    return etags


@contextlib.contextmanager
def s3_stack(root_dir, access_key, secret_key, region="us-east-1", match="data"):
    """s3rver + SigV4Proxy + FaultProxy, started in order and stopped in
    reverse; yields (s3rver, sigv4_proxy, fault_proxy). Clients use
    fault_proxy.endpoint; uploads may go to sigv4_proxy.endpoint."""
    with S3rver(root_dir) as s3, \
            SigV4Proxy(s3.endpoint, access_key, secret_key, region) as sig, \
            FaultProxy(sig.endpoint, match=match) as faults:
        yield s3, sig, faults
