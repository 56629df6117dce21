package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParse feeds the policy parser arbitrary bytes. The properties: it
// never panics or hangs; it either returns a policy or a non-empty list of
// problems, each naming the file; and a policy it accepts survives
// Marshal → Parse unchanged, since recommend writes files that check reads.
//
// Seeds: the good and bad fixtures, plus testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/bad"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range files {
			if strings.HasSuffix(p, ".err") {
				continue
			}
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("budget: 30s\nhops: {a: {timeout: 1s, backoff: {base: 1ms, max: 2ms, jitter: equal}}}\n"))
	f.Add([]byte("a: &x [*x, *x]\n"))
	f.Add([]byte("default: {hedge: {delay: 50ms}}\nhops: {a: {timeout: 1s, hedge: {delay: 40ms, max: 2}}, b: {hedge: none}}\n"))
	f.Add([]byte(`{"budget":"1h","default":{"retries":100},"hops":{"\u00e9 x":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("p.yaml", data)
		if err != nil {
			probs, ok := err.(Problems)
			if !ok || len(probs) == 0 {
				t.Fatalf("error is not a non-empty Problems: %T %v", err, err)
			}
			for _, pr := range probs {
				if pr.File != "p.yaml" || pr.Msg == "" {
					t.Fatalf("problem without file or message: %+v", pr)
				}
			}
			return
		}
		if p == nil {
			t.Fatal("nil policy and nil error")
		}
		if p.Budget < 0 || p.Default.Timeout < 0 || p.Default.Retries < 0 {
			t.Fatalf("negative value accepted: %+v", p)
		}
		for name, h := range p.Hops {
			if h.Timeout < 0 || h.Retries < 0 || h.Backoff.Max < h.Backoff.Base {
				t.Fatalf("hop %q: bad values accepted: %+v", name, h)
			}
			if hg := h.Hedge; hg.Delay < 0 || hg.Delay == 0 && hg != (Hedge{}) || hg.Delay > 0 && (hg.Max < 1 || hg.Max > MaxHedges) {
				t.Fatalf("hop %q: bad hedge accepted: %+v", name, hg)
			}
		}
		// Hop names that are not valid UTF-8 cannot be written back as
		// YAML; the round trip is only promised for names a log can give
		// after ingest (which makes them valid).
		for name := range p.Hops {
			if !utf8.ValidString(name) {
				return
			}
		}
		out := p.Marshal()
		q, err := Parse("p.yaml", out)
		if err != nil {
			t.Fatalf("Marshal output does not parse back: %v\n%s", err, out)
		}
		if q.Budget != p.Budget || q.Default != p.Default || !reflect.DeepEqual(q.Hops, p.Hops) {
			t.Fatalf("round trip changed the policy:\nin  %+v %+v\nout %+v %+v\n%s", p.Default, p.Hops, q.Default, q.Hops, out)
		}
	})
}

// FuzzMarshal: a policy with any hop name and any comment, as recommend
// writes it, reads back with the same hops and values.
func FuzzMarshal(f *testing.F) {
	f.Add("forward", "p99 1s × 1.10 → 1.1s", int64(1e9), 2)
	f.Add("a: b # c", "x\ry\u2028z\u0085w", int64(50e6), 0)
	f.Add(strings.Repeat("long ", 300), "", int64(12e9), 1)
	f.Add("\x00\x1b[31m\u202e", "\n\n", int64(1), 5)
	f.Fuzz(func(t *testing.T, name, comment string, timeout int64, retries int) {
		if timeout <= 0 || time.Duration(timeout) > MaxDuration || retries < 0 || retries > 100 {
			return
		}
		p := &Policy{Hops: map[string]Hop{name: {Timeout: time.Duration(timeout), Retries: retries, BudgetAware: true}},
			Comments: map[string]string{name: comment}, Default: Hop{Timeout: time.Second}, Budget: time.Hour}
		back, err := Parse("p.yaml", p.Marshal())
		if err != nil {
			t.Fatalf("does not read back: %v\n%q", err, p.Marshal())
		}
		want := string([]rune(name)) // each bad byte becomes U+FFFD
		h, ok := back.Hops[want]
		if !ok || len(back.Hops) != 1 {
			t.Fatalf("hops %v, want only %q", back.HopNames(), want)
		}
		// Durations are written to the nanosecond or a shorter exact form.
		if h.Retries != retries || h.Timeout != time.Duration(timeout) {
			t.Fatalf("read back %+v, want timeout %v retries %d", h, time.Duration(timeout), retries)
		}
	})
}
