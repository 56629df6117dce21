package analyze

// singularProblem is the message of a span-problem warning (see
// addProblemWarnings) when it counts one span; a code not listed keeps its
// plural message.
var singularProblem = map[string]string{
	"duplicate-span-id": "1 span repeats a span id already seen in its trace (a log read twice, or a span delivered twice?): call trees, requests and replay keep the first copy; per-hop attempts and percentiles count both",
	"orphan-span":       "1 span names a parent that is not in the logs; it was treated as a top-level call",
	"parent-cycle":      "1 span sits in a loop of parent links; the loop was broken and it was treated as a top-level call",
	"clock-skew":        "1 child span in another service than its parent starts before it or ends after it: the two hosts' clocks disagree",
	"async-children":    "1 child span outlives its parent (in the same service, a consumer of a message, or started after the parent ended): work the parent did not wait for; replay does not let it stretch or fail the parent",
}
