package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
)

// wholeJSON is the JSON report as it was written before the stream: the
// whole document through one Encoder (two-space indent, no HTML escaping,
// a newline at the end).
func wholeJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// maxWrite records the largest single write it is given.
type maxWrite struct {
	bytes.Buffer
	largest int
}

func (m *maxWrite) Write(p []byte) (int, error) {
	m.largest = max(m.largest, len(p))
	return m.Buffer.Write(p)
}

// sameAsWhole writes v streamed at several thresholds (0: the members of
// every collection marshalled whole; 1<<30: everything walked down to its
// leaves; the default) and compares each with wholeJSON; it returns the
// last (the walk to the leaves).
func sameAsWhole(t *testing.T, name string, v any) *maxWrite {
	t.Helper()
	want := wholeJSON(t, v)
	var last *maxWrite
	for _, min := range []int{0, 1, 3, streamMin, 1 << 30} {
		old := streamMin
		streamMin = min
		got := &maxWrite{}
		err := writeJSON(got, v)
		streamMin = old
		if err != nil {
			t.Fatalf("%s, streamMin %d: %v", name, min, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%s, streamMin %d: streamed JSON differs from encoding/json's at byte %d:\n%s\nwant:\n%s",
				name, min, firstDiff(got.Bytes(), want), around(got.Bytes(), want), around(want, got.Bytes()))
		}
		last = got
	}
	return last
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func around(a, b []byte) string {
	i := firstDiff(a, b)
	return string(a[max(0, i-200):min(len(a), i+200)])
}

// TestStreamedJSONFixtures: the reports of the repo's fixtures, streamed,
// are encoding/json's bytes.
func TestStreamedJSONFixtures(t *testing.T) {
	seed, _ := analysisOf(t, "spans.jsonl", "")
	underA, _ := analysisOf(t, "spans.jsonl", "A")
	sameAsWhole(t, "analyze seed", seed)
	sameAsWhole(t, "analyze seed under A", underA)
	sameAsWhole(t, "check demo", demoCheck(t))
	sameAsWhole(t, "many hops", manyHopsReport(t, 55, 40))
}

// TestStreamedJSONManyHops: a report of many hops, with the values that
// encoding/json treats specially put into it (strings to escape, HTML
// characters left as they are, invalid UTF-8, nil and empty slices and
// maps, omitempty fields set and unset, extreme floats), streams to the
// same bytes without ever writing more than a small part at once.
func TestStreamedJSONManyHops(t *testing.T) {
	rep := manyHopsReport(t, 300, 40)
	odd := []string{`<script>&"quoted"</script>`, "tab\tnew\nline\u2028\u2029", "bad \xff utf-8", "控制\x01\x1f", ""}
	for i, s := range odd {
		rep.Hops[i].Hop = s
		rep.Hops[i].FailureHistogram = nil
		rep.Hops[i+10].FailureHistogram = rep.Hops[i+10].FailureHistogram[:0]
		rep.Hops[i].Censored = &analyze.Censored{TimeoutMs: math.MaxFloat64, AtLeastMs: 1e-300, Fraction: 5e-324, Unknown: []string{}}
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "odd", Hop: s, Message: s})
	}
	if rep.RecommendedPolicy != nil {
		for _, s := range odd {
			rep.RecommendedPolicy.Hops[s] = analyze.HopPolicy{TimeoutMs: 1e21, Jitter: s}
		}
	}
	rep.SkipExamples = odd
	rep.Notes = []string{}
	rep.FilteredByReason = map[string]int64{}
	rep.IgnoredByField = map[string]int64{"<attempt>": 1, "b": -2, "a": 3}
	rep.Sample = &analyze.Sample{From: nil}
	sameAsWhole(t, "many hops, odd values", rep)
	got := &maxWrite{}
	if err := writeJSON(got, rep); err != nil {
		t.Fatal(err)
	}
	if got.largest > got.Len()/100 {
		t.Errorf("largest write %d bytes of %d: the document was not streamed", got.largest, got.Len())
	}
	rep.Hops = []analyze.Hop{}
	rep.TailRanking = nil
	rep.Sample = nil
	sameAsWhole(t, "no hops", rep)
}

type (
	textKey   string
	jsonValue struct{ n int }
	ptrJSON   struct{ n int }
	inner     struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
	}
	deeper struct {
		inner
		C []int `json:"c"`
	}
	unexportedInner struct {
		U int `json:"u"`
	}
	edge struct {
		deeper
		*inner2
		*unexportedInner
		Tagged inner `json:"tagged"`
		Named  inner // no tag: the Go name
		Skip   int   `json:"-"`
		//lint:ignore SA5008 "-," names a member "-": the case this test holds the stream to encoding/json on
		Dash     int                `json:"-,"`
		hidden   int                //nolint:unused // unexported: not written
		Ptr      *inner             `json:"ptr"`
		NilPtr   *inner             `json:"nil_ptr"`
		OmitPtr  *inner             `json:"omit_ptr,omitempty"`
		Slice    []inner            `json:"slice"`
		Nil      []inner            `json:"nil"`
		Empty    []inner            `json:"empty"`
		OmitS    []inner            `json:"omit_s,omitempty"`
		Nested   [][]float64        `json:"nested"`
		Map      map[string]inner   `json:"map"`
		NilMap   map[string]int     `json:"nil_map"`
		EmptyMap map[string]int     `json:"empty_map"`
		OmitMap  map[string]int     `json:"omit_map,omitempty"`
		TextMap  map[textKey]int    `json:"text_map"`
		IntMap   map[int]string     `json:"int_map"`
		Custom   jsonValue          `json:"custom"`
		PtrCust  ptrJSON            `json:"ptr_custom"`
		Customs  []jsonValue        `json:"customs"`
		PtrCusts []ptrJSON          `json:"ptr_customs"`
		Any      any                `json:"any"`
		AnyNil   any                `json:"any_nil"`
		AnySlice []any              `json:"any_slice"`
		Str      string             `json:"str,string"`
		Num      int                `json:"num,omitempty"`
		Zero     float64            `json:"zero,omitempty"`
		Bool     bool               `json:"bool,omitempty"`
		Arr      [3]inner           `json:"arr"`
		Bytes    []byte             `json:"bytes"`
		Raw      json.RawMessage    `json:"raw"`
		Floats   []float64          `json:"floats"`
		Odd      string             `json:"<odd>"`
		Unicode  map[string]float64 `json:"ünïcode"`
	}
	inner2 struct {
		I2 int `json:"i2"`
	}
	// clash has two fields named Q at the same depth: encoding/json
	// drops both; in tagClash the tagged one wins.
	clash struct {
		qOne
		qTwo
		Z int `json:"z"`
	}
	tagClash struct {
		qOne
		qTagged
	}
	qOne    struct{ Q int }
	qTwo    struct{ Q string }
	qTagged struct {
		Q bool `json:"Q"`
	}
	// dominant has a shallow field that hides a deeper one.
	dominant struct {
		qOne
		Q string
	}
)

func (k textKey) MarshalText() ([]byte, error) { return []byte("k:" + string(k)), nil }
func (j jsonValue) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"custom":%d,"list":[1,2]}`, j.n)), nil
}
func (j *ptrJSON) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf(`[%d]`, j.n)), nil }

// TestStreamedJSONEdges: the walker follows encoding/json's rules (or
// leaves the value to it) on everything a report type could hold.
func TestStreamedJSONEdges(t *testing.T) {
	mk := func(n int) *edge {
		e := &edge{hidden: 1, Skip: 2, Dash: 3, Str: "s<>", Odd: "o", Raw: json.RawMessage(`{"raw": [1, 2]}`)}
		e.A, e.B, e.C = 1, "", []int{}
		e.Ptr = &inner{A: 2, B: "x"}
		e.Empty = []inner{}
		e.EmptyMap = map[string]int{}
		e.Map = map[string]inner{}
		e.TextMap = map[textKey]int{}
		e.IntMap = map[int]string{}
		e.Unicode = map[string]float64{}
		for i := range n {
			k := fmt.Sprintf("k%03d<&>\u2028", n-i)
			e.Slice = append(e.Slice, inner{A: i, B: strings.Repeat("é", i%3)})
			e.Nested = append(e.Nested, []float64{float64(i) / 7, 1e-7, 1e21, math.Copysign(0, -1)})
			e.Map[k] = inner{A: i}
			e.TextMap[textKey(k)] = i
			e.IntMap[n-i] = k
			e.Unicode["ü"+k] = float64(i) * 1.5
			e.Customs = append(e.Customs, jsonValue{i})
			e.PtrCusts = append(e.PtrCusts, ptrJSON{i})
			e.AnySlice = append(e.AnySlice, i, k, inner{A: i}, nil, []int{i})
			e.Floats = append(e.Floats, math.Pi*float64(i), 1/float64(i+1), 123456789012345678)
			e.Bytes = append(e.Bytes, byte(i))
		}
		e.Custom, e.PtrCust = jsonValue{7}, ptrJSON{8}
		e.Any = map[string]any{"x": []int{1}, "y": inner{}}
		return e
	}
	for _, n := range []int{0, 1, 2, 40} {
		e := mk(n)
		sameAsWhole(t, fmt.Sprintf("edge %d", n), e)
		e.inner2 = &inner2{I2: 5}
		e.unexportedInner = &unexportedInner{U: 6}
		sameAsWhole(t, fmt.Sprintf("edge %d, embedded pointers set", n), e)
		sameAsWhole(t, fmt.Sprintf("edge %d, by value", n), *e)
		sameAsWhole(t, fmt.Sprintf("edge %d, in a slice", n), []*edge{e, nil, mk(1)})
	}
	sameAsWhole(t, "clash", &clash{qOne{1}, qTwo{"2"}, 3})
	sameAsWhole(t, "tagged clash", &tagClash{qOne{1}, qTagged{true}})
	sameAsWhole(t, "dominant", &dominant{qOne{1}, "top"})
	sameAsWhole(t, "nil", nil)
	sameAsWhole(t, "nil report", (*analyze.Report)(nil))
	sameAsWhole(t, "string", "<&>")
}

// TestStreamedJSONError: a value encoding/json refuses is an error, not a
// panic or a document that looks whole.
func TestStreamedJSONError(t *testing.T) {
	v := struct {
		A []float64 `json:"a"`
	}{A: make([]float64, 100)}
	v.A[50] = math.NaN()
	var b bytes.Buffer
	err := writeJSON(&b, &v)
	if err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("NaN in a streamed slice: err %v, want encoding/json's unsupported value", err)
	}
}

// BenchmarkJSONReport writes a 2,000-hop report streamed and, for
// comparison, through one Encoder over the whole document.
func BenchmarkJSONReport(b *testing.B) {
	l := readLogs(&testing.T{}, "many-hops.jsonl", manyHopsLogs(2000, 40))
	rep := l.Report(analyze.Options{})
	for _, c := range []struct {
		name  string
		write func(io.Writer, any) error
	}{
		{"stream", writeJSON},
		{"whole", func(w io.Writer, v any) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(v)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.write(io.Discard, rep); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
