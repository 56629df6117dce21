package flat

import (
	"fmt"
	"math/rand/v2"
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
