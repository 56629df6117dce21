package layers

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tailscope/tailscope/"

// group is the part of the design a package belongs to, by path prefix
// (the longest prefix wins).
var groups = []struct{ prefix, group string }{
	{"quantile", "base"}, {"secret", "base"}, {"span", "base"}, {"outcome", "base"},
	{"policy", "base"}, {"export", "base"}, {"internal", "base"}, {"tail", "base"}, {"bound", "base"}, {"route", "base"}, {"option", "base"},
	{"ingest", "ingest"},
	{"analyze", "analyze"},
	{"replay", "replay"},
	{"recommend", "recommend"},
	{"check", "check"},
	{"summary", "summary"},
	{"source", "source"},
	{"pipeline", "pipeline"},
	{"report", "report"},
	{"enforce", "enforce"},
	{"cmd", "cmd"}, {"bench", "tool"}, {"examples", "tool"},
	// samples is the embedded seed (data, read by pipeline.Seed); its
	// generators are tools.
	{"samples", "base"}, {"samples/gen", "tool"}, {"samples/matrix", "tool"},
}

// allowed says which groups a group's production code may import (its
// own always): data flows one way, ingest → span → analyze and replay →
// recommend → check → report, with pipeline (what the commands call)
// and summary and source beside the readers; analyze never imports replay
// (statistics stay usable on any policy), replay never imports analyze (a
// simulator of any policy), enforce links nothing but the policy file's
// model, and only cmd and the tools import everything.
var allowed = map[string][]string{
	"base":      nil,
	"ingest":    {"base"},
	"analyze":   {"base"},
	"replay":    {"base"},
	"recommend": {"base", "analyze", "replay"},
	"check":     {"base", "analyze", "replay", "recommend"},
	"summary":   {"base", "analyze", "ingest"},
	"source":    {"base", "analyze", "ingest"},
	"pipeline":  {"base", "ingest", "analyze", "recommend", "summary"},
	"report":    {"base", "analyze", "check"},
	"enforce":   {"base"},
	"cmd":       {"*"},
	"tool":      {"*"},
}

// baseInternal are the base packages and what of the module each may
// import: the leaves import nothing of it, so that every package may use
// them.
var baseImports = map[string][]string{
	"quantile": nil, "secret": nil, "internal/par": nil, "internal/units": nil, "internal/glyph": nil,
	"span": {"internal/par"}, "outcome": {"quantile"}, "policy": {"internal/glyph", "internal/units", "option", "route"}, "route": nil,
	"export": {"span"}, "samples": nil, "tail": {"internal/fastlog"}, "internal/fastlog": nil, "internal/hugeheap": nil, "bound": nil, "option": nil,
}

func groupOf(pkg string) string {
	best, g := -1, ""
	for _, x := range groups {
		if (pkg == x.prefix || strings.HasPrefix(pkg, x.prefix+"/")) && len(x.prefix) > best {
			best, g = len(x.prefix), x.group
		}
	}
	return g
}

// TestImportLayers reads every package's imports with go list and holds
// them to the rule above.
func TestImportLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(&out)
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkg := strings.TrimPrefix(p.ImportPath, module)
		g := groupOf(pkg)
		if g == "" {
			t.Errorf("%s: no group in the import rule: add it to groups (and to docs/DESIGN.md §11)", pkg)
			continue
		}
		seen++
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			dg := groupOf(dep)
			if !may(g, dg) {
				t.Errorf("%s (%s) imports %s (%s): the import rule lets %s import only %v", pkg, g, dep, dg, g, allowed[g])
			}
			if want, ok := baseImports[pkg]; ok && dg == "base" && !strings.HasPrefix(dep, pkg+"/") && !contains(want, dep) {
				t.Errorf("%s imports %s: a base package imports only %v of the module", pkg, dep, want)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list gave %d packages: the rule checked nothing", seen)
	}
}

func may(g, dep string) bool {
	if g == dep {
		return true
	}
	for _, a := range allowed[g] {
		if a == "*" || a == dep {
			return true
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	i := sort.SearchStrings(xs, x)
	return i < len(xs) && xs[i] == x
}

// TestRuleRefuses: the rule says no where the design does (so that
// TestImportLayers could fail).
func TestRuleRefuses(t *testing.T) {
	for _, c := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"analyze", "replay", false}, {"replay", "analyze", false}, {"analyze", "recommend", false},
		{"recommend", "check", false}, {"check", "report", false}, {"report", "pipeline", false},
		{"ingest/internal/flat", "analyze", false}, {"enforce", "replay", false}, {"span", "analyze", false},
		{"recommend", "replay", true}, {"report", "check", true}, {"cmd/tailscope", "pipeline", true},
		{"ingest/internal/flat", "span", true}, {"pipeline", "samples", true}, {"enforce/enforcegrpc", "enforce", true},
	} {
		if got := may(groupOf(c.pkg), groupOf(c.dep)); got != c.ok {
			t.Errorf("%s → %s: allowed %v, want %v", c.pkg, c.dep, got, c.ok)
		}
	}
}

// TestAnalyzeIsStatistics: the statistics do not depend on the policy
// file's package or on YAML (they read a policy in force through
// analyze.InForce, and endpoints are package route's), so that they stay
// mathematics on spans that any policy can be checked against.
func TestAnalyzeIsStatistics(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"analyze").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == module+"policy" || strings.Contains(dep, "yaml") {
			t.Errorf("analyze depends on %s", dep)
		}
	}
}
