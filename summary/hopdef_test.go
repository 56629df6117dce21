package summary_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/summary"
)

// Summaries made with different --hop-by (or a --map of a field a hop is
// made of) merged into a report whose every hop mixed two things. A
// summary records what a hop is; summaries that differ are refused with
// both definitions named, whichever comes first, whether merged or read
// beside logs; the same options merge as before.
func TestHopDefMismatchRefused(t *testing.T) {
	make1 := func(hopBy string, m map[string]string) *summary.Summary {
		s, err := pipeline.Summarize([]string{"../samples/seed-chain/spans.jsonl"}, pipeline.Options{Ingest: ingest.Options{HopBy: hopBy, Map: m}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	decoded := func(s *summary.Summary) *summary.Summary {
		d, err := summary.Decode(summary.Encode(s))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cases := []struct {
		a, b *summary.Summary
		ok   bool
	}{
		{make1("", nil), make1("", nil), true},
		{make1("hop", nil), make1("hop", nil), true},
		{make1("", nil), make1("hop", nil), false},
		{make1("hop", nil), make1("hop", map[string]string{"hop": "op"}), false},
		{make1("hop", map[string]string{"trace_id": "tid"}), make1("hop", nil), true}, // not a hop field
		{make1("attr:x", nil), make1("attr:y", nil), false},
	}
	for i, c := range cases {
		for _, order := range [][2]*summary.Summary{{c.a, c.b}, {c.b, c.a}} {
			a, b := decoded(order[0]), decoded(order[1])
			_, err := summary.Merge(a, b)
			if c.ok != (err == nil) {
				t.Errorf("case %d (%q, %q): merge error %v, want ok=%v", i, a.HopDef, b.HopDef, err, c.ok)
			}
			if err != nil && (!errors.Is(err, summary.ErrHopDef) || !strings.Contains(err.Error(), a.HopDef) || !strings.Contains(err.Error(), b.HopDef)) {
				t.Errorf("case %d: %v does not name both definitions", i, err)
			}
		}
	}
}

// A version 2 summary (no hop definition) still reads, with the hop
// definition unknown: it predates the record.
func TestVersion2StillReads(t *testing.T) {
	b := summary.Encode(small1(t))
	head := len(summary.Magic) + 2
	n := binary.LittleEndian.Uint64(b[head+4:])
	// HopDef is HEAD's last field; "" is one byte (its length, 0).
	if b[head+12+int(n)-1] != 0 {
		t.Fatal("the test expects an empty HopDef at HEAD's end")
	}
	v1 := append([]byte{}, b[:head+12+int(n)-1]...)
	binary.LittleEndian.PutUint64(v1[head+4:], n-1)
	binary.LittleEndian.PutUint16(v1[len(summary.Magic):], 2)
	v1 = append(v1, b[head+12+int(n):]...)
	v1 = dropSection(t, v1, "TIME") // from version 4
	s, err := summary.Decode(resum(v1))
	if err != nil {
		t.Fatalf("version 2: %v", err)
	}
	if s.HopDef != "" {
		t.Errorf("version 2 HopDef %q, want unknown", s.HopDef)
	}
}

func small1(t *testing.T) *summary.Summary {
	s, err := summary.Decode(small(t))
	if err != nil {
		t.Fatal(err)
	}
	s.HopDef = ""
	return s
}

// dropSection removes the section kind from b (a summary without its
// checksum fixed: resum does that).
func dropSection(t *testing.T, b []byte, kind string) []byte {
	t.Helper()
	at := len(summary.Magic) + 2
	for at+12 <= len(b) {
		n := int(binary.LittleEndian.Uint64(b[at+4:]))
		if string(b[at:at+4]) == kind {
			return append(append([]byte{}, b[:at]...), b[at+12+n:]...)
		}
		at += 12 + n
	}
	t.Fatalf("no %s section", kind)
	return nil
}

// A version 3 summary (no attempt times) still reads: its hops have no
// times, and a report of it cuts their blocks from the trace sample.
func TestVersion3StillReads(t *testing.T) {
	b := summary.Encode(small1(t))
	v3 := dropSection(t, b, "TIME")
	binary.LittleEndian.PutUint16(v3[len(summary.Magic):], 3)
	s, err := summary.Decode(resum(v3))
	if err != nil {
		t.Fatalf("version 3: %v", err)
	}
	for _, h := range s.Accum.State().Hops {
		if len(h.Times.At) != 0 {
			t.Errorf("version 3 hop %s has %d attempt times", h.Name, len(h.Times.At))
		}
	}
	// The version 4 file keeps every attempt's time of these small hops.
	for _, h := range small1(t).Accum.State().Hops {
		if len(h.Times.At) != h.Attempts {
			t.Errorf("hop %s: %d attempt times of %d attempts", h.Name, len(h.Times.At), h.Attempts)
		}
	}
}
