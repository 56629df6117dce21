package source

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tailscope/tailscope/option"
)

// Stream is a fetch under way: reading it gives the API's JSON, slice by
// slice in window order. Read returns the error that ended the fetch, if
// one did. Close stops the fetch.
type Stream struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	f      *fetcher
}

func (s *Stream) Read(p []byte) (int, error) { return s.pr.Read(p) }

// Close stops the fetch and waits for its goroutines.
func (s *Stream) Close() error {
	s.cancel()
	s.pr.Close()
	<-s.done
	return nil
}

// Notes say what the reader of the stream should know about what it got:
// slices that rest on a sample, traces the store returned partially. They
// are complete once Read has returned io.EOF.
func (s *Stream) Notes() []string { return s.f.notesList() }

// Err is the error that ended the fetch (nil while it runs, or when it
// ended well): a reader that met a read error can say what failed without
// the position its decoder adds, which means nothing for a fetch.
func (s *Stream) Err() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.failed
}

// Progress is the fetch's state now.
func (s *Stream) Progress() Progress {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.prog
}

// Open starts fetching the window from the source named by raw (see
// Parse) and returns the stream of what comes back.
func Open(ctx context.Context, raw string, o Options) (*Stream, error) {
	t, err := parse(raw, o.Names)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults(t, time.Now())
	if !o.Since.Before(o.Until) {
		return nil, fmt.Errorf("%s: the window %s–%s is empty", t.Raw, o.Since.UTC().Format(time.RFC3339), o.Until.UTC().Format(time.RFC3339))
	}
	if w := o.Until.Sub(o.Since); o.Slice > 0 && w/o.Slice >= MaxSlices {
		slice := o.Names.Of(option.FetchSlice)
		return nil, fmt.Errorf("%s: %s %v cuts the %v window into %d slices, a request each at least: it cannot finish (at most %d; leave %s out to start from the whole window and cut only where the store's answer is full)",
			t.Raw, slice, o.Slice, w, w/o.Slice, MaxSlices, slice)
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	f := &fetcher{t: t, o: o, sem: make(chan struct{}, o.Concurrency), big: make(chan struct{}, 1)}
	f.prog.Source = t.Raw
	f.cond = sync.NewCond(&f.mu)
	s := &Stream{pr: pr, cancel: cancel, done: make(chan struct{}), f: f}
	go func() {
		defer close(s.done)
		err := f.run(ctx, pw)
		f.mu.Lock()
		f.failed = err
		f.mu.Unlock()
		pw.CloseWithError(err)
	}()
	return s, nil
}

// fetcher fetches one source.
type fetcher struct {
	t   *Target
	o   Options
	sem chan struct{} // one slot per request in flight
	big chan struct{} // the one slot that may read past its share (readBody)
	// tooLarge is set once an answer went over MaxResponse (readBody).
	tooLarge atomic.Bool

	mu      sync.Mutex
	cond    *sync.Cond
	prog    Progress
	head    *piece // the pieces not yet written, in window order
	waiting int    // pieces done and not yet written
	held    int    // the most pieces ever done and not yet written
	failed  error  // what ended the fetch, once it ended
	running int
	err     error
	// cursor is where the window's first cut has reached: the next
	// slice starts there (more); services are Jaeger's, or [""].
	cursor   time.Time
	services []string
	tail     *piece
	sampled  []sampledSlice
	partial  int             // Tempo traces returned PARTIAL
	partMsg  string          // the first PARTIAL message
	gone     int             // Tempo traces found by search, then not found
	noTime   map[string]bool // traces no span of which says when (no slice owns them)
}

// piece is a slice of the window (for Jaeger, of one service's spans).
type piece struct {
	from, to time.Time
	service  string
	state    int
	out      []byte
	next     *piece
}

const (
	pending = iota
	running
	done
)

// sampledSlice is a slice that stayed full at the floor.
type sampledSlice struct {
	from, to time.Time
	service  string
	n        int
}

// count updates the progress and reports it.
func (f *fetcher) count(fn func(*Progress)) {
	f.mu.Lock()
	fn(&f.prog)
	p := f.prog
	f.mu.Unlock()
	if f.o.Progress != nil {
		f.o.Progress(p)
	}
}

// run cuts the window, fetches the pieces on o.Concurrency workers and
// writes what they keep to w in window order. A worker takes the earliest
// piece not started, and none is started while 2×Concurrency finished
// pieces wait for an earlier one to be written: what is held in memory is
// bounded by 3×Concurrency−1 responses (those, and the ones then in
// flight), whatever the window.
func (f *fetcher) run(ctx context.Context, w io.Writer) error {
	services := []string{""}
	if f.t.API == Jaeger {
		var err error
		if services, err = f.jaegerServices(ctx); err != nil {
			return err
		}
	}
	// The window's first cut is made as the fetch goes, a slice at a
	// time (for each service), not up front: a window of years cut into
	// minutes is millions of slices, and most stretches of a store are
	// empty or sparse. By default the first cut is the whole window, and
	// a slice is cut in two only where the store returns a full answer.
	f.services, f.cursor = services, f.o.Since
	f.mu.Lock()
	f.more()
	f.mu.Unlock()
	var wg sync.WaitGroup
	for range f.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.work(ctx)
		}()
	}
	err := f.write(ctx, w)
	f.mu.Lock()
	if err != nil && f.err == nil {
		f.err = err
	}
	f.cond.Broadcast()
	f.mu.Unlock()
	wg.Wait()
	f.count(func(p *Progress) { p.Final, p.Failed = true, err != nil })
	return err
}

// write writes the pieces in order as they finish.
func (f *fetcher) write(ctx context.Context, w io.Writer) error {
	for {
		f.mu.Lock()
		for f.err == nil && f.head != nil && f.head.state != done {
			f.cond.Wait()
		}
		if f.err != nil {
			err := f.err
			f.mu.Unlock()
			return err
		}
		p := f.head
		if p == nil && f.more() {
			f.cond.Broadcast()
			f.mu.Unlock()
			continue
		}
		if p == nil {
			f.mu.Unlock()
			return nil
		}
		f.head = p.next
		if f.head == nil {
			f.tail = nil
		}
		f.waiting--
		f.cond.Broadcast()
		f.mu.Unlock()
		if len(p.out) > 0 {
			if _, err := w.Write(p.out); err != nil {
				return err // the reader closed the stream
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// work fetches pieces until none is left or the fetch failed.
func (f *fetcher) work(ctx context.Context) {
	for {
		f.mu.Lock()
		var p *piece
		for {
			if f.err != nil {
				f.mu.Unlock()
				return
			}
			p = f.head
			for p != nil && p.state != pending {
				p = p.next
			}
			if p != nil && (p == f.head || f.waiting < 2*f.o.Concurrency) {
				break
			}
			if p == nil && f.waiting < 2*f.o.Concurrency && f.more() {
				f.cond.Broadcast()
				continue
			}
			if p == nil && f.running == 0 && !f.cursor.Before(f.o.Until) {
				f.mu.Unlock()
				return
			}
			f.cond.Wait()
		}
		p.state = running
		f.running++
		f.mu.Unlock()

		canSplit := f.splittable(p)
		out, returned, full, err := f.fetch(ctx, p, canSplit)

		f.mu.Lock()
		f.running--
		switch {
		case err != nil:
			if f.err == nil {
				f.err = err
			}
		case full && canSplit:
			mid := f.mid(p)
			q := &piece{from: mid, to: p.to, service: p.service, next: p.next}
			p.to, p.next, p.state = mid, q, pending
			if f.tail == p {
				f.tail = q
			}
			f.prog.Split++
			f.prog.Slices++
		default:
			if full {
				f.sampled = append(f.sampled, sampledSlice{from: p.from, to: p.to, service: p.service, n: returned})
			}
			p.out, p.state = out, done
			f.waiting++
			f.held = max(f.held, f.waiting)
			f.prog.Done++
		}
		prog := f.prog
		f.cond.Broadcast()
		f.mu.Unlock()
		if f.o.Progress != nil {
			f.o.Progress(prog)
		}
	}
}

// more appends the window's next first-cut slice, one piece per service,
// and reports whether there was one (f.mu held).
func (f *fetcher) more() bool {
	if !f.cursor.Before(f.o.Until) {
		return false
	}
	from := f.cursor
	to := f.o.Until
	if f.o.Slice > 0 && from.Add(f.o.Slice).Before(to) {
		to = from.Add(f.o.Slice)
	}
	for _, svc := range f.services {
		p := &piece{from: from, to: to, service: svc}
		if f.tail == nil {
			f.head = p
		} else {
			f.tail.next = p
		}
		f.tail = p
		f.prog.Slices++
	}
	f.cursor = to
	return true
}

// splittable reports whether p may be cut in two: both halves at least the
// floor.
func (f *fetcher) splittable(p *piece) bool {
	return p.to.Sub(p.from) >= 2*f.o.MinSlice
}

// mid is where p is cut: its middle, on the API's granularity.
func (f *fetcher) mid(p *piece) time.Time {
	g := f.t.granularity()
	half := p.to.Sub(p.from) / 2 / g * g
	return p.from.Add(max(half, g))
}

// fetch asks for piece p. full reports that the store returned as many
// traces as asked for; then, when the piece may be cut, nothing more is
// fetched (the halves will be).
func (f *fetcher) fetch(ctx context.Context, p *piece, canSplit bool) (out []byte, returned int, full bool, err error) {
	switch f.t.API {
	case Jaeger:
		return f.jaeger(ctx, p, canSplit)
	case Tempo:
		return f.tempo(ctx, p, canSplit)
	}
	return f.zipkin(ctx, p, canSplit)
}

// kept counts traces kept.
func (f *fetcher) kept(n int) { f.count(func(p *Progress) { p.Traces += n }) }

// unplaced counts a trace no slice can own, once however many searches
// return it.
func (f *fetcher) unplaced(id string) {
	f.mu.Lock()
	if f.noTime == nil {
		f.noTime = map[string]bool{}
	}
	f.noTime[id] = true
	f.mu.Unlock()
}

// maxListed bounds the sampled slices a note lists one by one.
const maxListed = 5

// notesList says what the stream's reader should know.
func (f *fetcher) notesList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var notes []string
	s := append([]sampledSlice(nil), f.sampled...)
	sort.Slice(s, func(i, j int) bool {
		if !s[i].from.Equal(s[j].from) {
			return s[i].from.Before(s[j].from)
		}
		return s[i].service < s[j].service
	})
	for i, x := range s {
		if i == maxListed {
			notes = append(notes, fmt.Sprintf("%s: %d more slices stayed full at the floor of %v and rest on a sample too (%s raises what one search returns)", f.prog.Source, len(s)-maxListed, f.o.MinSlice, f.o.Names.Of(option.FetchLimit)))
			break
		}
		what := ""
		if x.service != "" {
			what = " of service " + x.service
		}
		notes = append(notes, fmt.Sprintf("%s: the store returned its first %d traces%s for %s; numbers for that slice rest on a sample", f.prog.Source, x.n, what, span(x.from, x.to)))
	}
	if f.partial > 0 {
		msg := ""
		if f.partMsg != "" {
			msg = " (" + f.partMsg + ")"
		}
		notes = append(notes, fmt.Sprintf("%s: %d traces came back PARTIAL%s: the spans Tempo left out are not in the numbers", f.prog.Source, f.partial, msg))
	}
	if n := len(f.noTime); n > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d traces have no span with a timestamp: no time slice can place them, so they are not read", f.prog.Source, n))
	}
	if f.gone > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d traces the search listed were not found when fetched (retention or a compaction in between)", f.prog.Source, f.gone))
	}
	return notes
}

// span writes a slice's times: the date once, then the times of day, to
// the precision they need.
func span(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	layout := "15:04:05.999999999"
	a := from.Format("2006-01-02 " + layout)
	b := to.Format(layout)
	if from.YearDay() != to.YearDay() || from.Year() != to.Year() {
		b = to.Format("2006-01-02 " + layout)
	}
	return strings.TrimSpace(a) + "–" + b + " UTC"
}

// FileName names a file for what the stream fetches, for `tailscope
// pull`: the API, the address and the window, e.g.
// jaeger-127.0.0.1_16686-20260102T100000Z-20260102T110000Z.jsonl.
func (s *Stream) FileName() string {
	const layout = "20060102T150405Z"
	host := strings.NewReplacer(":", "_", "/", "_", "[", "", "]", "").Replace(s.f.t.Base.Host)
	return fmt.Sprintf("%s-%s-%s-%s.jsonl", s.f.t.API, host, s.f.o.Since.UTC().Format(layout), s.f.o.Until.UTC().Format(layout))
}

// Remote serves source URLs to the readers in place of files (it is
// ingest.Options.Remote): a path written as a URL is fetched with these
// options.
type Remote struct {
	Options Options
}

// Claims reports whether path is a source URL.
func (Remote) Claims(path string) bool { return IsURL(path) }

// Open starts fetching path.
func (r Remote) Open(path string) (io.ReadCloser, error) {
	return Open(context.Background(), path, r.Options)
}

// number reads a JSON number as integer units (ns, µs): an integer, or a
// fraction or exponent form truncated, as the file readers take them;
// false when it is not a number.
func number(n json.Number) (int64, bool) {
	if v, err := n.Int64(); err == nil {
		return v, true
	}
	f, err := n.Float64()
	if err != nil || f != f || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// normID is a trace id as the search may spell it: hex, any case, leading
// zeros or not.
func normID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	t := strings.TrimLeft(id, "0")
	if t == "" && id != "" {
		return "0"
	}
	return t
}
