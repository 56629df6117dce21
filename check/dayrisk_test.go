package check

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/policy"
)

// TestIncidentBoundSameInCheck: on half of a real day (time blocks,
// incidents, and extrapolated timeouts that the block-by-block records
// raise), check, reading the logs anew as the command does, prices the
// recommended policy's out-of-sample risk exactly as recommend printed it:
// the incident part carries the records' factor, which check measures as
// recommend does (it recommends on the logs too, before it predicts).
func TestIncidentBoundSameInCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("reads and fits half a real day")
	}
	for _, d := range []string{"nezha-online-boutique/2022-08-23", "nezha-trainticket/2023-01-30"} {
		dir := realdata.Path(t, d)
		files, _ := filepath.Glob(filepath.Join(dir, "*_trace.csv.zst"))
		sort.Strings(files)
		if len(files) < 4 {
			t.Fatalf("%s: %d windows", dir, len(files))
		}
		l, err := pipeline.Read(files[:len(files)/2], pipeline.Options{Ingest: ingest.Options{Map: nezhaMap}, SampleSpans: analyze.DefaultSampleSpans})
		if err != nil {
			t.Fatal(err)
		}
		rep, rec := l.Recommend(analyze.Options{})
		want := rep.RecommendedPolicy.Safety.Predicted
		if want.Incidents == nil {
			t.Fatalf("%s: no incident risk in the recommendation", d)
		}
		p, err := policy.Parse("recommended.yaml", rec.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		// check reads the logs anew, as the command does: nothing of
		// recommend's fit reaches it but the policy file.
		c, err := pipeline.Read(files[:len(files)/2], pipeline.Options{Ingest: ingest.Options{Map: nezhaMap}, SampleSpans: analyze.DefaultSampleSpans})
		if err != nil {
			t.Fatal(err)
		}
		got := Run(c.Report(analyze.Options{}), c.Requests, []*policy.Policy{p}, Options{}).Results[0].Predicted
		if got.Upper != want.Upper || got.Incidents == nil || *got.Incidents != *want.Incidents {
			t.Errorf("%s: check prices the recommended policy at %g (incidents %+v), recommend printed %g (%+v)", d, got.Upper, got.Incidents, want.Upper, want.Incidents)
		}
		t.Logf("%s: bound %.2f%%, incident part %+v", d, 100*want.Upper, *want.Incidents)
	}
}
