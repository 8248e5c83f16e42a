"""HTTP proxies for the remote-storage tests: SigV4Proxy (checks each
request's AWS Signature V4 the way S3 does, then forwards it to s3rver,
which checks none) and FaultProxy (delays, fails, resets, truncates or
stalls chosen responses). Import them from remote_env, which documents
what s3rver and nginx do and what these proxies add. The signature
check itself is sigv4_verify.verify_sigv4.

Both bind 127.0.0.1 on a port the kernel picks, speak HTTP/1.1 with
keep-alive (Content-Length on every response), keep one upstream
connection per client connection, and stop everything they started in
stop() (also on `with` exit), including idle keep-alive connections.
"""
import http.client
import io
import re
import socket
import struct
import sys
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from urllib.parse import urlsplit

try:  # as part of a package, or with this folder on sys.path
    from .sigv4_verify import SigV4Error, s3_error_xml, verify_sigv4
except ImportError:
    from sigv4_verify import SigV4Error, s3_error_xml, verify_sigv4

# Per-connection headers a proxy must not pass on (RFC 9110 7.6.1), plus
# Expect: the proxy has already read the body, so upstream must not wait.
HOP_HEADERS = frozenset((
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate",
    "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade",
    "expect"))


# --------------------------------------------------------------------------
# Relay plumbing shared by both proxies
# --------------------------------------------------------------------------

class Managed:
    """`with` for anything with start() and stop(): a failed start is
    cleaned up by stop() before the error propagates."""

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


class _Server(ThreadingHTTPServer):
    """A threaded server that remembers its client sockets, so that stop()
    can end idle keep-alive connections instead of leaving threads behind."""
    daemon_threads = True
    # socketserver's backlog of 5 drops the SYNs of a client opening more
    # connections at once (bfeedd's read-ahead opens 8 and more), which
    # the kernel sends again a second later: a stall that is the proxy's.
    request_queue_size = 128

    def __init__(self, owner):
        self.owner = owner
        self._clients = set()
        self._clients_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self):
        # HTTPServer's version does a reverse DNS lookup we do not need.
        TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request, client_address):
        with self._clients_lock:
            self._clients.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._clients_lock:
            self._clients.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        # A client that hangs up or times out is routine here; anything
        # else is a bug worth a traceback.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    def close_clients(self):
        with self._clients_lock:
            clients = list(self._clients)
        for sock in clients:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    """One client connection. Reads each request, hands it to the owning
    proxy's serve(), and offers it the pieces to answer with: an upstream
    request on a kept connection, relaying, S3 errors, aborting."""
    protocol_version = "HTTP/1.1"
    server_version = "bfeed-test-proxy"
    timeout = 120  # an idle keep-alive client is dropped after this

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._up = None

    def finish(self):
        self.drop_upstream()
        super().finish()

    def log_message(self, fmt, *args):
        if self.server.owner.verbose:
            super().log_message(fmt, *args)

    def _dispatch(self):
        """Every method: read the body, count, let the proxy answer; turn
        upstream failures into 502 (or a cut connection once answering)."""
        owner = self.server.owner
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            return self.send_xml_error(411, "MissingContentLength",
                                       "chunked request bodies are not supported here")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner.count(self.command)
        try:
            owner.serve(self, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away
        except (OSError, http.client.HTTPException) as e:
            self.drop_upstream()
            if self._headers_sent:
                self.close_connection = True
            else:
                self.send_xml_error(502, "BadGateway", "upstream failed: %r" % e)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _dispatch

    def handle_one_request(self):
        self._headers_sent = False
        super().handle_one_request()

    def end_headers(self):
        self._headers_sent = True
        super().end_headers()

    def forward_headers(self, drop=()):
        """The client's headers minus hop-by-hop ones and those in `drop`."""
        drop = HOP_HEADERS | {d.lower() for d in drop}
        return [(k, v) for k, v in self.headers.items() if k.lower() not in drop]

    def upstream(self, method, target, headers, body=b"", keep_host=False):
        """Send a request upstream on this connection's kept upstream
        connection (reopened once if the upstream closed it meanwhile).
        keep_host: the Host header is among `headers` and is passed on."""
        owner = self.server.owner
        for attempt in (1, 2):
            if self._up is None:
                self._up = http.client.HTTPConnection(
                    owner.upstream_host, owner.upstream_port, timeout=owner.upstream_timeout)
            try:
                self._up.putrequest(method, target, skip_host=keep_host,
                                    skip_accept_encoding=True)
                for name, value in headers:
                    self._up.putheader(name, value)
                self._up.endheaders(body or None)
                return self._up.getresponse()
            except (ConnectionError, http.client.HTTPException):
                self.drop_upstream()
                if attempt == 2:
                    raise

    def drop_upstream(self):
        if self._up is not None:
            self._up.close()
            self._up = None

    def start_relay(self, resp, override=None):
        """Send upstream's status line and headers (with `override`'s
        replacing theirs); return (body length to send, read function)."""
        override = {k.lower(): (k, v) for k, v in (override or {}).items()}
        skip = HOP_HEADERS | {"date", "server"} | set(override)
        headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in skip]
        headers += override.values()
        reader = resp.read
        no_body = self.command == "HEAD" or resp.status in (204, 304) or resp.status < 200
        if not no_body and not any(k.lower() == "content-length" for k, _ in headers):
            data = resp.read()  # chunked upstream: buffer, so that we can keep alive
            reader = io.BytesIO(data).read
            headers.append(("Content-Length", str(len(data))))
        self.send_response(resp.status, resp.reason)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        length = 0 if no_body else int(dict((k.lower(), v) for k, v in headers)["content-length"])
        return length, reader

    def copy_body(self, reader, n):
        """Copy up to n body bytes to the client; return how many went."""
        sent = 0
        while sent < n:
            chunk = reader(min(65536, n - sent))
            if not chunk:
                break
            self.wfile.write(chunk)
            sent += len(chunk)
        return sent

    def finish_relay(self, resp, expected, sent):
        """Keep both connections usable when the body went out whole."""
        if sent < expected:
            self.close_connection = True  # the client cannot tell where it ends
        if resp.length:  # upstream bytes left unread: that connection is spent
            self.drop_upstream()
        else:
            resp.read()

    def relay(self, resp, override=None):
        """Pass an upstream response on, streaming its body."""
        length, reader = self.start_relay(resp, override)
        self.finish_relay(resp, length, self.copy_body(reader, length))

    def send_xml_error(self, status, code, message, extra=(), headers=()):
        """Answer with an S3-style XML error (no body for HEAD, as S3)."""
        body = b"" if self.command == "HEAD" else s3_error_xml(code, message, extra)
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def abort(self, reset):
        """End the client connection now: with a TCP RST (SO_LINGER 0) or
        with a clean FIN, whatever was promised in Content-Length."""
        self.close_connection = True
        self.drop_upstream()
        time.sleep(0.05)  # let what was sent reach the client before a RST
        try:
            if reset:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            else:
                self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.rfile.close()  # drop makefile()'s reference, or close() waits for it
        self.connection.close()


class _Relay(Managed):
    """Start/stop and counting shared by the proxies. `upstream` is an
    http://host:port endpoint; `requests` counts requests by method."""

    upstream_timeout = 60

    def __init__(self, upstream, verbose=False):
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError("upstream must be http://host:port, not %r" % upstream)
        self.upstream_host, self.upstream_port = parts.hostname, parts.port or 80
        self.verbose = verbose
        self.requests = Counter()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = self._thread = None

    def start(self):
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.1}, daemon=True,
                                        name=type(self).__name__)
        self._thread.start()
        return self

    def stop(self):
        """Stop serving and end all client connections (and their upstream ones)."""
        self._stopping.set()  # wakes stalled responses and latency waits
        if self._server is not None:
            self._server.shutdown()
            self._server.close_clients()
            self._server.server_close()
            self._thread.join(5)
            self._server = self._thread = None

    @property
    def port(self):
        return self._server.server_address[1]

    @property
    def endpoint(self):
        """Where clients connect: http://127.0.0.1:PORT."""
        return "http://127.0.0.1:%d" % self.port

    def count(self, method):
        with self._lock:
            self.requests[method] += 1

    def serve(self, handler, body):
        """Answer one request (handler: the _Handler; body: bytes read)."""
        raise NotImplementedError


# --------------------------------------------------------------------------
# The proxies
# --------------------------------------------------------------------------

def etag_matches(if_match, etag):
    """RFC 9110 If-Match against one strong ETag: '*' or a list of tags
    (quotes optional here, as S3 is lenient about them)."""
    if if_match.strip() == "*":
        return etag is not None
    want = (etag or "").strip().strip('"')
    return any(t.strip().strip('"') == want for t in if_match.split(","))


def resolve_range(header, size):
    """S3's reading of a Range header for an object of `size` bytes:
    (start, end) inclusive; None if the header is not a single byte range
    (S3 then ignores it and sends the whole object); "unsatisfiable" for a
    range past the end, a zero suffix, or any range of an empty object."""
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header or "")
    if not m or m.groups() == ("", ""):
        return None
    first, last = m.groups()
    if first == "":  # suffix: the last N bytes
        n = int(last)
        return (max(0, size - n), size - 1) if n > 0 and size > 0 else "unsatisfiable"
    start = int(first)
    end = size - 1 if last == "" else int(last)
    if last != "" and end < start:
        return None  # syntactically invalid: ignored (RFC 9110 14.1.1)
    if start >= size:
        return "unsatisfiable"
    return start, min(end, size - 1)


def _is_object_read(method, target):
    """GET/HEAD of /bucket/key with no query but x-id= (newer botocore
    adds it) or response-* overrides: a read of the object itself."""
    parts = urlsplit(target)
    params = [p.partition("=")[0] for p in parts.query.split("&") if p]
    return (method in ("GET", "HEAD") and len([p for p in parts.path.split("/") if p]) >= 2
            and all(k == "x-id" or k.startswith("response-") for k in params))


class SigV4Proxy(_Relay):
    """S3 in front of s3rver: refuses what real S3 would refuse for a bad
    signature (see verify_sigv4), then forwards without the Authorization
    header (s3rver serves anonymous requests). It also makes object reads
    behave like S3 where s3rver does not: If-Match (412), and single Range
    requests (suffix ranges, bytes=0-0, 416 with Content-Range: bytes */N).

    `rejected` counts refused requests by S3 error code; `last_rejection`
    is the last SigV4Error (its .extra has the CanonicalRequest and
    StringToSign this side computed, as S3's error body does)."""

    def __init__(self, upstream_endpoint, access_key, secret_key, region="us-east-1",
                 require_content_sha256=True, max_skew_s=900, verbose=False):
        super().__init__(upstream_endpoint, verbose)
        self.access_key, self.secret_key, self.region = access_key, secret_key, region
        self.require_content_sha256 = require_content_sha256
        self.max_skew_s = max_skew_s
        self.rejected = Counter()
        self.last_rejection = None

    def serve(self, h, body):
        try:
            verify_sigv4(h.command, h.path, h.headers, body,
                         {self.access_key: self.secret_key}, self.region,
                         self.require_content_sha256, self.max_skew_s)
        except SigV4Error as e:
            with self._lock:
                self.rejected[e.code] += 1
                self.last_rejection = e
            return h.send_xml_error(e.status, e.code, e.message, e.extra)
        if _is_object_read(h.command, h.path) and \
                ("Range" in h.headers or "If-Match" in h.headers):
            return self._read_object(h)
        h.relay(h.upstream(h.command, h.path,
                           h.forward_headers(drop=("host", "authorization")), body))

    def _read_object(self, h):
        """GET/HEAD of an object with If-Match and/or Range, done as S3:
        a HEAD upstream gives the size and ETag, then the exact range is
        asked for and exactly its bytes are sent on."""
        fwd = h.forward_headers(drop=("host", "authorization", "range", "if-match"))
        head = h.upstream("HEAD", h.path, fwd)
        head.read()
        if head.status != 200:  # 404 and the like: upstream's own answer
            return h.relay(h.upstream(h.command, h.path, fwd))
        size, etag = int(head.getheader("Content-Length")), head.getheader("ETag")
        if_match = h.headers.get("If-Match")
        precondition_failed = (412, "PreconditionFailed",
                               "At least one of the pre-conditions you specified did not hold",
                               [("Condition", "If-Match")])
        if if_match is not None and not etag_matches(if_match, etag):
            return h.send_xml_error(*precondition_failed)
        span = resolve_range(h.headers.get("Range"), size)
        if span == "unsatisfiable":
            return h.send_xml_error(416, "InvalidRange", "The requested range is not satisfiable",
                                    [("RangeRequested", h.headers["Range"]),
                                     ("ActualObjectSize", size)],
                                    [("Content-Range", "bytes */%d" % size)])
        override = None
        if span is not None:
            start, end = span
            fwd.append(("Range", "bytes=%d-%d" % (start, end)))
            override = {"Content-Range": "bytes %d-%d/%d" % (start, end, size),
                        "Content-Length": str(end - start + 1)}
        resp = h.upstream(h.command, h.path, fwd)
        if if_match is not None and resp.getheader("ETag") != etag:
            h.drop_upstream()  # replaced between our HEAD and GET
            return h.send_xml_error(*precondition_failed)
        h.relay(resp, override if resp.status == 206 else None)


class _Fault:
    """One queued fault: its kind, how many requests it still hits, options."""

    def __init__(self, kind, n, **options):
        self.kind, self.left, self.options = kind, n, options


_ERROR_CODES = {400: "InvalidRequest", 403: "AccessDenied", 404: "NoSuchKey",
                500: "InternalError", 503: "SlowDown"}


class FaultProxy(_Relay):
    """A transparent proxy (the Host header passes unchanged, so it can sit
    in front of SigV4Proxy without breaking signatures, or of nginx) that
    injects faults chosen at run time, from any thread.

    Which requests a fault hits (`match`): "data" (default) -- GETs that
    carry a Range header or have no query string, i.e. object and file
    reads but not S3 listings (ListObjectsV2 always has ?list-type=2; a V1
    listing of a bare /bucket would match); "all" -- every request, any
    method; or a function (method, target, headers) -> bool.
    Faults are queued in the order set; each matching request takes one
    from the head of the queue. latency_ms delays every response, faulted
    or not. `delivered` counts faults by kind, `history` lists
    (method, target, kind or None) for every request."""

    def __init__(self, upstream, match="data", verbose=False):
        super().__init__(upstream, verbose)
        if match not in ("data", "all") and not callable(match):
            raise ValueError("match must be 'data', 'all' or a function")
        self.match = match
        self._latency_ms = 0
        self._faults = deque()
        self.delivered = Counter()
        self.history = []

    @property
    def latency_ms(self):
        return self._latency_ms

    @latency_ms.setter
    def latency_ms(self, value):
        with self._lock:
            self._latency_ms = max(0, int(value))

    def _queue(self, kind, n, **options):
        if n > 0:
            with self._lock:
                self._faults.append(_Fault(kind, n, **options))

    def fail_next(self, n=1, status=503):
        """Answer the next n matching requests with `status` and an S3 XML
        error (503 SlowDown, 500 InternalError...), upstream not asked."""
        self._queue("fail", n, status=status)

    def reset_next(self, n=1, after_bytes=None):
        """Send status, headers and after_bytes of the body (default half),
        then reset the connection (RST)."""
        self._queue("reset", n, after_bytes=after_bytes)

    def truncate_next(self, n=1, after_bytes=None):
        """Promise the full Content-Length, send after_bytes (default half),
        then close the connection cleanly (FIN)."""
        self._queue("truncate", n, after_bytes=after_bytes)

    def stall_next(self, n=1, seconds=5.0, after_bytes=0):
        """Send headers and after_bytes of the body, wait `seconds` (cut
        short by stop()), then send the rest."""
        self._queue("stall", n, seconds=seconds, after_bytes=after_bytes)

    def clear(self):
        """Drop every queued fault (delivered counts are kept)."""
        with self._lock:
            self._faults.clear()

    @property
    def pending(self):
        """How many more requests the queued faults will hit."""
        with self._lock:
            return sum(f.left for f in self._faults)

    def matches(self, method, target, headers):
        """Whether a request is one that faults may hit (see the class doc)."""
        if self.match == "all":
            return True
        if callable(self.match):
            return bool(self.match(method, target, headers))
        return method == "GET" and ("Range" in headers or "?" not in target)

    def _take(self, h):
        """The fault this request gets, if any, recorded in history."""
        with self._lock:
            fault = None
            if self._faults and self.matches(h.command, h.path, h.headers):
                fault = self._faults[0]
                fault.left -= 1
                if fault.left <= 0:
                    self._faults.popleft()
                self.delivered[fault.kind] += 1
            self.history.append((h.command, h.path, fault and fault.kind))
            return fault

    def serve(self, h, body):
        fault = self._take(h)
        if self._latency_ms:
            self._stopping.wait(self._latency_ms / 1000.0)
        if fault is not None and fault.kind == "fail":
            status = fault.options["status"]
            return h.send_xml_error(status, _ERROR_CODES.get(status, "InjectedFault"),
                                    "fault injected by FaultProxy")
        resp = h.upstream(h.command, h.path, h.forward_headers(), body, keep_host=True)
        if fault is None:
            return h.relay(resp)
        length, reader = h.start_relay(resp)
        after = fault.options["after_bytes"]
        sent = h.copy_body(reader, length // 2 if after is None else min(after, length))
        if fault.kind == "stall":
            self._stopping.wait(fault.options["seconds"])
            sent += h.copy_body(reader, length - sent)
            return h.finish_relay(resp, length, sent)
        h.abort(reset=fault.kind == "reset")
