// Reading from a tracing backend's query API: the flags every command that reads logs shares, the fetch's progress on stderr, and the pull command.

package main

import (
	"context"
	"fmt"
	"github.com/tailscope/tailscope/secret"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/source"
	"github.com/tailscope/tailscope/source/clickhouse"
)

// sourceFlags say how a source URL (jaeger://, tempo://, zipkin://) is
// fetched.
type sourceFlags struct {
	headers     []string
	token       string
	limit       int
	concurrency int
	timeout     time.Duration
	slice       time.Duration
	minSlice    time.Duration
	retries     int
	maxResponse int64
	ch          clickhouseFlags

	m *meter // the read's meter, when one is shown
}

func (f *sourceFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.headers, "header", nil, "'Name: value': an HTTP header sent to a source URL, such as authorization\n(repeatable; never printed nor written to a report)")
	fs.StringVar(&f.token, "token", "", "a bearer token sent to a source URL (default $TAILSCOPE_TOKEN; never printed)")
	fs.IntVar(&f.limit, "fetch-limit", source.DefaultLimit, "traces asked for per search of a source URL; a slice that returns as many is cut in two")
	fs.IntVar(&f.concurrency, "fetch-concurrency", source.DefaultConcurrency, "requests to a source URL in flight at once")
	fs.DurationVar(&f.timeout, "fetch-timeout", source.DefaultTimeout, "time allowed for each request to a source URL, its answer included")
	fs.DurationVar(&f.slice, "fetch-slice", source.DefaultSlice, "the slices a source URL's window is first cut into (0: the whole window; a slice\nwhose answer is full is cut in two, so the default finds sparse and busy stretches alike)")
	fs.DurationVar(&f.minSlice, "fetch-min-slice", source.DefaultMinSlice, "the shortest slice: one still full there is kept as a sample, and a note says so\n(0: as fine as the API's time resolution)")
	fs.Int64Var(&f.maxResponse, "fetch-max-response", source.DefaultMaxResponse, "largest answer read from a source URL, bytes (protects memory; one trace larger than\nthis needs it raised)")
	fs.IntVar(&f.retries, "fetch-retries", source.DefaultRetries, "tries again of a request that met HTTP 429, a 5xx or a network error (with backoff)")
	f.ch.register(fs)
}

// options are the fetch options from the flags, for the window
// [since, until) in Unix ns (0: unbounded, which the source turns into the
// last hour).
func (f *sourceFlags) options(e *env, since, until int64, sinceSet, untilSet, quiet bool) (source.Options, error) {
	o := source.Options{Limit: f.limit, Concurrency: f.concurrency, Timeout: f.timeout, Slice: f.slice, MinSlice: f.minSlice, Retries: f.retries, Names: flagNames}
	for _, x := range []struct {
		name string
		v    int
	}{{"fetch-limit", f.limit}, {"fetch-concurrency", f.concurrency}} {
		if x.v < 1 {
			return o, usagef("--%s %d: want 1 or more", x.name, x.v)
		}
	}
	for _, x := range []struct {
		name string
		v    time.Duration
	}{{"fetch-timeout", f.timeout}} {
		if x.v <= 0 {
			return o, usagef("--%s %v: want a duration above 0", x.name, x.v)
		}
	}
	for _, x := range []struct {
		name string
		v    time.Duration
	}{{"fetch-slice", f.slice}, {"fetch-min-slice", f.minSlice}} {
		if x.v < 0 {
			return o, usagef("--%s %v: want a duration, or 0 for the default", x.name, x.v)
		}
	}
	if f.maxResponse <= 0 {
		return o, usagef("--fetch-max-response %d: want a number of bytes above 0", f.maxResponse)
	}
	o.MaxResponse = f.maxResponse
	if f.retries < 0 {
		return o, usagef("--fetch-retries %d: want 0 or more", f.retries)
	} else if f.retries == 0 {
		o.Retries = -1 // none, not the default
	}
	// A window end given is used as given, the epoch included (0 was
	// taken for "unset": --until 1970-01-01T00:00:00Z fetched 56 years).
	if sinceSet {
		o.Since = time.Unix(0, since)
	}
	if untilSet {
		o.Until = time.Unix(0, until)
	}
	o.Header = http.Header{}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok {
			// Nothing of it is repeated: without a colon the whole
			// argument may be the secret.
			return o, usagef("--header: want 'Name: value' (no colon in the argument)")
		}
		if name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			// The value is not repeated: it may be a secret. The name
			// only when it reads as a header name.
			what := "a header name is letters, digits and '-'"
			if headerName(name) {
				what = fmt.Sprintf("the name %q", visibleName(name))
			}
			return o, usagef("--header: want 'Name: value' (%s)", what)
		}
		o.Header.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	}
	token := f.token
	if token == "" {
		token = os.Getenv("TAILSCOPE_TOKEN")
	}
	if token != "" {
		if strings.ContainsAny(token, "\r\n") {
			return o, usagef("--token: a token is one line")
		}
		if o.Header.Get("Authorization") != "" {
			return o, usagef("--token and --header 'Authorization: …' both set the authorization: give one")
		}
		o.Header.Set("Authorization", "Bearer "+token)
	}
	if !quiet {
		o.Progress = f.progress(e)
	}
	return o, nil
}

// visibleName is a header name as the user gave it, cut short.
func visibleName(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// progress shows the fetch on the read's meter (a terminal) and, when a
// fetch is over, says on stderr what it did.
func (f *sourceFlags) progress(e *env) func(source.Progress) {
	var mu sync.Mutex
	return func(p source.Progress) {
		mu.Lock()
		defer mu.Unlock()
		f.m.fetched(fetchLine(p))
		if !p.Final {
			return
		}
		f.m.fetched("")
		f.m.done()
		if !p.Failed { // a failure is the command's error message
			fmt.Fprintf(e.stderr, "tailscope: %s\n", visible(fetchLine(p)))
		}
	}
}

// fetchLine is what a fetch did so far.
func fetchLine(p source.Progress) string {
	verb := "fetching"
	if p.Final {
		verb = "fetched"
	}
	s := fmt.Sprintf("%s %s: %d traces · %d of %d slices", verb, p.Source, p.Traces, p.Done, p.Slices)
	if p.Split > 0 {
		s += fmt.Sprintf(" (%d cut in two)", p.Split)
	}
	s += fmt.Sprintf(" · %d requests", p.Requests)
	if p.Retries > 0 {
		s += fmt.Sprintf(" (%d retried)", p.Retries)
	}
	return s
}

// remote is what the readers are given to fetch source URLs.
func (f *sourceFlags) remote(e *env, o ingest.Options, quiet bool) (ingest.Remote, error) {
	so, err := f.options(e, o.Since, o.Until, o.SinceOn(), o.UntilOn(), quiet)
	if err != nil {
		return nil, err
	}
	return remotes{ch: clickhouse.Remote{Options: f.clickhouseOptions(e, so, o, quiet)}, src: source.Remote{Options: so}}, nil
}

const pullUsage = `Usage: tailscope pull [flags] URL -o DIR

Fetches the traces of a window from a tracing backend's query API and saves
them in DIR, one file per pull, named after the backend, the address and the
window, so that the window can be analysed again, summarized, or attached to
a bug report: tailscope reads the file as it reads the URL, to the same
numbers.

  jaeger://HOST[:16686]        Jaeger v2 (api_v3); saved as OTLP JSON lines
  tempo://HOST[:3200][?q=TRACEQL]
                               Grafana Tempo (search, then each trace by id);
                               saved as OTLP JSON lines
  zipkin://HOST[:9411]         Zipkin v2; saved as Zipkin v2 JSON, one array
                               of traces a line
  clickhouse://HOST[:8123]/DB[?table=otel_traces]
                               a ClickHouse table of spans (docs/clickhouse.md);
                               saved as OTLP JSON lines, one span a line

Add +https (jaeger+https://…) for TLS. --since and --until set the window
(default: the last hour). The window is fetched in slices (--fetch-slice); a
slice that returns --fetch-limit traces is cut in two and fetched again, down
to --fetch-min-slice, and one still full there is saved as the sample the
store returned (a note says which). Requests run --fetch-concurrency at a
time and are retried with backoff on HTTP 429 and 5xx. Credentials go in
--header or --token (or $TAILSCOPE_TOKEN), never in the URL: they are never
printed nor saved.

Examples:
  tailscope pull jaeger://jaeger.internal:16686 --since -2h -o traces/
  tailscope pull 'tempo+https://tempo.example.com?q={resource.service.name="api"}' --token "$T" -o traces/
  tailscope analyze traces/jaeger-*.jsonl
`

func runPull(e *env, args []string) error {
	fs := newFlags(e, "pull", pullUsage)
	var src sourceFlags
	var dir, since, until string
	var quiet bool
	fs.StringVarP(&dir, "output", "o", "", "the folder to save in (created if missing)")
	fs.StringVar(&since, "since", "", "the window's start (RFC 3339, or relative like -2h; default: an hour before --until)")
	fs.StringVar(&until, "until", "", "the window's end (RFC 3339, or relative like -1h; default: now)")
	fs.BoolVarP(&quiet, "quiet", "q", false, "no progress or notes on stderr")
	src.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one source URL (jaeger://, tempo://, zipkin:// or clickhouse://), got %d arguments", fs.NArg())
	}
	if dir == "" {
		return usagef("say where to save: -o DIR")
	}
	raw := fs.Arg(0)
	if !source.IsURL(raw) {
		return usagef("%q is not a source URL: want jaeger://HOST, tempo://HOST, zipkin://HOST or clickhouse://HOST/DATABASE", raw)
	}
	now := time.Now()
	s, err := parseWhen("since", since, now)
	if err != nil {
		return err
	}
	u, err := parseWhen("until", until, now)
	if err != nil {
		return err
	}
	if since != "" && until != "" && s >= u {
		return usagef("--since %s is not before --until %s: the window is empty", since, until)
	}
	opt, err := src.options(e, s, u, since != "", until != "", quiet)
	if err != nil {
		return err
	}
	src.m = newMeter(e, quiet)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("-o %s: not a folder", dir)
	}
	var st pulled
	if clickhouse.Claims(raw) {
		st, err = clickhouse.Open(context.Background(), raw, src.clickhouseOptions(e, opt, ingest.Options{}, quiet))
	} else {
		st, err = source.Open(context.Background(), raw, opt)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	path := filepath.Join(dir, st.FileName())
	var n int64
	err = writeFile(path, func(w io.Writer) error {
		var err error
		n, err = io.Copy(w, st)
		return err
	})
	if err != nil {
		return err
	}
	if !quiet {
		for _, note := range st.Notes() {
			fmt.Fprintf(e.stderr, "tailscope: note: %s\n", visible(note))
		}
		fmt.Fprintf(e.stderr, "tailscope: saved %s (%s) to %s\n", saved(st), units.Bytes(n), visible(path))
	}
	return nil
}

// headerName says whether s reads as an HTTP header name (and so may be
// repeated in a message: not a token pasted without its name).
func headerName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return !secret.Key(s) || strings.EqualFold(s, "authorization") || strings.EqualFold(s, "x-api-key")
}
