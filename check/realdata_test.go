package check

import (
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/realdata"
)

// TestRealTraces lints real traces written by other projects (deep trees,
// parallel fan-out, spans without status): every finding is well formed and
// names a hop of the logs or of the policy, and the rules that follow from
// the policy alone fire whatever the logs. The files are their copies
// under testdata/real (../shared/data's with TAILSCOPE_REALDATA=full) (the large Zipkin
// trace's a subtree of it).
func TestRealTraces(t *testing.T) {
	files := []string{
		realdata.Path(t, "nezha-trainticket/fault-12_06_trace.csv"),
		realdata.Path(t, "zipkin/smartthings-mobile-web-install.json"),
		realdata.Path(t, "zipkin/smartthings-oauth-authorization.json"),
		realdata.Path(t, "jaeger-analytics-java/ui-trace.json"),
	}
	pols := map[string]string{
		"tight":      "budget: 1ms\ndefault: {timeout: 1s, retries: 1}",
		"generous":   "budget: 1h\ndefault: {timeout: 10m, retries: 1, budget_aware: true}",
		"huge":       "budget: 1000h\ndefault: {timeout: 10m, retries: 1, budget_aware: true}",
		"no-retries": "budget: 1h\ndefault: {timeout: 10m}",
	}
	for _, f := range files {
		var opt ingest.Options
		if strings.HasSuffix(f, ".csv") {
			// Nezha's columns, as the CSV reader documents them.
			opt.Map = map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID",
				"service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}
			opt.HopBy = "service+name"
		}
		spans := readSpansLoose(t, f, opt)
		if len(spans) == 0 {
			t.Fatalf("%s: no spans read", f)
		}
		l := analyse(spans, nil)
		hops := map[string]bool{"": true}
		for _, h := range l.rep.Hops {
			hops[h.Hop] = true
		}
		dead := map[string]map[string]bool{}
		for name, y := range pols {
			p := parsePolicy(t, y)
			fs := Lint(l.rep, l.reqs, p)
			dead[name] = map[string]bool{}
			for _, x := range fs {
				if x.Message == "" || sevRank(x.Severity) > 2 || !hops[x.Hop] && !p.Listed(x.Hop) {
					t.Errorf("%s %s: bad finding %+v", f, name, x)
				}
				if x.Code == CodeDeadRetries {
					dead[name][x.Hop] = true
				}
			}
			switch name {
			case "tight":
				// The default is linted where it governs a call: a trace
				// whose only spans are a root and in-process work has none.
				calls := false
				for _, h := range l.rep.Hops {
					calls = calls || h.Role == analyze.RoleCall
				}
				if calls {
					one(t, fs, CodePerTryNotBelow, "", SevError)
				} else {
					none(t, fs, CodePerTryNotBelow)
				}
			case "generous", "huge":
				none(t, fs, CodePerTryNotBelow)
				none(t, fs, CodeNotBudgetAware)
			case "no-retries":
				none(t, fs, CodeDeadRetries)
			}
		}
		// A larger budget never makes a retry dead. (Hops nested in a call
		// with the same 10m timeout stay dead: the parent cannot wait for
		// a retry of its child.)
		for h := range dead["huge"] {
			if !dead["generous"][h] {
				t.Errorf("%s: %s dead under a 1000h budget but not under 1h", f, h)
			}
		}
		t.Logf("%s: %d spans, %d hops; dead retries under 1h: %d hops, under 1000h: %d", f, len(spans), len(l.rep.Hops), len(dead["generous"]), len(dead["huge"]))
	}
}
