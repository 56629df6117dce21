package policy

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.err from the current messages")

// TestBad checks every bad fixture against its exact expected messages
// (testdata/bad/NAME.err): every problem of the file, in file order, each
// with file:line:col and key.
func TestBad(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".err") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f)
			if err == nil {
				t.Fatalf("%s loaded without error", f)
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error is not Problems: %T %v", err, err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, filepath.Ext(f)) + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./policy -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("messages differ\n got:\n%s\nwant:\n%s", got, want)
			}
			if lines := strings.Count(got, "\n"); lines != len(ps) {
				t.Errorf("%d lines for %d problems", lines, len(ps))
			}
		})
	}
	if n < 5 {
		t.Fatalf("only %d bad fixtures found", n)
	}
}

// TestBadCollectsAll pins the number of problems of the file with many
// mistakes: a parser that stopped at the first would report one.
func TestBadCollectsAll(t *testing.T) {
	_, err := Load("testdata/bad/many.yaml")
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	keys := []string{"budget", "deadline", "default.timeout", "default.retries", "default.backoff.max", "default.backoff.jitter",
		"default.budget_aware", "default.retry", "hops.search.timeout", "hops.search.retries", "hops.index"}
	if len(ps) != len(keys) {
		t.Fatalf("%d problems, want %d:\n%v", len(ps), len(keys), err)
	}
	for i, p := range ps {
		if p.Key != keys[i] || p.Line == 0 || p.Col == 0 || p.File != "testdata/bad/many.yaml" {
			t.Errorf("problem %d: %+v, want key %s with a position", i, p, keys[i])
		}
	}
}

func TestGood(t *testing.T) {
	full := &Policy{
		Budget:  30 * time.Second,
		Default: Hop{Timeout: 3 * time.Second, Retries: 2, Backoff: Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: JitterFull}, BudgetAware: true},
		Hops: map[string]Hop{
			// Keys not given inherit from default.
			"retrieval": {Timeout: 12 * time.Second, Retries: 0, Backoff: Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: JitterFull}, BudgetAware: true},
			"forward":   {Timeout: 800 * time.Millisecond, Retries: 1, Backoff: Backoff{Base: 100 * time.Millisecond, Max: 100 * time.Millisecond}, BudgetAware: true},
		},
	}
	cases := []struct {
		file string
		want *Policy
	}{
		{"testdata/good/full.yaml", full},
		{"testdata/good/full.json", full},
		{"testdata/good/minimal.yaml", &Policy{Default: Hop{Timeout: 2 * time.Second}, Hops: map[string]Hop{}}},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			p, err := Load(tc.file)
			if err != nil {
				t.Fatalf("%v", err)
			}
			if p.Budget != tc.want.Budget || norm(p.Default) != norm(tc.want.Default) || !reflect.DeepEqual(normHops(p.Hops), normHops(tc.want.Hops)) {
				t.Errorf("got budget %v default %#v hops %#v\nwant budget %v default %#v hops %#v",
					p.Budget, p.Default, p.Hops, tc.want.Budget, tc.want.Default, tc.want.Hops)
			}
			if p.Name != strings.TrimSuffix(filepath.Base(tc.file), filepath.Ext(tc.file)) || p.Path != tc.file {
				t.Errorf("name %q path %q", p.Name, p.Path)
			}
			for name := range tc.want.Hops {
				if p.Lines[name] == 0 {
					t.Errorf("hop %s: no line recorded", name)
				}
			}
			// Marshal writes what Parse reads back.
			q, err := Parse("round-trip.yaml", p.Marshal())
			if err != nil {
				t.Fatalf("round trip: %v\n%s", err, p.Marshal())
			}
			if q.Budget != p.Budget || norm(q.Default) != norm(p.Default) || !reflect.DeepEqual(normHops(q.Hops), normHops(p.Hops)) {
				t.Errorf("round trip changed the policy:\n%s", p.Marshal())
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: JitterFull}
	for k, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 9: time.Second} {
		if got := b.MaxDelay(k); got != want {
			t.Errorf("MaxDelay(%d) = %v, want %v", k, got, want)
		}
		if got := b.Delay(k, 0); got != 0 {
			t.Errorf("full jitter Delay(%d, 0) = %v, want 0", k, got)
		}
	}
	eq := Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: JitterEqual}
	if got := eq.Delay(2, 0); got != 100*time.Millisecond {
		t.Errorf("equal jitter Delay(2, 0) = %v, want 100ms", got)
	}
}

// norm treats an unset jitter as none: both mean a fixed wait.
func norm(h Hop) Hop {
	if h.Backoff.Jitter == "" {
		h.Backoff.Jitter = JitterNone
	}
	return h
}

func normHops(m map[string]Hop) map[string]Hop {
	out := map[string]Hop{}
	for k, h := range m {
		out[k] = norm(h)
	}
	return out
}

// A hop name longer than YAML's implicit-key limit, and comments holding
// every kind of YAML line break, read back as written.
func TestMarshalLongKeysAndCommentBreaks(t *testing.T) {
	long := strings.Repeat("x", 5000)
	p := &Policy{Hops: map[string]Hop{long: {Timeout: time.Second}, "a": {Timeout: 2 * time.Second}},
		Comments: map[string]string{long: "one\rtwo\u2028three\u0085four\r\nfive", "a": "x: y\nz"}, Default: Hop{Timeout: time.Second}}
	back, err := Parse("p.yaml", p.Marshal())
	if err != nil {
		t.Fatalf("does not read back: %v\n%s", err, p.Marshal())
	}
	if back.Hops[long].Timeout != time.Second || back.Hops["a"].Timeout != 2*time.Second || len(back.Hops) != 2 {
		t.Errorf("read back %+v", back.Hops)
	}
}

// TestRetryFits: a budget-aware hop retries only when the backoff and a
// whole attempt fit in what is left (equal fits); any other hop always
// may; a need past a Duration's range never fits.
func TestRetryFits(t *testing.T) {
	ms := time.Millisecond
	aware := Hop{Timeout: 100 * ms, BudgetAware: true}
	for _, c := range []struct {
		name          string
		h             Hop
		left, backoff time.Duration
		want          bool
	}{
		{"room to spare", aware, time.Second, 50 * ms, true},
		{"exactly enough", aware, 150 * ms, 50 * ms, true},
		{"a ns short", aware, 150*ms - 1, 50 * ms, false},
		{"no backoff", aware, 100 * ms, 0, true},
		{"nothing left", aware, 0, 0, false},
		{"time already past", aware, -ms, 0, false},
		{"no timeout: the backoff alone", Hop{BudgetAware: true}, 50 * ms, 50 * ms, true},
		{"no timeout, backoff too long", Hop{BudgetAware: true}, 49 * ms, 50 * ms, false},
		{"need past the range", Hop{Timeout: math.MaxInt64 - 10, BudgetAware: true}, math.MaxInt64, 11, false},
		{"need at the range's end", Hop{Timeout: math.MaxInt64 - 10, BudgetAware: true}, math.MaxInt64, 10, true},
		{"not budget-aware", Hop{Timeout: 100 * ms}, 0, time.Second, true},
	} {
		if got := c.h.RetryFits(c.left, c.backoff); got != c.want {
			t.Errorf("%s: RetryFits(%v, %v) = %v, want %v", c.name, c.left, c.backoff, got, c.want)
		}
	}
}
