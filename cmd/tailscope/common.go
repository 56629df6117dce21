// What every command that reads logs shares: flag parsing, the input flags, loading the logs, colour.

package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/report"
)

// newFlags makes a command's flag set; --help prints usage to stdout.
func newFlags(e *env, name, usage string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(e.stdout, usage)
		fmt.Fprintf(e.stdout, "\nFlags:\n%s", fs.FlagUsages())
	}
	return fs
}

// parse parses flags, mapping --help and flag mistakes to our errors.
// A number flag must be finite: NaN passes every range check (all its
// comparisons are false) and would panic or silently pass gates later.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usageError{err.Error()}
	}
	var bad error
	fs.Visit(func(f *pflag.Flag) {
		if t := f.Value.Type(); bad != nil || t != "float64" && t != "float32" {
			return
		}
		if v, err := strconv.ParseFloat(f.Value.String(), 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			bad = usagef("--%s %s: want a finite number", f.Name, f.Value.String())
		}
	})
	return bad
}

// inputFlags are the flags of every command that reads logs.
type inputFlags struct {
	input       string
	hopBy       string
	maps        []string
	strict      bool
	quiet       bool
	since       string
	until       string
	exclude     []string
	hops        string
	excludeHops string
	maxRecord   int
	maxSpill    int64
	sampleSpans int
	maxHops     int
	src         sourceFlags
}

func (f *inputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.input, "input", "auto", "input format: auto (sniffed from content), "+strings.Join(ingest.Formats, ", "))
	fs.StringVar(&f.hopBy, "hop-by", "", "what names a hop: hop, service, name, service+name, peer, attr:KEY\n(default: hop for flat logs, service+name for trace formats)")
	fs.StringArrayVar(&f.maps, "map", nil, "FIELD=KEY: read a canonical field from another key of flat JSON/CSV/Parquet\n(repeatable or comma-separated; fields: "+strings.Join(ingest.FlatFields, ", ")+")")
	fs.BoolVar(&f.strict, "strict", false, "fail (exit 1) if any record is skipped, listing the first positions")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress or notes on stderr")
	fs.StringVar(&f.since, "since", "", "keep spans starting at or after this time (RFC 3339, or relative like -2h)")
	fs.StringVar(&f.until, "until", "", "keep spans starting before this time (RFC 3339, or relative like -1h)")
	fs.StringArrayVar(&f.exclude, "exclude-window", nil, "FROM/UNTIL: leave out spans starting in this window (RFC 3339 or relative times),\ne.g. an incident the report names; repeatable")
	fs.StringVar(&f.hops, "hops", "", "keep only hops matching this regular expression")
	fs.StringVar(&f.excludeHops, "exclude-hops", "", "drop hops matching this regular expression")
	fs.IntVar(&f.maxRecord, "max-record", ingest.DefaultMaxRecord, "largest line or JSON document accepted, bytes (protects memory)")
	fs.Int64Var(&f.maxSpill, "max-spill", ingest.DefaultMaxSpill, "largest temporary copy of a Parquet input read from stdin or a compressed file, bytes")
	fs.IntVar(&f.sampleSpans, "sample-spans", analyze.DefaultSampleSpans, "spans kept whole for call trees, retry yield and replay; larger logs use a\ndeterministic sample of traces (per-hop percentiles stay over all spans)")
	fs.IntVar(&f.maxHops, "max-hops", analyze.DefaultMaxHops, "most distinct hops read (protects memory: a few KB each); more is an error\nthat suggests a --hop-by giving fewer")
	f.src.register(fs)
}

// Times --since and --until may name: those whose Unix nanoseconds an
// int64 holds (1677-09-21 to 2262-04-11). Beyond, UnixNano wraps and a
// filter would keep every span.
var (
	minWhen = time.Unix(0, math.MinInt64)
	maxWhen = time.Unix(0, math.MaxInt64)
)

func parseWhen(flag, s string, now time.Time) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if d, derr := time.ParseDuration(s); derr == nil {
		if d > 0 {
			d = -d
		}
		t, err = now.Add(d), nil
	}
	if err != nil {
		return 0, usagef("--%s %q: want RFC 3339 (2026-01-02T15:04:05Z) or a relative duration like -2h", flag, s)
	}
	if t.Before(minWhen) || t.After(maxWhen) {
		return 0, usagef("--%s %q: out of range: want a time between 1677-09-22 and 2262-04-11", flag, s)
	}
	return t.UnixNano(), nil
}

func (f *inputFlags) options(e *env) (ingest.Options, error) {
	o := ingest.Options{Format: f.input, HopBy: f.hopBy, Stdin: e.stdin, MaxRecord: f.maxRecord, MaxSpill: f.maxSpill, Names: flagNames}
	if f.input != "auto" {
		ok := false
		for _, x := range ingest.Formats {
			ok = ok || x == f.input
		}
		if !ok {
			return o, usagef("--input %q: want auto, %s", f.input, strings.Join(ingest.Formats, ", "))
		}
	}
	if f.maxSpill <= 0 {
		return o, usagef("--max-spill %d: want a size in bytes above 0", f.maxSpill)
	}
	// A limit of 0 or less would mean "the default" deep inside, or
	// nothing at all: the user asked for something else.
	for _, x := range []struct {
		flag, want string
		v          int
	}{{"max-record", "a size in bytes above 0", f.maxRecord}, {"sample-spans", "a number of spans above 0", f.sampleSpans}, {"max-hops", "a number of hops above 0", f.maxHops}} {
		if x.v <= 0 {
			return o, usagef("--%s %d: want %s", x.flag, x.v, x.want)
		}
	}
	if err := f.src.ch.check(); err != nil {
		return o, err
	}
	if !ingest.ValidHopBy(f.hopBy) {
		return o, usagef("--hop-by %q: want hop, service, name, service+name, peer or attr:KEY", f.hopBy)
	}
	m, err := ingest.ParseMap(f.maps)
	if err != nil {
		// ParseMap names the pair at fault; the flag is spelled here.
		return o, usageError{flagNames(option.Map) + " " + err.Error()}
	}
	o.Map = m
	now := time.Now()
	if o.Since, err = parseWhen("since", f.since, now); err != nil {
		return o, err
	}
	if o.Until, err = parseWhen("until", f.until, now); err != nil {
		return o, err
	}
	// Given is set, whatever the time: the epoch is not "no bound".
	o.HasSince, o.HasUntil = f.since != "", f.until != ""
	if f.since != "" && f.until != "" && o.Since >= o.Until {
		return o, usagef("--since %s is not before --until %s: no span could be kept", f.since, f.until)
	}
	for _, w := range f.exclude {
		from, until, ok := strings.Cut(w, "/")
		if !ok {
			return o, usagef("--exclude-window %q: want FROM/UNTIL, e.g. 2026-01-02T15:00:00Z/2026-01-02T15:10:00Z", w)
		}
		a, err := parseWhen("exclude-window", from, now)
		if err != nil {
			return o, err
		}
		b, err := parseWhen("exclude-window", until, now)
		if err != nil {
			return o, err
		}
		if a >= b {
			return o, usagef("--exclude-window %q: %s is not before %s", w, from, until)
		}
		o.Exclude = append(o.Exclude, ingest.Window{From: a, Until: b})
	}
	for _, x := range []struct {
		flag, re string
		dst      **regexp.Regexp
	}{{"hops", f.hops, &o.Hops}, {"exclude-hops", f.excludeHops, &o.ExcludeHops}} {
		if x.re == "" {
			continue
		}
		re, err := regexp.Compile(x.re)
		if err != nil {
			return o, usagef("--%s: %v", x.flag, err)
		}
		*x.dst = re
	}
	// A path written as a URL is a tracing backend's query API.
	if o.Remote, err = f.src.remote(e, o, f.quiet); err != nil {
		return o, err
	}
	return o, nil
}

// inputs is the preamble of a command that reads paths: at least one
// path, and the readers' options from the input flags; given the command's
// output (-o, "" for stdout), also that it is none of the paths (commands
// that read more than paths call notAnInput with them all instead).
func (f *inputFlags) inputs(e *env, paths []string, output ...string) (ingest.Options, error) {
	if len(paths) == 0 {
		return ingest.Options{}, usagef("no input: give one or more files, directories, globs, or - for stdin")
	}
	opt, err := f.options(e)
	if err != nil {
		return ingest.Options{}, err
	}
	for _, o := range output {
		if err := notAnInput(e, o, paths); err != nil {
			return ingest.Options{}, err
		}
	}
	return opt, nil
}

// read is the pipeline's options from the input flags and the readers'
// options, and the meter that shows the read's progress on stderr (nil
// with --quiet or off a terminal), which a backend's fetch reports to too.
func (f *inputFlags) read(e *env, opt ingest.Options) (pipeline.Options, *meter) {
	lo := pipeline.Options{Ingest: opt, SampleSpans: f.sampleSpans, MaxHops: f.maxHops}
	m := newMeter(e, f.quiet)
	if m != nil {
		lo.Progress = m
	}
	f.src.m = m
	f.src.ch.pushdown(e, &lo, m, f.quiet)
	return lo, m
}

// load reads the logs a command works on (package pipeline) as the input
// flags say: progress on stderr, --strict, the reader's notes and skips.
func load(e *env, paths []string, f *inputFlags) (*pipeline.Logs, error) {
	opt, err := f.inputs(e, paths)
	if err != nil {
		return nil, err
	}
	lo, m := f.read(e, opt)
	l, err := pipeline.Read(paths, lo)
	m.done()
	if err != nil {
		return nil, err
	}
	st := l.Stats
	if f.strict {
		// Every record read, and every file under a path read or
		// accounted for.
		if err := pipeline.Strict(st, flagNames); err != nil {
			return nil, err
		}
	}
	if !f.quiet {
		for _, n := range st.Notes {
			fmt.Fprintf(e.stderr, "tailscope: note: %s\n", visible(n))
		}
	}
	if !f.quiet && st.Skipped > 0 {
		fmt.Fprintf(e.stderr, "tailscope: skipped %d of %d records", st.Skipped, st.Read)
		if len(st.Errors) > 0 {
			fmt.Fprintf(e.stderr, "; first: %s", visible(st.Errors[0].Error()))
		}
		fmt.Fprintln(e.stderr)
	}
	if st.Used == 0 { // not len(l.Spans): one trace over --sample-spans leaves an empty sample
		if st.Filtered > 0 {
			return nil, fmt.Errorf("no usable spans in %s (read %d, filtered %d, skipped %d)", strings.Join(paths, ", "), st.Read, st.Filtered, st.Skipped)
		}
		return nil, fmt.Errorf("no usable spans in %s (read %d, skipped %d)", strings.Join(paths, ", "), st.Read, st.Skipped)
	}
	return l, nil
}

// renderOptions decides colour: only on a terminal and never with NO_COLOR.
// The reports' hints name settings by the flags (flagNames).
func renderOptions(e *env, output string) report.Options {
	if output != "" || os.Getenv("NO_COLOR") != "" {
		return report.Options{Names: flagNames}
	}
	f, ok := e.stdout.(*os.File)
	if !ok {
		return report.Options{Names: flagNames}
	}
	fi, err := f.Stat()
	return report.Options{Color: err == nil && fi.Mode()&os.ModeCharDevice != 0, Names: flagNames}
}
