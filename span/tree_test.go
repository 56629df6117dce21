package span

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

const ms = int64(1e6)

// sp is a span of trace "t" for the table tests (its hop is its service):
// id, parent, service, kind, start and duration in ms.
func sp(id, parent, service, kind string, start, dur int64) Span {
	return Span{TraceID: "t", SpanID: id, ParentID: parent, Service: service, Name: id, Kind: kind, Hop: service,
		Start: 1e15 + start*ms, Duration: dur * ms}
}

// roles collects each call's role by span id of its first attempt.
func roles(r *Request) map[string]Role {
	out := map[string]Role{}
	var walk func(cs []*Call)
	walk = func(cs []*Call) {
		for _, c := range cs {
			out[c.Attempts[0].Span.SpanID] = c.Role
			for _, a := range c.Attempts {
				walk(a.Calls)
			}
		}
	}
	walk(r.Calls)
	return out
}

// The role of a call comes from its kind, or from the trace's shape when
// spans carry none.
func TestRoles(t *testing.T) {
	cases := []struct {
		name  string
		spans []Span
		want  map[string]Role
	}{
		{"kinds", []Span{sp("root", "", "fe", "server", 0, 100), sp("c", "root", "fe", "client", 1, 50),
			sp("s", "c", "cart", "server", 2, 40), sp("i", "s", "cart", "internal", 3, 10), sp("p", "root", "fe", "producer", 60, 1)},
			map[string]Role{"c": RoleCall, "s": RoleCallee, "i": RoleInProcess, "p": RoleCall}},
		// SkyWalking-style: gateway root → its exit span "HTTP GET" (same
		// service, child in another) → the callee's entry span → a DB span
		// in the callee's service.
		{"exit spans without kinds", []Span{sp("root", "", "gw", "", 0, 100), sp("get", "root", "gw", "", 1, 90),
			sp("entry", "get", "order", "", 2, 80), sp("db", "entry", "order", "", 3, 10), sp("h", "root", "gw", "", 95, 2)},
			map[string]Role{"get": RoleCall, "entry": RoleCallee, "db": RoleInProcess, "h": RoleInProcess}},
		// One span per call, as flat logs with parents write them: a chain
		// across services is calls all the way down.
		{"one span per call", []Span{sp("root", "", "gw", "", 0, 100), sp("a", "root", "retrieve", "", 1, 90),
			sp("b", "a", "vector", "", 2, 80)},
			map[string]Role{"a": RoleCall, "b": RoleCall}},
		{"flat calls without parents", []Span{sp("x", "", "a", "", 0, 10), sp("y", "", "b", "", 20, 10)},
			map[string]Role{"x": RoleCall, "y": RoleCall}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reqs, _ := Assemble(c.spans)
			got := roles(reqs[0])
			for id, want := range c.want {
				if got[id] != want {
					t.Errorf("%s: role %v, want %v", id, got[id], want)
				}
			}
		})
	}
}

// A child that outlives its parent is asynchronous work when the same
// clock says so (same service), when messaging hands it on, or when it
// starts after the parent ended; a child in another service that merely
// ends late is clock skew.
func TestAsyncChildrenAndSkew(t *testing.T) {
	spans := []Span{
		sp("root", "", "fe", "server", 0, 100),
		sp("same", "root", "fe", "", 10, 200),            // same service, outlives: async
		sp("after", "root", "mail", "consumer", 150, 20), // starts after the parent ended: async
		sp("skew", "root", "db", "", 50, 52),             // another service ends 2 ms late: skew
		sp("early", "root", "cache", "", -1, 10),         // another service starts 1 ms early: skew
		sp("send", "root", "fe", "producer", 20, 5),
		sp("recv", "send", "worker", "consumer", 22, 50), // consumer of a producer: async
	}
	_, pr := Assemble(spans)
	if pr.AsyncChildren != 3 || pr.ClockSkew != 2 {
		t.Errorf("async %d, skew %d; want 3 and 2", pr.AsyncChildren, pr.ClockSkew)
	}
}

// Attempt numbers count from 0 when a 0 appears among a hop's siblings,
// else from 1; without numbers, a retry follows a failed attempt once it
// has ended, and a span that starts while a failed one runs is a
// parallel call.
func TestAttemptsIntoCalls(t *testing.T) {
	attempt := func(s Span, n int, failed bool) Span {
		s.Attempt, s.AttemptSet = n, true
		if failed {
			s.Status = Error
		}
		return s
	}
	failed := func(s Span) Span { s.Status = Error; return s }
	cases := []struct {
		name  string
		spans []Span
		calls []int // attempts per call of hop "x", in order
	}{
		{"0-based", []Span{attempt(sp("a", "", "x", "", 0, 5), 0, true), attempt(sp("b", "", "x", "", 6, 5), 1, false),
			attempt(sp("c", "", "x", "", 20, 5), 0, false)}, []int{2, 1}},
		{"1-based", []Span{attempt(sp("a", "", "x", "", 0, 5), 1, true), attempt(sp("b", "", "x", "", 6, 5), 2, false),
			attempt(sp("c", "", "x", "", 20, 5), 1, false)}, []int{2, 1}},
		{"unnumbered retry after a failure", []Span{failed(sp("a", "", "x", "", 0, 5)), sp("b", "", "x", "", 6, 5)}, []int{2}},
		{"unnumbered, overlapping a failure: parallel", []Span{failed(sp("a", "", "x", "", 0, 5)), sp("b", "", "x", "", 2, 5)}, []int{1, 1}},
		{"unnumbered after a success: a new call", []Span{sp("a", "", "x", "", 0, 5), sp("b", "", "x", "", 6, 5)}, []int{1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reqs, _ := Assemble(c.spans)
			var got []int
			for _, cl := range reqs[0].Calls {
				got = append(got, len(cl.Attempts))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.calls) {
				t.Errorf("attempts per call %v, want %v", got, c.calls)
			}
		})
	}
}

// A parent chain deeper than MaxDepth is cut there and counted.
func TestDepthCap(t *testing.T) {
	n := MaxDepth + 100
	spans := make([]Span, n)
	for i := range n {
		parent := ""
		if i > 0 {
			parent = fmt.Sprint(i - 1)
		}
		spans[i] = sp(fmt.Sprint(i), parent, "s", "client", int64(i), int64(n-i))
	}
	reqs, pr := Assemble(spans)
	depth := 0
	for cs := reqs[0].Calls; len(cs) > 0; cs = cs[0].Attempts[0].Calls {
		depth++
	}
	if pr.TooDeep != 100 || depth+1 != MaxDepth {
		t.Errorf("too deep %d, tree depth %d (+ root); want 100 cut and %d levels", pr.TooDeep, depth, MaxDepth)
	}
}

// TestProblemsAddEveryField: Assemble counts problems per worker and adds
// them up; a counter that add forgot would silently read 0.
func TestProblemsAddEveryField(t *testing.T) {
	var o Problems
	v := reflect.ValueOf(&o).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	var sum Problems
	sum.add(o)
	sum.add(o)
	s := reflect.ValueOf(sum)
	for i := range s.NumField() {
		if got, want := s.Field(i).Int(), int64(2*(i+1)); got != want {
			t.Errorf("%s = %d after adding it twice, want %d", s.Type().Field(i).Name, got, want)
		}
	}
}

// TestAssembleParallelMatchesOneTrace: traces assembled on several workers
// give the requests that assembling each trace alone gives, in order, and
// the problems of all of them.
func TestAssembleParallelMatchesOneTrace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var spans []Span
	for i := range 1000 {
		tr := fmt.Sprintf("t%04d", i)
		st := int64(i%37) * 1000
		spans = append(spans,
			Span{TraceID: tr, SpanID: "a", Hop: "root", Start: st, Duration: 100},
			Span{TraceID: tr, SpanID: "b", ParentID: "a", Hop: "db", Start: st + 10, Duration: 20, Status: Error},
			Span{TraceID: tr, SpanID: "c", ParentID: "a", Hop: "db", Start: st + 40, Duration: 20},
		)
		if i%10 == 0 {
			spans = append(spans, Span{TraceID: tr, SpanID: "b", ParentID: "a", Hop: "db", Start: st + 10, Duration: 20}) // duplicate
		}
		if i%7 == 0 {
			spans = append(spans, Span{TraceID: "o" + tr, SpanID: "d", ParentID: "gone", Hop: "cache", Start: st, Duration: 5}) // orphan
		}
	}
	spans = append(spans, Span{SpanID: "loose", Hop: "x", Start: 5, Duration: 1})
	reqs, pr := Assemble(spans)
	if len(reqs) != 1144 {
		t.Fatalf("%d requests, want 1144 (1000 traces, 143 of orphans, a loose span)", len(reqs))
	}
	if want := (Problems{DuplicateSpanIDs: 100, Orphans: 143}); pr != want {
		t.Errorf("problems %+v, want %+v", pr, want)
	}
	for i, r := range reqs {
		if i > 0 && (r.Start < reqs[i-1].Start || r.Start == reqs[i-1].Start && r.TraceID < reqs[i-1].TraceID) {
			t.Fatalf("request %d (%s at %d) out of order after %s at %d", i, r.TraceID, r.Start, reqs[i-1].TraceID, reqs[i-1].Start)
		}
		if r.TraceID == "" {
			continue
		}
		if !strings.HasPrefix(r.TraceID, "o") && (r.Root == nil || len(r.Calls) != 1 || len(r.Calls[0].Attempts) != 2) {
			t.Fatalf("%s: want a root over one db call of two attempts, got root %v, %d calls", r.TraceID, r.Root, len(r.Calls))
		}
		var alone []Span
		for _, s := range spans {
			if s.TraceID == r.TraceID {
				alone = append(alone, s)
			}
		}
		if want, _ := Assemble(alone); !reflect.DeepEqual(r, want[0]) {
			t.Fatalf("%s: assembled among many differs from assembled alone", r.TraceID)
		}
	}
}
