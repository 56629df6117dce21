// The progress meter on stderr: bytes, spans, rate and time left, only on a terminal.

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tailscope/tailscope/internal/units"
)

// meter shows how a long read is going on stderr: bytes read, spans, spans
// per second and, when the inputs' total size is known, the share done and
// an estimate of the time left. It speaks only to a person: it stays
// silent on a non-terminal (pipes, CI, tests), with -q, and for the first
// second (a short run should not flicker). A nil *meter does nothing, so
// callers need no checks. It is safe for concurrent use: a reader may
// report bytes from its reading goroutine while spans are delivered on
// another.
type meter struct {
	spans atomic.Int64

	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	start time.Time
	last  time.Time // last redraw
	width int       // length of the line drawn, to blank it
	read  int64
	total int64
	fetch string // what a fetch from a source URL has done, when one runs
}

// Timing of the meter.
const (
	meterDelay = time.Second            // nothing before this
	meterEvery = 200 * time.Millisecond // at most five redraws a second
)

// newMeter returns a meter on stderr when stderr is a terminal and the user
// did not ask for quiet; nil otherwise.
func newMeter(e *env, quiet bool) *meter {
	if quiet || !isTerminal(e.stderr) {
		return nil
	}
	return newMeterAt(e.stderr, time.Now)
}

func newMeterAt(w io.Writer, now func() time.Time) *meter {
	return &meter{w: w, now: now, start: now()}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// bytes is what the reader reports through pipeline.Progress.Bytes (the
// read's ingest.ProgressSink).
func (m *meter) bytes(read, total int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read, m.total = read, total
	m.tick()
}

// Bytes is bytes for package logs' Progress.
func (m *meter) Bytes(read, total int64) { m.bytes(read, total) }

// Spans counts n spans at once (a reader's goroutine counts in batches, so
// that the counter is not a point of contention) and gives the meter a
// chance to redraw every few thousand spans.
func (m *meter) Spans(n int64) {
	if m == nil || n == 0 {
		return
	}
	if after := m.spans.Add(n); after>>12 != (after-n)>>12 {
		m.mu.Lock()
		m.tick()
		m.mu.Unlock()
	}
}

// fetched shows what a fetch from a source URL has done ("" when it is
// over), in front of the read's counts.
func (m *meter) fetched(s string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fetch = s
	m.tick()
}

// tick redraws when it is time to; m.mu is held.
func (m *meter) tick() {
	t := m.now()
	if t.Sub(m.start) < meterDelay || t.Sub(m.last) < meterEvery {
		return
	}
	m.last = t
	m.draw(m.line(t.Sub(m.start)))
}

// draw rewrites the current line: a carriage return, the text, and spaces
// over what is left of a longer previous line (no escape sequences, so a
// dumb terminal shows it too).
func (m *meter) draw(s string) {
	n := len([]rune(s))
	pad := ""
	if m.width > n {
		pad = strings.Repeat(" ", m.width-n)
	}
	fmt.Fprintf(m.w, "\r%s%s", s, pad)
	m.width = n
}

// done blanks the meter's line, if it drew one, so that the report or the
// next message starts on a clean line.
func (m *meter) done() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.width == 0 {
		return
	}
	fmt.Fprintf(m.w, "\r%s\r", strings.Repeat(" ", m.width))
	m.width = 0
}

// line is the meter's text after elapsed time.
func (m *meter) line(elapsed time.Duration) string {
	var b strings.Builder
	if m.fetch != "" {
		b.WriteString("tailscope: " + m.fetch + " · read ")
	} else {
		b.WriteString("tailscope: read ")
	}
	b.WriteString(units.Bytes(m.read))
	if m.total > 0 {
		fmt.Fprintf(&b, " of %s (%d%%)", units.Bytes(m.total), min(100, m.read*100/m.total))
	}
	secs := elapsed.Seconds()
	spans := float64(m.spans.Load())
	fmt.Fprintf(&b, " · %s spans", units.CountShort(spans))
	if secs > 0 {
		fmt.Fprintf(&b, " · %s spans/s", units.CountShort(spans/secs))
	}
	if m.total > 0 && m.read > 0 && m.read < m.total && secs > 0 {
		left := time.Duration(float64(m.total-m.read) / (float64(m.read) / secs) * float64(time.Second))
		fmt.Fprintf(&b, " · about %s left", units.ETA(left))
	}
	return b.String()
}
