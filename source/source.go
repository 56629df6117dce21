// Package source reads traces straight from a tracing backend's query API
// — Jaeger (api_v3), Grafana Tempo, Zipkin — so that a URL can stand
// wherever a path to span logs is accepted.
//
// None of these APIs pages: a search returns at most its limit of traces.
// So a window is cut into slices, each slice is asked for on its own, and a
// slice that comes back full is cut in two and asked for again, down to a
// floor; a slice still full at the floor is kept as the sample the store
// returned, and a note says so. Requests run a few at a time, are retried
// with backoff on 429 and 5xx, and each has a timeout.
//
// A trace can come back from several requests (it spans two slices, or,
// for Jaeger, several services). Each is kept by exactly one request, the
// one that covers the trace's owner: its earliest span (for Jaeger, in
// the queried service), so no memory of the traces seen is needed.
//
// The package only fetches: what comes out is the API's own JSON (OTLP
// JSON lines for Jaeger and Tempo, Zipkin v2 arrays for Zipkin), streamed
// in window order into the same readers that read exported files
// (package ingest). It must not decode spans into tailscope's model nor
// print anything: a command renders the progress and notes it reports.
package source

import (
	"errors"
	"fmt"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/secret"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// The APIs a source URL can name.
const (
	Jaeger = "jaeger"
	Tempo  = "tempo"
	Zipkin = "zipkin"
)

// Target is a parsed source URL.
type Target struct {
	// API is Jaeger, Tempo or Zipkin.
	API string
	// Base is the HTTP(S) address of the API, path prefix included.
	Base *url.URL
	// Query is Tempo's TraceQL search ("{}" when none was given).
	Query string
	// Raw is the URL as the user wrote it, for messages.
	Raw string
}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// IsURL reports whether p is written as a URL (scheme://…) rather than a
// path: such a path is always a source, so that a mistyped scheme is
// reported as such instead of as a missing file.
func IsURL(p string) bool { return schemeRE.MatchString(p) }

// defaultPorts are the query ports each backend listens on out of the box.
var defaultPorts = map[string]string{Jaeger: "16686", Tempo: "3200", Zipkin: "9411"}

// Parse reads a source URL: jaeger://HOST[:PORT][/PREFIX],
// tempo://HOST[:PORT][/PREFIX][?q=TRACEQL], zipkin://HOST[:PORT][/PREFIX],
// each also as API+http:// and API+https://. Credentials in the URL are
// refused: the URL is printed in messages and reports, so they belong in
// a header (Options.Header).
func Parse(raw string) (*Target, error) { return parse(raw, nil) }

// parse is Parse whose errors name the settings by names.
func parse(raw string, names option.Names) (*Target, error) {
	// Messages show the URL with its credentials hidden (a password in
	// its user info, a token in its query): whatever the mistake, the
	// secret is not printed.
	shown := secret.Scrub(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("source %q: %v", shown, secret.Scrub(err.Error()))
	}
	api, transport, _ := strings.Cut(strings.ToLower(u.Scheme), "+")
	if _, ok := defaultPorts[api]; !ok {
		return nil, fmt.Errorf("source %q: unknown scheme %q (want jaeger://, tempo:// or zipkin://, optionally +http or +https)", shown, u.Scheme)
	}
	switch transport {
	case "":
		transport = "http"
	case "http", "https":
	default:
		return nil, fmt.Errorf("source %q: unknown transport %q in %q (want %s+http or %s+https)", shown, transport, u.Scheme, api, api)
	}
	if u.User != nil {
		return nil, fmt.Errorf("source %s: credentials in the URL would be printed in messages and reports; give them with %s or %s", redact(u), names.Of(option.Header), names.Of(option.Token))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("source %q: no host", shown)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("source %q: a fragment (#…) means nothing here", shown)
	}
	t := &Target{API: api, Raw: shown}
	q := u.Query()
	for k := range q {
		if api == Tempo && k == "q" {
			continue
		}
		takes := "q=TRACEQL"
		if api != Tempo {
			takes = names.Of(option.Since) + "/" + names.Of(option.Until) + " and the " + names.Of(option.Fetch) + " flags"
		}
		return nil, fmt.Errorf("source %q: unknown parameter %q (%s takes none but %s)", shown, k, api, takes)
	}
	if api == Tempo {
		t.Query = strings.TrimSpace(q.Get("q"))
		if t.Query == "" {
			t.Query = "{}"
		}
	}
	host := u.Host
	if u.Port() == "" {
		host = strings.TrimSuffix(host, ":") + ":" + defaultPorts[api]
	}
	t.Base = &url.URL{Scheme: transport, Host: host, Path: strings.TrimSuffix(u.Path, "/")}
	return t, nil
}

// redact is u without its password, for a message.
func redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(c.User.Username())
		return strings.Replace(c.String(), "@", ":***@", 1)
	}
	return c.String()
}

// Options say what to fetch and how.
type Options struct {
	// Since and Until bound the window: traces whose earliest span starts
	// in [Since, Until). Zero Until is now; zero Since is an hour before
	// Until.
	Since, Until time.Time
	// Slice is the length of the first cut of the window (0: the whole
	// window, cut in two wherever the store's answer is full); MinSlice
	// the floor below which a full slice is not cut again (0: as fine as
	// the API can express, a second for Tempo, a millisecond for Zipkin,
	// a microsecond for Jaeger), where a full answer is kept as a sample.
	Slice, MinSlice time.Duration
	// Limit is the most traces asked for in one search (DefaultLimit).
	Limit int
	// Concurrency bounds the requests in flight (DefaultConcurrency).
	Concurrency int
	// Timeout bounds each request, its body included (DefaultTimeout).
	Timeout time.Duration
	// Retries is how often a request that met 429, a 5xx or a network
	// error is tried again (DefaultRetries; a negative value none);
	// Backoff the first wait, doubled each time (DefaultBackoff).
	Retries int
	Backoff time.Duration
	// MaxResponse bounds the body of one response, in bytes
	// (DefaultMaxResponse): a search that returns more must ask for fewer
	// traces (Limit).
	MaxResponse int64
	// Header is sent with every request (authorization). It is never
	// printed, nor written anywhere.
	Header http.Header
	// Client makes the requests (http.DefaultClient's transport when nil).
	Client *http.Client
	// Progress, when set, is told how the fetch goes after each request;
	// it may be called from several goroutines, one at a time.
	Progress func(Progress)
	// Names names the settings the fetch's messages mention (the window,
	// Timeout, Limit, MaxResponse, Slice, Header: option.Since, …) as the
	// caller's user knows them; nil: by option's own names.
	Names option.Names
}

// Defaults of Options.
const (
	DefaultSlice    = 0
	DefaultMinSlice = 0
	// MaxSlices bounds the first cut: a Slice that cuts the window
	// into more slices than this cannot finish (a request each).
	MaxSlices          = 1_000_000
	DefaultLimit       = 500
	DefaultConcurrency = 4
	DefaultTimeout     = 30 * time.Second
	DefaultRetries     = 4
	DefaultBackoff     = 500 * time.Millisecond
	DefaultMaxResponse = 256 << 20
	DefaultWindow      = time.Hour
)

// Progress is how a fetch is going.
type Progress struct {
	// Source is the URL as given.
	Source string
	// Slices are the slices (per service, for Jaeger) known so far, Done
	// those fetched, Split those that came back full and were cut.
	Slices, Done, Split int
	// Traces are the traces kept, Requests the HTTP requests made,
	// Retries those that were repeats.
	Traces, Requests, Retries int
	// Final is set on the last report, when the fetch is over; Failed
	// too when it ended on an error (which the stream's reader gets).
	Final, Failed bool
}

// withDefaults fills in what o leaves zero, for target t.
func (o Options) withDefaults(t *Target, now time.Time) Options {
	if o.Until.IsZero() {
		o.Until = now
	}
	if o.Since.IsZero() {
		o.Since = o.Until.Add(-DefaultWindow)
	}
	if o.Slice < 0 {
		o.Slice = 0
	}
	if o.MinSlice <= 0 {
		o.MinSlice = DefaultMinSlice
	}
	if g := t.granularity(); o.MinSlice < g {
		o.MinSlice = g
	}
	if o.Slice > 0 && o.Slice < o.MinSlice {
		o.Slice = o.MinSlice
	}
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxResponse <= 0 {
		o.MaxResponse = DefaultMaxResponse
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Client.CheckRedirect == nil {
		c := *o.Client
		c.CheckRedirect = sameOrigin
		o.Client = &c
	}
	return o
}

// sameOrigin follows a redirect only within the origin (scheme, host and
// port) of the first request: the user's credentials (--header, --token)
// go with every request, and a redirect to another port or another name
// of the same machine would hand them to a server the user never named,
// and read data from it without a word.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	from := via[0].URL
	if req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return fmt.Errorf("redirected to another origin, %s://%s, not followed: the request's credentials would go there; give that address as the source if it is the store", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// granularity is the finest time the API's search takes: Tempo's start and
// end are Unix seconds, Zipkin's endTs and lookback milliseconds, Jaeger's
// times RFC 3339 with nanoseconds.
func (t *Target) granularity() time.Duration {
	switch t.API {
	case Tempo:
		return time.Second
	case Zipkin:
		return time.Millisecond
	}
	return time.Microsecond // Jaeger's RFC 3339 takes ns; span starts are µs
}
