"""Transport security of the policy engine: TLS / mTLS credentials and a shared-secret bearer token.

Server side (`policy-engine serve --tls-cert PEM --tls-key PEM [--tls-client-ca PEM] [--token-file FILE]`):
  * TLS when a certificate and key are given, mutual TLS when a client CA is given too (a client certificate
    signed by that CA is then required on every connection);
  * with a token file, every RPC - health checking and reflection included - must carry the metadata
    `authorization: Bearer <token>` (the file's content, stripped); anything else is refused with
    UNAUTHENTICATED before the call reaches a handler. The comparison is constant-time (hmac.compare_digest).
Plaintext on loopback stays the default; a token over plaintext on a non-loopback address is allowed (a trusted
network) but logged as a warning, since anyone on the path can read it.

Client side: `ClientSecurity` (CA bundle, optional client certificate and key, optional token) builds the channel
credentials and the interceptor that adds the token, for `PolicyEngineClient` / `AsyncPolicyEngineClient`.

Certificates are checked when they are loaded, so a wrong file is one clear line at start-up rather than a
handshake failure later: PEM that parses, a key that matches its certificate, a certificate that is valid now.
"""

from __future__ import annotations

import datetime as _dt
import hmac
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

log = logging.getLogger(__name__)

AUTH_HEADER = "authorization"
BEARER = "Bearer "
MAX_TOKEN_BYTES = 4096


class SecurityConfigError(ValueError):
    """A certificate, key, CA bundle or token file that cannot be used; the message says which and why."""


# ---------------------------------------------------------------------------------------------------------------
# Files

def _read(path: str | Path, what: str) -> bytes:
    p = Path(path)
    if not p.exists():
        raise SecurityConfigError(f"{what} {path} does not exist")
    if p.is_dir():
        raise SecurityConfigError(f"{what} {path} is a directory, not a file")
    try:
        return p.read_bytes()
    except OSError as e:
        raise SecurityConfigError(f"{what} {path}: cannot read ({e.strerror or e})") from None


def read_token(path: str | Path) -> str:
    """The shared secret in `path`, stripped of surrounding whitespace; refused when empty, too long or not a
    single printable ASCII line (it travels as an HTTP/2 header value)."""
    raw = _read(path, "--token-file")
    if len(raw) > MAX_TOKEN_BYTES:
        raise SecurityConfigError(f"--token-file {path}: {len(raw)} bytes; a token is at most {MAX_TOKEN_BYTES}")
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise SecurityConfigError(f"--token-file {path}: not ASCII text; the token is sent as a header value") \
            from None
    if not token:
        raise SecurityConfigError(f"--token-file {path} is empty; put the shared secret in it")
    if any(not (0x21 <= ord(c) <= 0x7E) for c in token):
        raise SecurityConfigError(f"--token-file {path}: the token must be one line of printable ASCII without "
                                  "spaces")
    return token


def _load_certs(data: bytes, path: str | Path, what: str) -> list[Any]:
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as e:
        raise SecurityConfigError(f"{what} {path}: not a PEM certificate ({e})") from None
    if not certs:
        raise SecurityConfigError(f"{what} {path}: no PEM certificate in it")
    return certs


def _check_validity(cert, path: str | Path, what: str) -> None:
    now = _dt.datetime.now(_dt.timezone.utc)
    not_before, not_after = cert.not_valid_before_utc, cert.not_valid_after_utc
    if now > not_after:
        raise SecurityConfigError(f"{what} {path} expired on {not_after:%Y-%m-%d %H:%M} UTC; renew it")
    if now < not_before:
        raise SecurityConfigError(f"{what} {path} is not valid before {not_before:%Y-%m-%d %H:%M} UTC "
                                  "(check the clock)")


def _load_key(data: bytes, path: str | Path, what: str):
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        return load_pem_private_key(data, password=None)
    except TypeError:
        raise SecurityConfigError(f"{what} {path} is encrypted; give an unencrypted PEM key") from None
    except ValueError as e:
        raise SecurityConfigError(f"{what} {path}: not a PEM private key ({e})") from None


def load_key_pair(cert_path: str | Path, key_path: str | Path, cert_flag: str, key_flag: str) -> tuple[bytes, bytes]:
    """(key PEM, certificate chain PEM), checked: both parse, the certificate is valid now, the key is its key."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    cert_pem, key_pem = _read(cert_path, cert_flag), _read(key_path, key_flag)
    leaf = _load_certs(cert_pem, cert_path, cert_flag)[0]
    _check_validity(leaf, cert_path, cert_flag)
    key = _load_key(key_pem, key_path, key_flag)
    spki = (Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    if key.public_key().public_bytes(*spki) != leaf.public_key().public_bytes(*spki):
        raise SecurityConfigError(f"{key_flag} {key_path} is not the key of {cert_flag} {cert_path}")
    return key_pem, cert_pem


def load_ca(path: str | Path, flag: str) -> bytes:
    data = _read(path, flag)
    _load_certs(data, path, flag)
    return data


# ---------------------------------------------------------------------------------------------------------------
# Server

@dataclass(frozen=True)
class ServerSecurity:
    """What `serve` enforces: TLS (key_pem + cert_pem), mTLS (client_ca_pem too), and/or a bearer token."""

    key_pem: bytes | None = None
    cert_pem: bytes | None = None
    client_ca_pem: bytes | None = None
    token: str | None = None

    @classmethod
    def from_files(cls, tls_cert: str | None = None, tls_key: str | None = None, tls_client_ca: str | None = None,
                   token_file: str | None = None) -> ServerSecurity:
        if (tls_cert is None) != (tls_key is None):
            raise SecurityConfigError("--tls-cert and --tls-key go together: give both for TLS")
        if tls_client_ca is not None and tls_cert is None:
            raise SecurityConfigError("--tls-client-ca (mutual TLS) needs --tls-cert and --tls-key")
        key_pem = cert_pem = ca_pem = None
        if tls_cert is not None:
            key_pem, cert_pem = load_key_pair(tls_cert, tls_key, "--tls-cert", "--tls-key")
        if tls_client_ca is not None:
            ca_pem = load_ca(tls_client_ca, "--tls-client-ca")
        return cls(key_pem, cert_pem, ca_pem, read_token(token_file) if token_file else None)

    @property
    def tls(self) -> bool:
        return self.cert_pem is not None

    def describe(self) -> str:
        transport = "mtls" if self.client_ca_pem else "tls" if self.tls else "plaintext"
        return transport + ("+token" if self.token else "")

    def credentials(self) -> grpc.ServerCredentials | None:
        if not self.tls:
            return None
        return grpc.ssl_server_credentials([(self.key_pem, self.cert_pem)], root_certificates=self.client_ca_pem,
                                           require_client_auth=self.client_ca_pem is not None)

    def interceptors(self) -> list:
        return [TokenAuthInterceptor(self.token)] if self.token else []


def _abort_handler(handler: grpc.RpcMethodHandler | None, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same streaming kind as `handler` that refuses the call (requests are not deserialized:
    an unauthenticated caller's bytes are never parsed)."""

    async def refuse(_request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    if handler is None or not (handler.request_streaming or handler.response_streaming):
        return grpc.unary_unary_rpc_method_handler(refuse)
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    return grpc.unary_stream_rpc_method_handler(refuse)


class TokenAuthInterceptor(grpc.aio.ServerInterceptor):
    """Every RPC must carry `authorization: Bearer <token>`; otherwise UNAUTHENTICATED with what was wrong."""

    def __init__(self, token: str, metrics_counter=None):
        self._expected = token.encode()
        self.refused = 0
        self.counter = metrics_counter

    def check(self, metadata) -> str | None:
        """None when the metadata carries the token, else why not (never echoing what was sent)."""
        values = [v for k, v in (metadata or ()) if k == AUTH_HEADER]
        if not values:
            return ("missing credentials: this engine requires `authorization: Bearer <token>` metadata on every "
                    "call (the token of its --token-file)")
        value = values[0]
        if isinstance(value, str):
            value = value.encode("utf-8", "replace")
        if not value.startswith(BEARER.encode()):
            return "malformed credentials: the authorization metadata must be `Bearer <token>`"
        # constant time in the token's content: an attacker learns nothing from how long a refusal takes
        if not hmac.compare_digest(value[len(BEARER):].strip(), self._expected):
            return "invalid token: the bearer token does not match this engine's --token-file"
        return None

    async def intercept_service(self, continuation, handler_call_details):
        why = self.check(handler_call_details.invocation_metadata)
        if why is None:
            return await continuation(handler_call_details)
        self.refused += 1
        if self.counter is not None:
            self.counter.inc()
        if self.refused in (1, 100, 10_000):  # log once, then rarely (a misconfigured caller retries a lot)
            log.warning("refused an RPC to %s: %s (%d refused so far)", handler_call_details.method, why,
                        self.refused)
        return _abort_handler(await continuation(handler_call_details), why)


# ---------------------------------------------------------------------------------------------------------------
# Client

@dataclass(frozen=True)
class ClientSecurity:
    """How a Python client reaches a secured engine. `ca`: PEM bundle that signed the server's certificate (TLS
    when given); `cert`/`key`: the client's certificate for mTLS; `token`: the bearer token (or `token_file`);
    `server_name`: the name to verify the server's certificate against when it differs from the target host."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    token: str | None = None
    token_file: str | None = None
    server_name: str | None = None

    def __post_init__(self):
        if (self.cert is None) != (self.key is None):
            raise SecurityConfigError("a client certificate and its key go together (--tls-cert and --tls-key)")
        if self.cert is not None and self.ca is None:
            raise SecurityConfigError("a client certificate is for mutual TLS: give the server's CA too (--tls-ca)")

    @property
    def tls(self) -> bool:
        return self.ca is not None

    def bearer(self) -> str | None:
        if self.token is not None:
            return self.token.strip()
        return read_token(self.token_file) if self.token_file else None

    def channel_credentials(self) -> grpc.ChannelCredentials:
        ca = load_ca(self.ca, "--tls-ca")
        key = cert = None
        if self.cert is not None:
            key, cert = load_key_pair(self.cert, self.key, "--tls-cert", "--tls-key")
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)

    def options(self) -> list[tuple[str, str]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


class _BearerMetadata:
    """Adds `authorization: Bearer <token>` to every call (sync and aio client interceptors share this)."""

    def __init__(self, token: str):
        self._pair = (AUTH_HEADER, BEARER + token)

    def _details(self, details):
        # grpc's call details are namedtuples, in the blocking and the aio API alike
        return details._replace(metadata=list(details.metadata or ()) + [self._pair])


class BearerInterceptor(_BearerMetadata, grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                        grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)

    def intercept_stream_stream(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)


def _aio_interceptors(token: str) -> list:
    from grpc import aio

    class _Aio(_BearerMetadata):
        pass

    def make(base, name):
        async def intercept(self, continuation, details, request):
            return await continuation(self._details(details), request)
        return type(f"Bearer{name}", (_Aio, base), {f"intercept_{name}": intercept})(token)

    return [make(aio.UnaryUnaryClientInterceptor, "unary_unary"), make(aio.UnaryStreamClientInterceptor, "unary_stream"),
            make(aio.StreamUnaryClientInterceptor, "stream_unary"),
            make(aio.StreamStreamClientInterceptor, "stream_stream")]


def secure_channel(target: str, options: list, security: ClientSecurity | None):
    """A blocking channel to `target` with the credentials and token of `security` (plaintext when None)."""
    security = security or ClientSecurity()
    opts = list(options) + security.options()
    channel = (grpc.secure_channel(target, security.channel_credentials(), options=opts) if security.tls
               else grpc.insecure_channel(target, options=opts))
    token = security.bearer()
    return grpc.intercept_channel(channel, BearerInterceptor(token)) if token else channel, channel


def secure_aio_channel(target: str, options: list, security: ClientSecurity | None):
    security = security or ClientSecurity()
    opts = list(options) + security.options()
    token = security.bearer()
    interceptors = _aio_interceptors(token) if token else None
    if security.tls:
        return grpc.aio.secure_channel(target, security.channel_credentials(), options=opts,
                                       interceptors=interceptors)
    return grpc.aio.insecure_channel(target, options=opts, interceptors=interceptors)


def explain_failure(details: str, security: ClientSecurity | None) -> str:
    """A hint for a connection failure that is probably a TLS mismatch (gRPC reports them as UNAVAILABLE with a
    bare "Socket closed" or an OpenSSL code); empty when there is nothing better to say."""
    text = details or ""
    tls = security is not None and security.tls
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text.lower():
        return ("the engine's TLS certificate was refused: it is not signed by --tls-ca, has expired, or does not "
                "name this host (--tls-server-name)")
    if "WRONG_VERSION_NUMBER" in text and tls:
        return "the engine does not speak TLS here: connect without --tls-ca"
    if "Socket closed" in text or "handshake" in text.lower() or "Connection reset" in text:
        if not tls:
            return "the engine closed the connection: it may serve TLS (connect with --tls-ca)"
        if security.cert is None:
            return ("the engine closed the TLS handshake: it may require a client certificate (mutual TLS: "
                    "--tls-cert and --tls-key signed by its --tls-client-ca)")
        return ("the engine closed the TLS handshake: it refused the client certificate (not signed by its "
                "--tls-client-ca, or expired)")
    return ""
