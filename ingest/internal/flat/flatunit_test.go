package flat

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// A line without extra fields costs no allocation on the fast path, and a
// borrowing record captures extra fields without one either.
func TestFastLineAttrAllocs(t *testing.T) {
	tab := newFieldTable(&record.Options{})
	for _, tc := range []struct {
		line   string
		borrow bool
	}{
		{`{"hop":"auth","duration_ms":12.5,"status":"ok","code":200}`, false}, // owned ids would be copies: none here
		{`{"trace_id":"t1","span_id":"s1","hop":"auth","duration_ms":12.5,"status":"ok"}`, true},
		{`{"trace_id":"t1","span_id":"s1","hop":"auth","duration_ms":12.5,"pod":"auth-7","zone":"eu","n":3}`, true},
	} {
		line := []byte(tc.line)
		rec := &flatRecord{intern: &record.Interner{}, at: record.AttrSet{Borrow: tc.borrow}}
		if tc.borrow {
			rec.block = line
		}
		var ly layout
		run := func() {
			if !tab.fastLine(rec, &ly, line) {
				t.Fatal("not taken")
			}
			rec.finish()
		}
		run()
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Errorf("%s (borrowed %v): %v allocations per line", tc.line, tc.borrow, n)
		}
	}
}

// The allocation-free number parsers must agree with strconv wherever
// they answer.
func TestFastNumbers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []string{"0", "-0", "1", "12.5", "0.001", ".5", "1.", "1e3", "+1", "123456789012345", "1234567890123456", "99999999999999999999", "-3.25", "", "-", "1.2.3"}
	for range 2000 {
		cases = append(cases, fmt.Sprintf("%.*f", r.IntN(8), r.Float64()*1e6), fmt.Sprint(r.Int64N(1<<62)))
	}
	for _, c := range cases {
		if x, ok := atofBytes([]byte(c)); ok {
			want, err := strconv.ParseFloat(c, 64)
			if err != nil || x != want {
				t.Errorf("atofBytes(%q) = %v, strconv says %v (%v)", c, x, want, err)
			}
		}
		if n, ok := record.AtoiBytes([]byte(c)); ok {
			want, err := strconv.ParseInt(c, 10, 64)
			if err != nil || n != want {
				t.Errorf("atoiBytes(%q) = %v, want %v (%v)", c, n, want, err)
			}
		}
	}
}

// fastNumber stores what scanNumber and setNumber store, for every field
// and number text it takes, and leaves the record untouched when it
// declines.
func TestFastNumberAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := []string{"0", "1", "200", "408", "504", "12.5", "0.001", "1.", "1e3", "3000", "3000.25", "17.832", "1673.287",
		"1767225600001000000", "9223372036854775807", "9223372036854775808", "99999999999999999999", "1.2.3", "2147483647",
		"2147483648", "1125899906842623", "1125899906842624", "1125899906.842624", "0.0000001", "123456789012345", "1234567890123456",
		"00000000000000000001", "007", "12345678", "12345678.5", "1234567.1234567", "-1", "1-", "1+2", "1E3", "1.5e3"}
	for range 20000 {
		var b []byte
		for range 1 + r.IntN(21) {
			b = append(b, "0123456789.eE-+"[min(r.IntN(20), 14)])
		}
		cases = append(cases, string(b))
	}
	fields := []field{fStart, fEnd, fDurationMs, fDurationUs, fDurationNs, fCode, fAttempt, fTimeoutMs, fDuration, fStartMs, fWeight, fResendCount}
	for _, c := range cases {
		for _, tail := range []string{"", ",", "}", `,"attempt":1}`, "0123456789", ".5", "\n{"} {
			in := []byte(c + tail)
			if in[0] != '-' && (in[0] < '0' || in[0] > '9') {
				continue
			}
			for _, f := range fields {
				fast := &flatRecord{intern: &record.Interner{}}
				fast.reset()
				end := fast.fastNumber(f, in, 0)
				slow := &flatRecord{intern: &record.Interner{}}
				slow.reset()
				var nt numText
				scanNumber(in, 0, &nt)
				ok := slow.setNumber(f, &nt)
				if end == 0 {
					untouched := flatRecord{intern: fast.intern}
					untouched.reset()
					if !reflect.DeepEqual(*fast, untouched) {
						t.Fatalf("%q field %d: declined but stored %+v", in, f, fast.sp)
					}
					continue
				}
				if end != len(nt.text) || !ok {
					t.Fatalf("%q field %d: fastNumber ends at %d, scanNumber at %d (setNumber ok %v)", in, f, end, len(nt.text), ok)
				}
				if !reflect.DeepEqual(fast.sp, slow.sp) || fast.hasDur != slow.hasDur || fast.hasStart != slow.hasStart || fast.hasEnd != slow.hasEnd ||
					fast.end != slow.end || fast.durField != slow.durField || fast.codeSet != slow.codeSet || fast.codeText != slow.codeText ||
					fast.codeNamed != slow.codeNamed || fast.errTimeout != slow.errTimeout || len(fast.soft) != len(slow.soft) {
					t.Fatalf("%q field %d:\nfast %+v\nslow %+v", in, f, *fast, *slow)
				}
			}
		}
	}
}

// A line that ends (the block's last, at the end of the input) right after
// an opening learnt from an earlier line is given up, not read past; and
// one with spaces after a colon whose opening was learnt without them is
// taken as the step-by-step path takes it.
func TestFastLineLearntOpening(t *testing.T) {
	tab := newFieldTable(&record.Options{})
	var ly layout
	teach := []byte(`{"abcdefghijklm":1,"hop":"a","duration_ms":2}`)
	if !fastAgrees(t, tab, &ly, teach) {
		t.Fatal("teaching line not taken")
	}
	for _, l := range []string{`{"abcdefghijklm":`, `{"abcdefghijklm":   `, `{"abcdefghijklm":1,"hop":"a","duration_ms":`} {
		rec := &flatRecord{intern: &record.Interner{}}
		if end := tab.fastEnd(rec, &ly, []byte(l)); end >= 0 {
			t.Errorf("%q: taken (end %d)", l, end)
		}
	}
	fastAgrees(t, tab, &ly, teach)
	if !fastAgrees(t, tab, &ly, []byte(`{"abcdefghijklm": 1,"hop":"a","duration_ms":  2}`)) {
		t.Error("spaces after the colons: not taken")
	}
}

// Every prefix of a line, decoded with the layout the lines before it
// taught (a block's last line cut at the end of the input), is given up or
// read as the general path reads it, and never read past its end.
func TestFastLinePrefixes(t *testing.T) {
	lines := bytes.Split(bytes.TrimSpace(flatMixedLines(300)), []byte("\n"))
	for variant := range 3 {
		tab := newFieldTable(&record.Options{})
		var ly layout
		for k, l := range lines {
			switch {
			case variant == 1 && k%3 == 0:
				l = bytes.ReplaceAll(l, []byte(`":`), []byte(`": `))
			case variant == 2:
				// A key whose opening is the 16 bytes the compare takes.
				l = bytes.ReplaceAll(l, []byte(`"timeout_ms"`), []byte(`"timeout_in_ms"`))
			}
			for cut := range len(l) {
				p := append([]byte(nil), l[:cut]...) // no room past the prefix
				rec := &flatRecord{intern: &record.Interner{}}
				if tab.fastEnd(rec, &ly, p) == len(p) {
					fastAgrees(t, tab, &ly, p)
				}
			}
			fastAgrees(t, tab, &ly, l)
		}
	}
}
