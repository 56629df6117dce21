// Tests of the progress meter: silent when short or off a terminal, throttled, cleared.

package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake time source the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestMeterSilentForShortRuns(t *testing.T) {
	var b bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	m := newMeterAt(&b, c.now)
	for i := 0; i < 10; i++ {
		c.t = c.t.Add(90 * time.Millisecond)
		m.bytes(int64(i)<<20, 100<<20)
	}
	m.done()
	if b.Len() != 0 {
		t.Errorf("meter wrote %q during a run shorter than %v", b.String(), meterDelay)
	}
}

func TestMeterDrawsThrottledAndClears(t *testing.T) {
	var b bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	m := newMeterAt(&b, c.now)
	draws := 0
	// 4 s at 50 MB/s, a call every 10 ms; 2 spans per kB.
	for i := 1; i <= 400; i++ {
		c.t = c.t.Add(10 * time.Millisecond)
		for k := 0; k < 1000; k++ {
			m.Spans(1)
		}
		before := b.Len()
		m.bytes(int64(i)*500_000, 400*500_000)
		if b.Len() != before {
			draws++
		}
	}
	// Drawing starts after 1 s and happens at most every 200 ms: 3 s → ≤ 16.
	if draws < 10 || draws > 16 {
		t.Errorf("%d redraws over 3 s after the delay, want about %d", draws, int((3*time.Second)/meterEvery))
	}
	out := b.String()
	last := out[strings.LastIndex(out, "\r")+1:]
	for _, want := range []string{"of 200.0 MB", "spans/s"} {
		if !strings.Contains(last, want) {
			t.Errorf("last line %q lacks %q", last, want)
		}
	}
	m.done()
	end := b.String()[len(out):]
	if strings.TrimSpace(strings.ReplaceAll(end, "\r", "")) != "" || !strings.HasSuffix(end, "\r") {
		t.Errorf("done wrote %q, want the line blanked", end)
	}
}

func TestMeterLine(t *testing.T) {
	m := &meter{read: 250_000_000, total: 1_000_000_000}
	m.spans.Store(2_000_000)
	got := m.line(2 * time.Second)
	want := "tailscope: read 250.0 MB of 1.0 GB (25%) · 2.0M spans · 1.0M spans/s · about 6s left"
	if got != want {
		t.Errorf("line = %q\nwant   %q", got, want)
	}
	m = &meter{read: 5_000}
	m.spans.Store(12)
	if got := m.line(4 * time.Second); got != "tailscope: read 5.0 kB · 12 spans · 3 spans/s" {
		t.Errorf("unknown total: line = %q", got)
	}
}

// TestNilMeterIsInert: off a terminal, or with -q, a command gets no meter
// (nil), and every method of a nil meter returns without touching it, so
// the readers' hooks need no checks.
func TestNilMeterIsInert(t *testing.T) {
	var b bytes.Buffer
	for _, quiet := range []bool{false, true} {
		if m := newMeter(&env{stderr: &b}, quiet); m != nil {
			t.Errorf("newMeter(not a terminal, quiet=%v) = %+v, want nil", quiet, m)
		}
	}
	var m *meter
	for _, c := range []struct {
		name string
		call func()
	}{
		{"bytes", func() { m.bytes(1, 2) }},
		{"Bytes", func() { m.Bytes(1, 2) }},
		{"Spans", func() { m.Spans(5000) }},
		{"fetched", func() { m.fetched("1 of 2 files") }},
		{"done", func() { m.done() }},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s on a nil meter panicked: %v", c.name, r)
				}
			}()
			c.call()
		}()
	}
	if b.Len() != 0 {
		t.Errorf("a command without a meter wrote %q to stderr", b.String())
	}
}

// TestNoProgressOffTerminal: a real run whose stderr is not a terminal
// (as in CI) writes nothing there.
func TestNoProgressOffTerminal(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"analyze", "../../samples/seed-chain/spans.jsonl"}, strings.NewReader(""), &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if errb.Len() != 0 {
		t.Errorf("stderr is not a terminal but got %q", errb.String())
	}
	if newMeter(&env{stderr: &errb}, false) != nil {
		t.Error("a meter on a buffer")
	}
}

// TestMeterConcurrent: bytes come from a reading goroutine while spans are
// delivered on another (the parallel JSON-lines reader); run with -race.
func TestMeterConcurrent(t *testing.T) {
	var b bytes.Buffer
	var mu sync.Mutex
	tm := time.Unix(0, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); tm = tm.Add(time.Millisecond); return tm }
	m := newMeterAt(&b, now)
	done := make(chan struct{})
	go func() {
		for i := int64(1); i <= 5000; i++ {
			m.bytes(i*1000, 5_000_000)
		}
		close(done)
	}()
	for i := 0; i < 50000; i++ {
		m.Spans(1)
	}
	<-done
	m.done()
	if got := m.spans.Load(); got != 50000 {
		t.Errorf("counted %d spans, want 50000", got)
	}
}
