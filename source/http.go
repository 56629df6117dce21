package source

import (
	"context"
	"errors"
	"fmt"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/secret"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// HTTPError is a response the API gave with a status that is not a
// success, after any retries: it names the request and the status, and
// quotes the start of the body (the APIs say there what was wrong).
type HTTPError struct {
	URL    string
	Status int
	Body   string
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("GET %s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if b := strings.TrimSpace(e.Body); b != "" {
		msg += ": " + b
	}
	return msg
}

// maxQuoted bounds how much of an error body an HTTPError quotes.
const maxQuoted = 200

// quote is the start of an error body, valid UTF-8 on one line.
func quote(b []byte) string {
	if len(b) > maxQuoted {
		b = b[:maxQuoted]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
}

// retryable reports whether a status says "try again later".
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// hideSecrets blanks in s what the request's headers hold (a server or a
// proxy may echo the authorization it refused), so that an error never
// shows a credential.
func (f *fetcher) hideSecrets(s string) string {
	for _, vs := range f.o.Header {
		for _, v := range vs {
			for _, w := range append([]string{v}, strings.Fields(v)...) {
				if len(w) >= 4 {
					s = strings.ReplaceAll(s, w, "***")
				}
			}
		}
	}
	return s
}

// maxWait caps one wait between tries, whatever Retry-After asks.
const maxWait = 30 * time.Second

// get fetches u and returns its body when the status is 200, or an
// *HTTPError. 429, 5xx and network errors are retried (o.Retries times,
// waiting o.Backoff, doubled each time, or what Retry-After asks, capped);
// a 404 is not, and is returned as an *HTTPError for the caller to judge.
// At most o.Concurrency requests are in flight at once, whoever calls.
func (f *fetcher) get(ctx context.Context, u *url.URL) ([]byte, error) {
	wait := f.o.Backoff
	for try := 0; ; try++ {
		if try > 0 {
			f.count(func(p *Progress) { p.Retries++ })
		}
		f.count(func(p *Progress) { p.Requests++ })
		body, status, retryAfter, err := f.once(ctx, u)
		if err == nil && status == http.StatusOK {
			return body, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var herr error
		if err != nil {
			herr = fmt.Errorf("GET %s: %w", u.Redacted(), unwrapURL(err))
		} else {
			herr = &HTTPError{URL: u.Redacted(), Status: status, Body: quote([]byte(secret.Scrub(f.hideSecrets(string(body)))))}
			if !retryable(status) {
				return nil, herr
			}
		}
		if errors.Is(err, errTooLarge) || try >= f.o.Retries {
			if try > 0 {
				return nil, fmt.Errorf("%w (tried %d times)", herr, try+1)
			}
			return nil, herr
		}
		d := wait
		if retryAfter > d {
			d = retryAfter
		}
		d = min(d, maxWait)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait *= 2
	}
}

// errTooLarge is a body over Options.MaxResponse.
var errTooLarge = errors.New("response too large")

// unwrapURL drops the *url.Error wrapper (its message repeats the method
// and URL that get already names).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// once makes one request, holding a slot of the concurrency bound, with
// the per-request timeout around the whole exchange.
func (f *fetcher) once(ctx context.Context, u *url.URL) (body []byte, status int, retryAfter time.Duration, err error) {
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, 0, 0, ctx.Err()
	}
	defer func() { <-f.sem }()
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, 0, err
	}
	for k, vs := range f.o.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.o.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("no answer within %v (%s)", f.o.Timeout, f.o.Names.Of(option.FetchTimeout))
		}
		return nil, 0, 0, err
	}
	defer resp.Body.Close()
	body, err = f.readBody(ctx, resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("response not read within %v (%s)", f.o.Timeout, f.o.Names.Of(option.FetchTimeout))
		}
		return nil, 0, 0, err
	}
	if int64(len(body)) > f.o.MaxResponse {
		// The truth for both cases: a search answer shrinks with
		// Limit, one trace only with a larger cap.
		maxResponse := f.o.Names.Of(option.FetchMaxResponse)
		if f.o.Limit <= 1 || strings.Contains(u.Path, "/traces/") {
			return nil, 0, 0, fmt.Errorf("%w: one trace is over %d bytes; raise %s to read it", errTooLarge, f.o.MaxResponse, maxResponse)
		}
		return nil, 0, 0, fmt.Errorf("%w: over %d bytes; ask for fewer traces per search (%s), or raise %s", errTooLarge, f.o.MaxResponse, f.o.Names.Of(option.FetchLimit), maxResponse)
	}
	return body, resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After")), nil
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// readBody reads a response body within one memory budget for all the
// request slots: each reads up to its share of MaxResponse freely, and
// only the one holding f.big may read on, up to MaxResponse. A gzip bomb
// or an endless body then costs at most MaxResponse + (Concurrency − 1)
// shares in flight, not MaxResponse in every slot (5.5 GB with 16 slots).
func (f *fetcher) readBody(ctx context.Context, r io.Reader) ([]byte, error) {
	share := max(f.o.MaxResponse/int64(max(f.o.Concurrency, 1)), 1<<20)
	if share >= f.o.MaxResponse {
		return io.ReadAll(io.LimitReader(r, f.o.MaxResponse+1))
	}
	body, err := io.ReadAll(io.LimitReader(r, share+1))
	if err != nil || int64(len(body)) <= share {
		return body, err
	}
	select {
	case f.big <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-f.big }()
	if f.tooLarge.Load() {
		// A slot before this one met an answer over the cap: the fetch
		// ends on that error, and this one would only read as much again.
		return nil, fmt.Errorf("%w: over %d bytes (an answer before it was too)", errTooLarge, f.o.MaxResponse)
	}
	rest, err := io.ReadAll(io.LimitReader(r, f.o.MaxResponse+1-int64(len(body))))
	body = append(body, rest...)
	if int64(len(body)) > f.o.MaxResponse {
		f.tooLarge.Store(true)
	}
	return body, err
}

// The helpers below are for the fetchers of other stores (source/…), so
// that every fetch masks, quotes and follows redirects by one rule.

// Mask blanks in s the values of h (see hideSecrets) and then anything
// credential-shaped (secret.Scrub): server text, before it is shown.
func Mask(h http.Header, s string) string {
	f := fetcher{o: Options{Header: h}}
	return secret.Scrub(f.hideSecrets(s))
}

// Quote is the start of a server's error body, on one line, as an
// HTTPError quotes it. It does not mask: Mask first.
func Quote(b []byte) string { return quote(b) }

// SameOrigin is the redirect rule of every fetch (http.Client's
// CheckRedirect): a redirect is followed only within the origin of the
// first request, since the request's credentials go with it.
func SameOrigin(req *http.Request, via []*http.Request) error { return sameOrigin(req, via) }
