// Tests of --compare-window, --sort and --compare on real and generated logs.

package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/internal/realdata"
)

const nezhaMap = "trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano"

// compareJSON is the part of the JSON report these tests read.
type compareJSON struct {
	HopOrder string `json:"hop_order"`
	Hops     []struct {
		Hop string
		Gap *struct {
			ServerHop string `json:"server_hop"`
		}
	}
	TailRanking []struct {
		Hop      string
		Score    float64
		Share    float64
		Reason   string
		Examples []string
	} `json:"tail_ranking"`
	Compare *struct {
		Before, After struct {
			Label    string
			Requests int
			P99Ms    *float64 `json:"p99_ms"`
		}
		Ranking []struct {
			Hop           string
			Score         float64
			ShiftMs       float64 `json:"shift_ms"`
			Reason        string
			Examples      []string
			Before, After *struct {
				P99Ms *float64 `json:"p99_ms"`
				Class string
			}
		}
	}
}

func analyzeCompare(t *testing.T, args ...string) compareJSON {
	t.Helper()
	code, out, errs := convRun(t, "", append([]string{"analyze", "--format", "json", "-q"}, args...)...)
	if code != 0 {
		t.Fatalf("analyze %v: exit %d: %s", args, code, errs)
	}
	var r compareJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// windowSpans writes JSON-lines spans of a gateway calling search, pay and
// cart in turn, one request a second for n seconds from t0 (unix s): search
// is slow in 5% of the requests throughout, pay is slow in 15% of them from
// second slowFrom on.
func windowSpans(b *strings.Builder, r *rand.Rand, t0, n, slowFrom int) {
	for i := range n {
		start := int64(t0+i) * 1e9
		at := start + 1e6
		id := fmt.Sprintf("t%d-%d", t0, i)
		for k, svc := range []string{"search", "pay", "cart"} {
			d := 20 + r.IntN(30)
			switch {
			case svc == "search" && r.IntN(100) < 5:
				d += 1500
			case svc == "pay" && i >= slowFrom && r.IntN(100) < 15:
				d += 700
			}
			fmt.Fprintf(b, `{"trace_id":%q,"span_id":"c%d","parent_id":"r","service":"gw","name":"call %s","kind":"client","start":%d,"duration_ms":%d}`+"\n", id, k, svc, at, d+2)
			fmt.Fprintf(b, `{"trace_id":%q,"span_id":"s%d","parent_id":"c%d","service":%q,"name":"handle","kind":"server","start":%d,"duration_ms":%d}`+"\n", id, k, k, svc, at+1e6, d)
			at += int64(d+3) * 1e6
		}
		fmt.Fprintf(b, `{"trace_id":%q,"span_id":"r","service":"gw","name":"GET /","kind":"server","start":%d,"duration_ms":%d}`+"\n", id, start, (at-start)/1e6+1)
	}
}

// --compare-window splits one input by time: the hop that got slower in
// the last window ranks first, the hop slow in both windows does not; the
// text report says what changed.
func TestCompareWindow(t *testing.T) {
	var b strings.Builder
	windowSpans(&b, rand.New(rand.NewPCG(1, 2)), 1_760_000_000, 1200, 600)
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := analyzeCompare(t, "--compare-window", "10m", path)
	c := r.Compare
	if c == nil || len(c.Ranking) == 0 {
		t.Fatal("no comparison")
	}
	for _, h := range c.Ranking[:3] {
		t.Logf("%s %.1f %s", h.Hop, h.Score, h.Reason)
	}
	if c.Ranking[0].Hop != "pay handle" {
		t.Errorf("first %s, want pay handle", c.Ranking[0].Hop)
	}
	for _, h := range c.Ranking {
		if strings.HasPrefix(h.Hop, "search") && h.Score > c.Ranking[0].Score/4 {
			t.Errorf("search, slow in both windows, scores %.1f", h.Score)
		}
	}
	if c.Before.Requests < 590 || c.Before.Requests > 601 || c.After.Requests < 599 || c.After.Requests > 601 {
		t.Errorf("windows: %d and %d requests, want 600 each", c.Before.Requests, c.After.Requests)
	}
	if c.Before.Label != "the 10m before" || c.After.Label != "the last 10m" {
		t.Errorf("labels %q, %q", c.Before.Label, c.After.Label)
	}
	// The same with the windows as two inputs.
	var early, late strings.Builder
	windowSpans(&early, rand.New(rand.NewPCG(3, 4)), 1_760_000_000, 600, 1e9)
	windowSpans(&late, rand.New(rand.NewPCG(5, 6)), 1_760_000_600, 600, 0)
	dir := t.TempDir()
	pe, pl := filepath.Join(dir, "early.jsonl"), filepath.Join(dir, "late.jsonl")
	os.WriteFile(pe, []byte(early.String()), 0o644)
	os.WriteFile(pl, []byte(late.String()), 0o644)
	r = analyzeCompare(t, "--compare", pe, pl)
	if r.Compare == nil || r.Compare.Ranking[0].Hop != "pay handle" || r.Compare.Before.Label != pe {
		t.Errorf("--compare: %+v", r.Compare)
	}
	// The text report: where the tail comes from, then what changed.
	code, out, errs := convRun(t, "", "analyze", "-q", "--compare", pe, pl)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"where the tail comes from", "what changed", "pay handle"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report without %q:\n%s", want, out)
		}
	}
}

// --sort: the hop table follows the ranking by default, names with --sort
// name; bad values and both comparisons at once are usage errors.
func TestSortAndUsage(t *testing.T) {
	var b strings.Builder
	windowSpans(&b, rand.New(rand.NewPCG(7, 8)), 1_760_000_000, 400, 0)
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	os.WriteFile(path, []byte(b.String()), 0o644)
	r := analyzeCompare(t, path)
	if r.HopOrder != "rank" || len(r.TailRanking) == 0 || r.Hops[0].Hop != r.TailRanking[0].Hop {
		t.Errorf("default order %q: first hop %s, ranking %+v", r.HopOrder, r.Hops[0].Hop, r.TailRanking)
	}
	r = analyzeCompare(t, "--sort", "name", path)
	names := make([]string, len(r.Hops))
	for i, h := range r.Hops {
		names[i] = h.Hop
	}
	if r.HopOrder != "name" || !sort.StringsAreSorted(names) {
		t.Errorf("--sort name: %q %v", r.HopOrder, names)
	}
	for _, args := range [][]string{
		{"--sort", "p99", path},
		{"--compare", path, "--compare-window", "1m", path},
		{"--compare-window", "-5m", path},
		{"--compare-window", "soon", path},
	} {
		if code, _, errs := convRun(t, "", append([]string{"analyze", "-q"}, args...)...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errs)
		}
	}
	// A window longer than half the logs leaves nothing before it.
	if code, _, errs := convRun(t, "", "analyze", "-q", "--compare-window", "1h", path); code != 1 || !strings.Contains(errs, "no request in the 1h before") {
		t.Errorf("--compare-window 1h on 400s of logs: exit %d: %s", code, errs)
	}
}

// nezhaRows reads a Nezha trace CSV.
func nezhaRows(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// nezhaTraces counts the distinct trace ids of a Nezha CSV file.
func nezhaTraces(t *testing.T, path string) int {
	t.Helper()
	ids := map[string]bool{}
	for _, r := range nezhaRows(t, path)[1:] {
		ids[r[0]] = true
	}
	return len(ids)
}

// podService is the service of a Nezha pod name (its two trailing hash
// segments dropped).
var podService = regexp.MustCompile(`-[a-z0-9]+-[a-z0-9]+$`)

// injectDelay adds a network delay of d ns to every call into or out of
// service in Nezha rows (the header first): the caller's span of each such
// call ends d later, and within the trace everything that starts after it
// starts d later and everything around it ends d later (TrainTicket's
// calls run one after the other).
func injectDelay(t *testing.T, rows [][]string, service string, d int64) [][]string {
	t.Helper()
	const trace, id, parent, pod, start, end, dur = 0, 1, 2, 3, 5, 6, 7
	type sp struct {
		row        []string
		start, end int64
	}
	byTrace := map[string][]*sp{}
	var order []string
	for _, r := range rows[1:] {
		s, err1 := strconv.ParseInt(r[start], 10, 64)
		e, err2 := strconv.ParseInt(r[end], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("row %v", r)
		}
		if byTrace[r[trace]] == nil {
			order = append(order, r[trace])
		}
		byTrace[r[trace]] = append(byTrace[r[trace]], &sp{r, s, e})
	}
	out := [][]string{rows[0]}
	for _, tr := range order {
		ss := byTrace[tr]
		byID := map[string]*sp{}
		for _, s := range ss {
			byID[s.row[id]] = s
		}
		// The callers' spans of calls into or out of the service.
		var calls []*sp
		for _, s := range ss {
			p := byID[s.row[parent]]
			if p == nil {
				continue
			}
			ps, cs := podService.ReplaceAllString(p.row[pod], ""), podService.ReplaceAllString(s.row[pod], "")
			if ps != cs && (ps == service || cs == service) && !slices.Contains(calls, p) {
				calls = append(calls, p)
			}
		}
		sort.Slice(calls, func(i, j int) bool { return calls[i].end < calls[j].end })
		for _, c := range calls {
			at := c.end // as shifted by the delays before it
			for _, s := range ss {
				switch {
				case s.start >= at:
					s.start += d
					s.end += d
				case s.end >= at:
					s.end += d
				}
			}
		}
		for _, s := range ss {
			r := slices.Clone(s.row)
			r[start], r[end], r[dur] = strconv.FormatInt(s.start, 10), strconv.FormatInt(s.end, 10), strconv.FormatInt((s.end-s.start)/1000, 10)
			out = append(out, r)
		}
	}
	return out
}

func writeCSV(t *testing.T, path string, rows [][]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// involves reports whether a hop is in the service or is a call whose
// callee is (its gap pairs it with the service's server spans).
func (r *compareJSON) involves(hop, service string) bool {
	if strings.HasPrefix(hop, service+" ") {
		return true
	}
	for _, h := range r.Hops {
		if h.Hop == hop && h.Gap != nil && strings.HasPrefix(h.Gap.ServerHop, service+" ") {
			return true
		}
	}
	return false
}

// The real TrainTicket pair (Nezha, 2023-01-30): a fault-free minute
// (11:39; unless TAILSCOPE_REALDATA=full, the subset of its whole traces
// kept in testdata/real) and the minute labelled with a network delay
// injected into ts-basic-service (12:06). The comparison runs on them as
// they are and is logged; then the same delay is injected by hand into the
// fault minute's traces (every call into or out of ts-basic-service 20ms
// slower), and a ts-basic-service hop must rank first against the real
// baseline, above the two minutes' own differences.
func TestCompareTrainTicket(t *testing.T) {
	base := realdata.Path(t, "nezha-trainticket/baseline-11_39_trace.csv")
	fault := realdata.Path(t, "nezha-trainticket/fault-12_06_trace.csv")
	r := analyzeCompare(t, "--map", nezhaMap, "--compare", base, fault)
	c := r.Compare
	// Each side counts the traces of its file (62 and 59 for the whole
	// minutes).
	if c == nil || c.Before.Requests != nezhaTraces(t, base) || c.After.Requests != nezhaTraces(t, fault) || len(c.Ranking) == 0 {
		t.Fatalf("comparison: %+v", c)
	}
	pos := -1
	for i, h := range c.Ranking {
		if i < 5 {
			t.Logf("as recorded: %d. %s %+.1fms: %s", i+1, h.Hop, h.Score, h.Reason)
		}
		if pos < 0 && r.involves(h.Hop, "ts-basic-service") {
			pos = i
			t.Logf("as recorded: first ts-basic-service hop: %d. %s %+.1fms: %s", i+1, h.Hop, h.Score, h.Reason)
		}
		// Ranked by the larger of the tail score and the shift.
		if i > 0 && max(h.Score, h.ShiftMs) > max(c.Ranking[i-1].Score, c.Ranking[i-1].ShiftMs) {
			t.Errorf("ranking not highest first at %d", i)
		}
	}

	injected := filepath.Join(t.TempDir(), "fault-plus-delay.csv")
	writeCSV(t, injected, injectDelay(t, nezhaRows(t, fault), "ts-basic-service", 20e6))
	r = analyzeCompare(t, "--map", nezhaMap, "--compare", base, injected)
	c = r.Compare
	for i, h := range c.Ranking[:5] {
		t.Logf("with 20ms injected: %d. %s %+.1fms: %s", i+1, h.Hop, h.Score, h.Reason)
	}
	if !r.involves(c.Ranking[0].Hop, "ts-basic-service") {
		t.Errorf("with a delay injected into ts-basic-service, %s ranks first", c.Ranking[0].Hop)
	}
	if len(c.Ranking[0].Examples) == 0 {
		t.Error("no example traces")
	}
}
