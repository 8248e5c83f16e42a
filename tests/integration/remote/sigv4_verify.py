"""AWS Signature V4 verification as S3 does it, with botocore's own
signer, for SigV4Proxy (remote_proxies.py): verify_sigv4() raises
SigV4Error (status, S3 error code, message) for what S3 would refuse.
s3_error_xml() renders such errors as S3's XML error document.
"""
import hashlib
import hmac
import re
import time
from datetime import datetime, timezone
from urllib.parse import quote, unquote
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
AMZ_DATE_FORMAT = "%Y%m%dT%H%M%SZ"


def s3_error_xml(code, message, extra=()):
    """An S3-style error document; `extra` is (tag, text) pairs after
    Message, as S3 adds e.g. StringToSign to SignatureDoesNotMatch."""
    parts = ["<Code>%s</Code><Message>%s</Message>" % (escape(code), escape(message))]
    parts += ["<%s>%s</%s>" % (tag, escape(str(text)), tag) for tag, text in extra]
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error>%s</Error>'
            % "".join(parts)).encode()


# --------------------------------------------------------------------------
# Signature V4 verification
# --------------------------------------------------------------------------

class SigV4Error(Exception):
    """A request S3 would refuse: the HTTP status and S3 error code to answer."""

    def __init__(self, status, code, message, extra=()):
        super().__init__("%d %s: %s" % (status, code, message))
        self.status, self.code, self.message, self.extra = status, code, message, list(extra)


class _FixedHeadersSigner(S3SigV4Auth):
    """botocore's S3 signer, but signing exactly the headers the client
    named in SignedHeaders (botocore's own choice skips e.g. user-agent)."""

    def __init__(self, credentials, region, signed_names):
        super().__init__(credentials, "s3", region)
        self._signed_names = signed_names

    def headers_to_sign(self, request):
        chosen = HTTPHeaders()
        for name in self._signed_names:
            for value in request.headers.get_all(name) or ():
                chosen[name] = value
        return chosen


def _parse_authorization(value):
    """(access key, date, region, service, terminator, signed names,
    signature) from 'AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
    Signature=...'; SigV4Error when it is anything else."""
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != "AWS4-HMAC-SHA256":
        raise SigV4Error(403, "SignatureDoesNotMatch",
                         "unsupported authorization algorithm %r" % algorithm)
    fields = {}
    for part in rest.split(","):
        key, eq, val = part.strip().partition("=")
        if eq:
            fields[key] = val
    missing = [k for k in ("Credential", "SignedHeaders", "Signature") if not fields.get(k)]
    scope = fields.get("Credential", "").split("/")
    if missing or len(scope) != 5:
        raise SigV4Error(403, "SignatureDoesNotMatch",
                         "garbled Authorization header (missing %s)"
                         % (", ".join(missing) or "a 5-part Credential"))
    return (*scope, fields["SignedHeaders"].split(";"), fields["Signature"])


def _check_payload_hash(headers, body, required):
    """The x-amz-content-sha256 value S3 puts in the canonical request, after
    S3's own checks on it (real S3 requires the header on every request)."""
    value = headers.get("X-Amz-Content-SHA256")
    if value is None:
        if required:
            raise SigV4Error(400, "InvalidRequest",
                             "Missing required header for this request: x-amz-content-sha256")
        return None
    if re.fullmatch(r"[0-9a-f]{64}", value):
        if value != hashlib.sha256(body).hexdigest():
            raise SigV4Error(400, "XAmzContentSHA256Mismatch",
                             "The provided 'x-amz-content-sha256' header does not match what was computed.")
    elif value != UNSIGNED_PAYLOAD:
        raise SigV4Error(400, "InvalidArgument",
                         "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a SHA-256 "
                         "(streaming payloads are not supported here): %r" % value)
    return value


def verify_sigv4(method, target, headers, body, keys, region="us-east-1",
                 require_content_sha256=True, max_skew_s=900, now=None):
    """Raise SigV4Error unless `headers` carry a valid header-based SigV4
    signature of this request. `target` is the request line's path?query,
    `headers` an email.message.Message, `keys` {access key: secret}.

    As S3 does, the canonical URI and query are rebuilt from the decoded
    path and parameters (each URI-encoded once: RFC 3986 unreserved
    characters kept, '/' kept in the path, '+' is a literal plus), so a
    client must sign what S3 would compute, whatever escaping it sent.
    The timestamp is the request's X-Amz-Date, never the clock: the clock
    only bounds the skew (S3: 15 minutes)."""
    if not headers.get("Authorization"):
        raise SigV4Error(403, "SignatureDoesNotMatch",
                         "no Authorization header (anonymous requests are refused here)")
    access_key, day, scope_region, service, terminator, names, signature = \
        _parse_authorization(headers["Authorization"])
    if access_key not in keys:
        raise SigV4Error(403, "InvalidAccessKeyId",
                         "The AWS Access Key Id you provided does not exist in our records.",
                         [("AWSAccessKeyId", access_key)])
    if (scope_region, service, terminator) != (region, "s3", "aws4_request"):
        raise SigV4Error(403, "SignatureDoesNotMatch",
                         "credential scope %s/%s/%s, expected %s/s3/aws4_request"
                         % (scope_region, service, terminator, region))
    amz_date = headers.get("X-Amz-Date", "")
    try:
        when = datetime.strptime(amz_date, AMZ_DATE_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        raise SigV4Error(403, "AccessDenied",
                         "AWS authentication requires a valid Date or x-amz-date header "
                         "(only X-Amz-Date is supported here)") from None
    if day != amz_date[:8]:
        raise SigV4Error(403, "SignatureDoesNotMatch",
                         "credential date %s is not X-Amz-Date's %s" % (day, amz_date[:8]))
    if abs((now if now is not None else time.time()) - when.timestamp()) > max_skew_s:
        raise SigV4Error(403, "RequestTimeTooSkewed",
                         "The difference between the request time and the current time is too large.",
                         [("RequestTime", amz_date)])
    if "host" not in names or names != sorted(set(n.lower() for n in names)):
        raise SigV4Error(403, "SignatureDoesNotMatch",
                         "SignedHeaders must be lowercase, sorted, unique and include host: %s"
                         % ";".join(names))
    payload_hash = _check_payload_hash(headers, body, require_content_sha256)

    path, _, query = target.partition("?")
    request = AWSRequest(method=method,
                         url="http://%s%s" % (headers.get("Host", "localhost"),
                                              quote(unquote(path), safe="/~")),
                         data=body)
    for name in names:
        values = headers.get_all(name)
        if not values:
            raise SigV4Error(403, "SignatureDoesNotMatch",
                             "signed header %r is not in the request" % name)
        for value in values:
            request.headers[name] = value
    if payload_hash is not None and "x-amz-content-sha256" not in names:
        request.headers["X-Amz-Content-SHA256"] = payload_hash  # used, not signed
    request.params = [(unquote(k), unquote(v)) for k, _, v in
                      (pair.partition("=") for pair in query.split("&") if pair)]
    request.context["timestamp"] = amz_date  # what add_auth would take from now()

    signer = _FixedHeadersSigner(Credentials(access_key, keys[access_key]), region, names)
    canonical_request = signer.canonical_request(request)
    string_to_sign = signer.string_to_sign(request, canonical_request)
    expected = signer.signature(string_to_sign, request)
    if not hmac.compare_digest(expected, signature):
        raise SigV4Error(403, "SignatureDoesNotMatch",
                         "The request signature we calculated does not match the signature "
                         "you provided. Check your key and signing method.",
                         [("AWSAccessKeyId", access_key), ("StringToSign", string_to_sign),
                          ("SignatureProvided", signature),
                          ("CanonicalRequest", canonical_request)])
