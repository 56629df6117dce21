package enforce

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strconv"
)

// DefaultRetryable is the retry predicate used when Options.Retryable is
// nil: it retries what a retry can fix and nothing else. In order:
//
//   - nil, and an error wrapped by Permanent: not retried.
//   - A *Degraded (a call made inside the attempt gave up): retried when
//     its Retryable is (the inner hop ran out of time or was throttled),
//     not when it was refused or cancelled.
//   - An error with a method Retryable() bool (*HTTPError, and the errors
//     of package enforcegrpc's interceptor, which retries gRPC
//     UNAVAILABLE and DEADLINE_EXCEEDED only): what it says.
//   - context.Canceled: not retried (someone below cancelled the attempt;
//     the caller's own cancellation ends the call anyway).
//   - A DNS name that does not exist, a TLS certificate that does not
//     verify: not retried (the same every time).
//   - Anything else — connection refused or reset, an unexpected EOF, a
//     network timeout, context.DeadlineExceeded from below, and any error
//     it does not recognise: retried, as the replay retries every failed
//     attempt. An application whose errors say "refused" in another way
//     wraps them with Permanent or gives Options.Retryable.
func DefaultRetryable(err error) bool {
	if err == nil || IsPermanent(err) {
		return false
	}
	var d *Degraded
	if errors.As(err, &d) {
		return d.Retryable
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return false
	}
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	if errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return false
	}
	return true
}

// HTTPError is an HTTP response whose status failed the attempt. Transport
// fails an attempt with it when the retry predicate says the status may be
// retried (so the call retries or gives up, and the response is discarded);
// other statuses are answers, returned as they are. A hand-wrapped call
// can return HTTPStatus(resp.StatusCode) so that DefaultRetryable tells a
// 503 from a 400.
type HTTPError struct {
	// StatusCode is the response's status code (503).
	StatusCode int
	// Status is its status line ("503 Service Unavailable").
	Status string
	// Header is the response's header (Retry-After), when known.
	Header http.Header
}

// HTTPStatus is an *HTTPError for a status code.
func HTTPStatus(code int) error {
	return &HTTPError{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code)}
}

func (e *HTTPError) Error() string {
	if e.Status != "" {
		return "HTTP " + e.Status
	}
	return "HTTP " + strconv.Itoa(e.StatusCode)
}

// Retryable says whether a retry can fix the status: 429 Too Many
// Requests, 502 Bad Gateway, 503 Service Unavailable and 504 Gateway
// Timeout (load, and a proxy that could not reach the server or wait for
// it) may be retried; every other status — a 4xx the request earns again,
// a 500 the server's own failure on it, 501 and 505 by definition — may
// not. (408 Request Timeout is the server giving up on a slow client: not
// retried either.)
func (e *HTTPError) Retryable() bool {
	switch e.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
