package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Aliases and merge keys work as YAML defines them: an alias stands for
// its node; a mapping's own keys win over merged ones; of several merged
// mappings the earlier wins.
func TestAliasesAndMerge(t *testing.T) {
	const y = `
budget: &b 20s
default: &d
  timeout: 2s
  retries: 1
  backoff: &bo {base: 100ms, max: 1s, jitter: full}
hops:
  slow: &slow {timeout: 12s, retries: 0}
  slow2: *slow
  tuned:
    <<: *d
    timeout: 5s
  both:
    <<: [*slow, {timeout: 1s, retries: 3, budget_aware: true}]
  aliased-values:
    timeout: *b
    backoff: *bo
  nested:
    <<: {<<: *slow, budget_aware: true}
`
	p, err := Parse("m.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	bo := Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: JitterFull}
	want := map[string]Hop{
		"slow":           {Timeout: 12 * time.Second, Backoff: bo, Retries: 0},
		"slow2":          {Timeout: 12 * time.Second, Backoff: bo, Retries: 0},
		"tuned":          {Timeout: 5 * time.Second, Retries: 1, Backoff: bo},
		"both":           {Timeout: 12 * time.Second, Retries: 0, Backoff: bo, BudgetAware: true},
		"aliased-values": {Timeout: 20 * time.Second, Retries: 1, Backoff: bo},
		"nested":         {Timeout: 12 * time.Second, Retries: 0, Backoff: bo, BudgetAware: true},
	}
	if p.Budget != 20*time.Second {
		t.Errorf("budget %v", p.Budget)
	}
	for name, w := range want {
		if got := p.Hops[name]; got != w {
			t.Errorf("%s: got %+v, want %+v", name, got, w)
		}
	}
	if len(p.Hops) != len(want) {
		t.Errorf("hops %v", p.HopNames())
	}
	// A merged hop list: the hops of an anchored mapping.
	p, err = Parse("m.yaml", []byte("hops:\n  <<: &common {a: {timeout: 1s}, b: {timeout: 2s}}\n  b: {timeout: 3s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Hops["a"].Timeout != time.Second || p.Hops["b"].Timeout != 3*time.Second || len(p.Hops) != 2 {
		t.Errorf("merged hops: %+v", p.Hops)
	}
}

// A key given twice is an error naming both positions, at every level
// (it used to take the last value silently).
func TestDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"budget: 1s\nbudget: 2s\n", "d.yaml:2:1: budget: key given twice (first at 1:1)"},
		{"default: {timeout: 1s, timeout: 2s}\n", "d.yaml:1:24: default.timeout: key given twice (first at 1:11)"},
		{`{"hops": {"a": {}, "a": {}}}`, `d.yaml:1:20: hops.a: hop listed twice (first at 1:11)`},
		{"hops:\n  x:\n    backoff:\n      base: 1s\n      base: 2s\n", "d.yaml:5:7: hops.x.backoff.base: key given twice (first at 4:7)"},
	} {
		_, err := Parse("d.yaml", []byte(c.yaml))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: got %v, want %s", c.yaml, err, c.want)
		}
	}
}

func TestDocuments(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"budget: 1s\n---\nbudget: 2s\n", "p.yaml:3:1: a second YAML document"},
		{"- a\n- b\n", "p.yaml:1:1: want a mapping with budget, default and hops, found a list"},
		{"3s\n", `found the value "3s"`},
		{"# only a comment\n", "p.yaml: empty policy file: want a mapping"},
		{"~\n", "p.yaml:1:1: empty policy file: want a mapping"},
	} {
		_, err := Parse("p.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %s", c.yaml, err, c.want)
		}
	}
	// A trailing empty document (a final ---) is harmless.
	if _, err := Parse("p.yaml", []byte("budget: 1s\n---\n")); err != nil {
		t.Errorf("trailing ---: %v", err)
	}
}

// Durations are bounded so that the replay's arithmetic cannot overflow:
// 2562047h47m16s once replayed to a p50 of −9223372036371 ms and a pass.
func TestDurationBounds(t *testing.T) {
	p, err := Parse("p.yaml", []byte("budget: 1000h\ndefault: {timeout: 1000h, retries: 100, backoff: {base: 1000h, max: 1000h}}\n"))
	if err != nil {
		t.Fatalf("1000h refused: %v", err)
	}
	// The longest a hop's retries can wait stays far inside int64.
	var sum time.Duration
	for k := 1; k <= p.Default.Retries; k++ {
		sum += p.Default.Backoff.MaxDelay(k) + p.Default.Timeout
	}
	if sum <= 0 || sum > 1000*MaxDuration {
		t.Errorf("sum of waits %v", sum)
	}
	for _, v := range []string{"2562047h47m16s", "1001h", "9999999999999h", "1000h1ns"} {
		_, err := Parse("p.yaml", []byte("default: {timeout: "+v+"}\n"))
		if err == nil || !strings.Contains(err.Error(), "too long: at most 1000h") {
			t.Errorf("timeout %s: %v", v, err)
		}
	}
}

// A huge bad value is quoted in part, with its length, not whole.
func TestLongValuesClipped(t *testing.T) {
	long := strings.Repeat("x", 2<<20)
	for _, y := range []string{
		"default: {timeout: " + long + "}\n",
		"hops:\n  ? " + long + "\n  : {retries: x}\n",
		"? " + long + "\n: 1\n",
		"default: {backoff: {jitter: " + long + "}}\n",
	} {
		_, err := Parse("p.yaml", []byte(y))
		if err == nil {
			t.Fatal("accepted")
		}
		if msg := err.Error(); len(msg) > 300 || !strings.Contains(msg, fmt.Sprintf("(%d bytes)", len(long))) {
			t.Errorf("message of %d bytes: %.300s", len(msg), msg)
		}
	}
}

// Many problems are listed up to a point, then counted.
func TestProblemsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("hops:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "  h%d: {timeout: x}\n", i)
	}
	_, err := Parse("p.yaml", []byte(b.String()))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != maxProblems+1 || ps[maxProblems].Msg != "and 900 more problems" {
		t.Fatalf("got %d problems, last %v", len(ps), ps[len(ps)-1])
	}
}

// A policy file too big to be one is refused before the YAML decoder
// builds its tree: a 1.3M-hop file once took 2.25 GB and 24 s.
func TestHugePolicyRefused(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	var b strings.Builder
	b.WriteString("hops:\n")
	for i := 0; i < 1_300_000; i++ {
		fmt.Fprintf(&b, "  h%d: {timeout: 1s}\n", i)
	}
	if err := os.WriteFile(big, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, data, want string
	}{
		{"1.3M hops", big, "", "larger than 16 MiB"},
		{"endless device", "/dev/zero", "", "larger than 16 MiB"},
		{"a million list items", "", "[" + strings.Repeat("1,", 1_000_000) + "1]", "more than 250000 entries"},
		{"a million keys", "", strings.Repeat("a:\n", 1_000_000), "p.yaml:250001: more than 250000 entries"},
		{"too many hops", "", "hops:\n" + hopsLines(MaxHops+1), "hops: 100001 hops: a policy lists at most 100000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.path == "/dev/zero" {
				if _, err := os.Stat(c.path); err != nil {
					t.Skip("no /dev/zero")
				}
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			var err error
			if c.path != "" {
				_, err = Load(c.path)
			} else {
				_, err = Parse("p.yaml", []byte(c.data))
			}
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %s", err, c.want)
			}
			if mb := (m1.TotalAlloc - m0.TotalAlloc) >> 20; mb > 300 {
				t.Errorf("refusing took %d MB", mb)
			}
		})
	}
}

func hopsLines(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  h%d:\n", i)
	}
	return b.String()
}

// The worst file within the limits — nothing but tiny entries — parses in
// bounded memory.
func TestWorstAcceptedSize(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	data := "{" + strings.Repeat("a,", MaxEntries-2) + "a}"
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err := Parse("p.yaml", []byte(data))
	runtime.ReadMemStats(&m1)
	if err == nil {
		t.Fatal("accepted")
	}
	if mb := (m1.TotalAlloc - m0.TotalAlloc) >> 20; mb > 300 { // about 100 MB live at the end; the rest is the decoder's garbage
		t.Errorf("parse allocated %d MB", mb)
	}
}

// Hop names with characters YAML does not allow raw (DEL, C1, a BOM) are
// written escaped, so that recommend's file reads back (JSON quoting left
// them raw: found by FuzzParse).
func TestMarshalOddNamesRoundTrip(t *testing.T) {
	names := []string{"\u0080", "a\x7fb", "\ufeffx", "q\"b\\c", "tab\tnl\n", "\U0001F600 ok", "\u0085", "\uffff"}
	p := &Policy{Hops: map[string]Hop{}}
	for _, n := range names {
		p.Hops[n] = Hop{Timeout: time.Second}
	}
	q, err := Parse("p.yaml", p.Marshal())
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Marshal())
	}
	for _, n := range names {
		if _, ok := q.Hops[n]; !ok {
			t.Errorf("%q did not read back; got %q", n, q.HopNames())
		}
	}
}

// LoadAll reads every file and, when some are bad, lists the problems of
// all of them.
func TestLoadAll(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("budget: 1s\ndefault:\n  timeout: 100ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("budget: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := LoadAll([]string{good, good})
	if err != nil || len(ps) != 2 {
		t.Fatalf("two good files: %d policies, %v", len(ps), err)
	}
	_, err = LoadAll([]string{bad, good, filepath.Join(dir, "missing.yaml")})
	if err == nil {
		t.Fatal("a bad and a missing file loaded")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "bad policy file:\n") || !strings.Contains(msg, "bad.yaml") || !strings.Contains(msg, "missing.yaml") || strings.Contains(msg, "good.yaml") {
		t.Errorf("error does not list each bad file once:\n%s", msg)
	}
}
