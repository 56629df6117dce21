// Reading from ClickHouse (clickhouse://, clickhouses://): the flags, and
// the readers' Remote that sends those URLs to source/clickhouse and the
// others to source.

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/source"
	"github.com/tailscope/tailscope/source/clickhouse"
)

// clickhouseFlags are what only a ClickHouse URL takes.
type clickhouseFlags struct {
	user string
	mode string
}

func (f *clickhouseFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.user, "clickhouse-user", "", "the user for a clickhouse:// URL (default $CLICKHOUSE_USER; the password is\n$CLICKHOUSE_PASSWORD, never a flag or the URL, never printed)")
	fs.StringVar(&f.mode, "clickhouse-mode", "auto", "how a clickhouse:// window is analysed: auto (computed on the server when it can be\nexactly, else every span pulled, with a note saying why), pushdown (on the server, or an\nerror saying why not), pull (every span pulled through the readers)")
}

// check checks the flags.
func (f *clickhouseFlags) check() error {
	switch f.mode {
	case "auto", "pushdown", "pull":
		return nil
	}
	return usagef("--clickhouse-mode %q: want auto, pushdown or pull", f.mode)
}

// pushdown sets lo to compute a ClickHouse window on the server as
// --clickhouse-mode says, telling the user at once (unless quiet) why a
// push-down was declined.
func (f *clickhouseFlags) pushdown(e *env, lo *pipeline.Options, m *meter, quiet bool) {
	r, ok := lo.Ingest.Remote.(remotes)
	if !ok || f.mode == "pull" {
		return
	}
	lo.Pushdown, lo.PushdownOnly = r.ch, f.mode == "pushdown"
	if !quiet {
		lo.Note = func(s string) {
			m.done()
			fmt.Fprintf(e.stderr, "tailscope: note: %s\n", visible(s))
		}
	}
}

// remotes serves ClickHouse URLs from source/clickhouse and the other
// source URLs from source.
type remotes struct {
	ch  clickhouse.Remote
	src source.Remote
}

func (r remotes) Claims(path string) bool { return r.ch.Claims(path) || r.src.Claims(path) }

func (r remotes) Open(path string) (io.ReadCloser, error) {
	if r.ch.Claims(path) {
		return r.ch.Open(path)
	}
	return r.src.Open(path)
}

// clickhouseOptions are the ClickHouse read's options: the window, the
// hop filters, the headers and the fetch's timeout and retries from the
// shared fetch options, the user and password from the flag and the
// environment.
func (f *sourceFlags) clickhouseOptions(e *env, so source.Options, o ingest.Options, quiet bool) clickhouse.Options {
	co := clickhouse.Options{Since: so.Since, Until: so.Until, HopBy: o.HopBy, Hops: o.Hops, ExcludeHops: o.ExcludeHops,
		Header: so.Header, Timeout: so.Timeout, Retries: so.Retries, Backoff: so.Backoff,
		User: f.ch.user, Password: os.Getenv("CLICKHOUSE_PASSWORD"), Names: flagNames}
	if co.User == "" {
		co.User = os.Getenv("CLICKHOUSE_USER")
	}
	if !quiet {
		co.Progress = f.clickhouseProgress(e)
	}
	return co
}

// clickhouseProgress shows the read on the meter and says on stderr what
// it read.
func (f *sourceFlags) clickhouseProgress(e *env) func(clickhouse.Progress) {
	var mu sync.Mutex
	return func(p clickhouse.Progress) {
		mu.Lock()
		defer mu.Unlock()
		verb := "reading"
		if p.Final {
			verb = "read"
		}
		line := fmt.Sprintf("%s %s: %d spans · %s · %d requests", verb, p.Source, p.Rows, units.Bytes(p.Bytes), p.Requests)
		if p.Pushdown {
			line = fmt.Sprintf("computing on the server %s: %d spans pulled · %s · %d requests", p.Source, p.Rows, units.Bytes(p.Bytes), p.Requests)
			if p.Final {
				line = fmt.Sprintf("computed on the server %s: %d spans aggregated, %d pulled · %s over the wire · %d requests", p.Source, p.Aggregated, p.Rows, units.Bytes(p.Bytes), p.Requests)
			}
		}
		f.m.fetched(line)
		if !p.Final {
			return
		}
		f.m.fetched("")
		f.m.done()
		if !p.Failed {
			fmt.Fprintf(e.stderr, "tailscope: %s\n", visible(strings.TrimSpace(line)))
		}
	}
}

// pulled is what pull saves: a source's stream or a ClickHouse read.
type pulled interface {
	io.ReadCloser
	FileName() string
	Notes() []string
}

// saved says what a pull saved.
func saved(st pulled) string {
	switch s := st.(type) {
	case *source.Stream:
		return fmt.Sprintf("%d traces", s.Progress().Traces)
	case *clickhouse.Stream:
		return fmt.Sprintf("%d spans", s.Progress().Rows)
	}
	return "the window"
}
