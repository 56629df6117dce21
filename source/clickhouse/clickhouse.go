// Package clickhouse reads spans from a ClickHouse table over
// ClickHouse's HTTP interface, so that a URL
//
//	clickhouse://HOST[:8123]/DATABASE?table=otel_traces
//	clickhouses://HOST[:8443]/DATABASE?table=otel_traces   (TLS)
//
// stands wherever a path to span logs is accepted. The table is the
// OpenTelemetry Collector clickhouseexporter's otel_traces by default;
// other schemas are read through a column mapping (Schema, and
// docs/clickhouse.md).
//
// What is pushed into the query: the window (--since/--until, on the
// table's time column, which the exporter partitions by), the hop filters
// when the hop is a function of columns (--hops/--exclude-hops under the
// default --hop-by, service, name or attr:KEY), the columns tailscope reads (and
// of the events, only the exception events' attributes), and a fixed
// order of the rows (so that the stream, hence the trace sample, is the
// same from run to run). What is pulled: every span of the window that
// passes those filters, streamed row by row (RowBinaryWithNamesAndTypes,
// gzip-compressed off the loopback) and written as OTLP JSON lines (one
// span a line) into the same readers that read exported files (package
// ingest): the numbers of a ClickHouse window and of an OTLP export of the
// same spans are the same by construction. Memory is bounded by one row,
// not by the window. Pushdown (state.go, pushdown.go, attr.go) computes a
// window's analysis state on the server instead, attribution included
// (docs/clickhouse.md).
//
// The package only fetches and re-spells rows: it must not decode spans
// into tailscope's model (the readers do), nor print anything, nor show a
// credential (a password is never in the URL, and server text is masked
// before it is quoted).
package clickhouse

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/source"
)

// Schemes are the URL schemes of this source.
const (
	Scheme    = "clickhouse"
	SchemeTLS = "clickhouses"
)

// Claims reports whether path names a ClickHouse source.
func Claims(path string) bool {
	s, _, ok := strings.Cut(path, "://")
	if !ok {
		return false
	}
	s = strings.ToLower(s)
	return s == Scheme || s == SchemeTLS
}

// Target is a parsed ClickHouse URL.
type Target struct {
	// Base is the HTTP(S) address of the interface (no path).
	Base *url.URL
	// Database and Table name the table read.
	Database, Table string
	// Schema is the column mapping (Schemas[name], with the URL's col.*
	// parameters applied).
	Schema Schema
	// Raw is the URL as the user wrote it, for messages.
	Raw string
	// Compress asks the server for gzip answers (compress=1, the default
	// but on a loopback address, where the wire costs nothing).
	Compress bool
}

// Default parts of a URL.
const (
	DefaultDatabase = "default"
	DefaultTable    = "otel_traces"
	DefaultPort     = "8123"
	DefaultPortTLS  = "8443"
)

// identRE is a name Parse accepts for a database, a table or a column: it
// is quoted in the SQL, but a name with other characters is more likely a
// mistake than a table.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.$-]{0,127}$`)

// Parse reads clickhouse[s]://HOST[:PORT][/DATABASE][?table=T&schema=S&col.FIELD=COLUMN…].
// Credentials in the URL are refused: the URL is printed in messages and
// reports; they belong in Options.User and Options.Password (the
// environment) or a header.
func Parse(raw string) (*Target, error) { return parse(raw, nil) }

// parse is Parse whose errors name the settings by names.
func parse(raw string, names option.Names) (*Target, error) {
	shown := secret.Scrub(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("source %q: %v", shown, secret.Scrub(err.Error()))
	}
	scheme := strings.ToLower(u.Scheme)
	transport, port := "http", DefaultPort
	switch scheme {
	case Scheme:
	case SchemeTLS:
		transport, port = "https", DefaultPortTLS
	default:
		return nil, fmt.Errorf("source %q: not a ClickHouse URL (want clickhouse:// or clickhouses://)", shown)
	}
	if u.User != nil {
		return nil, fmt.Errorf("source %q: credentials in the URL would be printed in messages and reports; give the user with %s or $CLICKHOUSE_USER and the password with $CLICKHOUSE_PASSWORD", shown, names.Of(option.ClickHouseUser))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("source %q: no host", shown)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("source %q: a fragment (#…) means nothing here", shown)
	}
	t := &Target{Raw: shown, Database: DefaultDatabase, Table: DefaultTable, Compress: !loopback(u.Hostname())}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if strings.Contains(p, "/") {
			return nil, fmt.Errorf("source %q: the path is the database, one name (got %q)", shown, p)
		}
		t.Database = p
	}
	q := u.Query()
	name := DefaultSchema
	if s := q.Get("schema"); s != "" {
		name = s
	}
	sc, ok := Schemas[name]
	if !ok {
		return nil, fmt.Errorf("source %q: unknown schema %q (known: %s; or map the columns with col.FIELD=COLUMN)", shown, name, strings.Join(SchemaNames(), ", "))
	}
	sc = sc.clone()
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch {
		case k == "table":
			t.Table = v
		case k == "schema":
		case k == "compress":
			switch v {
			case "1", "true":
				t.Compress = true
			case "0", "false":
				t.Compress = false
			default:
				return nil, fmt.Errorf("source %q: compress=%q: want 1 or 0", shown, v)
			}
		case strings.HasPrefix(k, "col."):
			field := strings.TrimPrefix(k, "col.")
			if !knownField(field) {
				return nil, fmt.Errorf("source %q: %s: unknown field %q (fields: %s)", shown, k, field, strings.Join(FieldNames(), ", "))
			}
			for _, c := range strings.Split(v, ",") {
				if v != "" && !identRE.MatchString(c) {
					return nil, fmt.Errorf("source %q: %s=%q: want a column name", shown, k, v)
				}
			}
			if strings.Contains(v, ",") && field != FieldResource && field != FieldAttrs {
				return nil, fmt.Errorf("source %q: %s=%q: only resource_attrs and span_attrs join several columns (a,b)", shown, k, v)
			}
			sc.Columns[field] = v // "" leaves an optional field out
		default:
			return nil, fmt.Errorf("source %q: unknown parameter %q (ClickHouse takes table=, schema=, compress= and col.FIELD=COLUMN; the window is %s/%s)", shown, k, names.Of(option.Since), names.Of(option.Until))
		}
	}
	for what, v := range map[string]string{"database": t.Database, "table": t.Table} {
		if !identRE.MatchString(v) {
			return nil, fmt.Errorf("source %q: the %s %q is not a name ClickHouse would have (letters, digits, _ . $ -)", shown, what, v)
		}
	}
	t.Schema = sc
	host := u.Host
	if u.Port() == "" {
		host = strings.TrimSuffix(host, ":") + ":" + port
	}
	t.Base = &url.URL{Scheme: transport, Host: host, Path: "/"}
	return t, nil
}

// loopback reports whether host names this machine.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Options say what to read and how.
type Options struct {
	// Since and Until bound the window: spans whose start lies in
	// [Since, Until). Zero Until is now; zero Since is an hour before
	// Until (source.DefaultWindow), as for the other sources.
	Since, Until time.Time
	// HopBy, Hops and ExcludeHops are the read's hop definition and
	// filters (ingest.Options): pushed into the query where the hop is a
	// function of columns. The readers apply them again, so the query
	// only ever keeps more than they do.
	HopBy             string
	Hops, ExcludeHops *regexp.Regexp
	// User and Password are sent as ClickHouse's X-ClickHouse-User and
	// X-ClickHouse-Key headers. Never printed.
	User, Password string
	// Header is sent with every request (never printed).
	Header http.Header
	// Timeout bounds the wait for the answer to begin, and any pause in
	// it (source.DefaultTimeout).
	Timeout time.Duration
	// Retries and Backoff: a request that met 429, a 5xx or a network
	// error before any row was read is tried again (source's defaults).
	Retries int
	Backoff time.Duration
	// MaxRow bounds one row of the answer, in bytes (DefaultMaxRow).
	MaxRow int
	// Client makes the requests (a fresh http.Client when nil).
	Client *http.Client
	// Progress, when set, is told how the read goes.
	Progress func(Progress)
	// Names names the settings the read's messages mention (the window,
	// Timeout, User, and the reader options a push-down declines:
	// option.Since, option.FetchTimeout, option.ClickHouseUser, …) as the
	// caller's user knows them; nil: by option's own names.
	Names option.Names
}

// DefaultMaxRow bounds a row: a span with its attributes.
const DefaultMaxRow = 16 << 20

// Progress is how a read is going.
type Progress struct {
	Source string
	// Rows are the spans read, Bytes the bytes of the answers, Requests
	// the HTTP requests made.
	Rows, Bytes int64
	Requests    int
	Final       bool
	Failed      bool
	// Pushdown says the read computes the state on the server
	// (Pushdown): Rows are then the spans pulled (outcome groups' and the
	// trace sample's), and Aggregated, once Final, the spans aggregated.
	Pushdown   bool
	Aggregated int64
}

func (o Options) withDefaults(now time.Time) Options {
	if o.Until.IsZero() {
		o.Until = now
	}
	if o.Since.IsZero() {
		o.Since = o.Until.Add(-source.DefaultWindow)
	}
	if o.Timeout <= 0 {
		o.Timeout = source.DefaultTimeout
	}
	if o.Retries == 0 {
		o.Retries = source.DefaultRetries
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = source.DefaultBackoff
	}
	if o.MaxRow <= 0 {
		o.MaxRow = DefaultMaxRow
	}
	c := &http.Client{}
	if o.Client != nil {
		cc := *o.Client
		c = &cc
	}
	if c.CheckRedirect == nil {
		c.CheckRedirect = source.SameOrigin
	}
	o.Client = c
	return o
}

// Stream is a read under way: reading it gives OTLP JSON lines, one span
// a line, in the query's order. Read returns the error that ended the
// read, if one did.
type Stream struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	c      *client

	mu     sync.Mutex
	err    error
	notes  []string
	prog   Progress
	target *Target
}

func (s *Stream) Read(p []byte) (int, error) { return s.pr.Read(p) }

// Close stops the read and waits for it.
func (s *Stream) Close() error {
	s.cancel()
	s.pr.Close()
	<-s.done
	return nil
}

// Err is the error that ended the read (nil while it runs or when it
// ended well).
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Notes say what the reader of the stream should know: what the server
// applied, columns the table lacks. Complete once Read returned io.EOF.
func (s *Stream) Notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.notes...)
}

// Progress is the read's state now.
func (s *Stream) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prog
}

// Open checks the table's columns and starts reading the window from the
// table raw names (see Parse).
func Open(ctx context.Context, raw string, o Options) (*Stream, error) {
	t, err := parse(raw, o.Names)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults(time.Now())
	if !o.Since.Before(o.Until) {
		return nil, fmt.Errorf("%s: the window %s–%s is empty", t.Raw, o.Since.UTC().Format(time.RFC3339), o.Until.UTC().Format(time.RFC3339))
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{cancel: cancel, done: make(chan struct{}), target: t}
	s.prog.Source = t.Raw
	s.c = &client{t: t, o: o, report: s.report}
	plan, err := s.c.plan(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	s.notes = append(s.notes, plan.notes...)
	pr, pw := io.Pipe()
	s.pr = pr
	go func() {
		defer close(s.done)
		n, err := s.c.stream(ctx, plan, pw)
		s.mu.Lock()
		s.err = err
		if err == nil {
			s.notes = append(s.notes, plan.summary(n, s.prog.Bytes))
		}
		s.mu.Unlock()
		s.report(func(p *Progress) { p.Final, p.Failed = true, err != nil })
		pw.CloseWithError(err)
	}()
	return s, nil
}

// report updates the progress and tells Options.Progress.
func (s *Stream) report(fn func(*Progress)) {
	s.mu.Lock()
	fn(&s.prog)
	p := s.prog
	s.mu.Unlock()
	if s.c.o.Progress != nil {
		s.c.o.Progress(p)
	}
}

// Remote serves ClickHouse URLs to the readers in place of files (an
// ingest.Remote).
type Remote struct {
	Options Options
}

// Claims reports whether path is a ClickHouse URL.
func (Remote) Claims(path string) bool { return Claims(path) }

// Open starts reading path.
func (r Remote) Open(path string) (io.ReadCloser, error) {
	return Open(context.Background(), path, r.Options)
}

// FileName is a name for the stream saved as a file (pull): the store,
// the address, the table and the window, OTLP JSON lines.
func (s *Stream) FileName() string {
	const layout = "20060102T150405Z"
	host := strings.NewReplacer(":", "_", "/", "_", "[", "", "]", "").Replace(s.target.Base.Host)
	return fmt.Sprintf("clickhouse-%s-%s.%s-%s-%s.jsonl", host, s.target.Database, s.target.Table,
		s.c.o.Since.UTC().Format(layout), s.c.o.Until.UTC().Format(layout))
}
