package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
)

// idHopsLogs are flat traces whose calls name a user id in the span
// (GET /users/100042: ids distinct ids in all), next to a login call
// every trace makes: the hop names look unbounded.
func idHopsLogs(traces, ids int) []byte {
	var b bytes.Buffer
	for i := 0; i < traces; i++ {
		t0 := 1_700_000_000_000_000_000 + int64(i)*1_000_000_000
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"r%d","hop":"gateway","kind":"server","start":%d,"duration_ms":%d,"status":"ok"}`+"\n", i, i, t0, 400)
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"l%d","parent_id":"r%d","hop":"login","kind":"client","start":%d,"duration_ms":%d,"status":"ok"}`+"\n", i, i, i, t0+1e6, 20+i%30)
		for k := 0; k < 3; k++ {
			id := 100000 + (i*7+k*13)%ids
			status := "ok"
			if (i+k)%50 == 0 {
				status = "error"
			}
			fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"u%d-%d","parent_id":"r%d","hop":"GET /users/%d","http.route":"/users/{id}","kind":"client","start":%d,"duration_ms":%d,"status":%q}`+"\n",
				i, i, k, i, id, t0+int64(30+k*100)*1e6, 40+(i*k)%50, status)
		}
	}
	return b.Bytes()
}

// The human-readable reports of logs with id-laden hop names show at
// most MaxShownHops hops and say how many they leave out; JSON
// keeps every hop.
func TestUnboundedHopsBoundedOutput(t *testing.T) {
	const ids = 600
	rep := readLogs(t, "ids.jsonl", idHopsLogs(500, ids)).Report(analyze.Options{Names: cliLike})
	if rep.UnboundedHops() == nil {
		t.Fatalf("no %s over %d hops", analyze.WarnUnboundedHops, len(rep.Hops))
	}
	userHop := regexp.MustCompile(`GET /users/\d+`)
	for _, format := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		names := map[string]bool{}
		for _, m := range userHop.FindAllString(out, -1) {
			names[m] = true
		}
		// The shown hops, and the warning's examples.
		if len(names) > MaxShownHops+3 {
			t.Errorf("%s: %d id-laden hop names printed, want at most %d", format, len(names), MaxShownHops+3)
		}
		hidden := len(rep.Hops) - MaxShownHops
		if want := fmt.Sprintf("%d more hops are not shown", hidden); !strings.Contains(out, want) {
			t.Errorf("%s: no %q", format, want)
		}
		if !strings.Contains(out, "--hop-by attr:http.route") {
			t.Errorf("%s: the warning does not suggest --hop-by attr:http.route", format)
		}
		// The login hop, in every trace, is among the shown.
		if !strings.Contains(out, "login") {
			t.Errorf("%s: the most attempted hop is not shown", format)
		}
		if format == "text" && strings.Count(out, "\n") > 400 {
			t.Errorf("text: %d lines", strings.Count(out, "\n"))
		}
	}
	var b bytes.Buffer
	if err := Analysis(&b, "json", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hops []struct {
			Hop string `json:"hop"`
		} `json:"hops"`
		Warnings []analyze.Warning `json:"warnings"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Hops) != len(rep.Hops) || len(doc.Hops) < ids {
		t.Errorf("JSON has %d hops of %d", len(doc.Hops), len(rep.Hops))
	}
	found := false
	for _, w := range doc.Warnings {
		if w.Code != analyze.WarnUnboundedHops || w.Hop != "" {
			continue
		}
		found = true
		// analyze writes the warning and cannot ask report for the limit:
		// the number it states must be the one the reports apply.
		if want := fmt.Sprintf("show the first %d hops, JSON all of them", MaxShownHops); !strings.Contains(w.Message, want) {
			t.Errorf("the %s warning does not say %q: %s", w.Code, want, w.Message)
		}
	}
	if !found {
		t.Errorf("JSON warnings lack %s", analyze.WarnUnboundedHops)
	}
}
