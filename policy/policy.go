// Package policy reads and writes the timeout/retry policy file (DESIGN §6):
// an end-to-end budget, a default per-hop policy and per-hop overrides.
//
// Parsing reports every problem of a file with its line and key, not just
// the first, so a user fixes a file in one pass. The package does not know
// the logs: whether a hop exists is for the check command to say.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Jitter kinds for backoff.
const (
	JitterNone  = "none"
	JitterFull  = "full"  // uniform in [0, d]
	JitterEqual = "equal" // d/2 + uniform in [0, d/2]
)

// Backoff is the wait before retry k (k = 1, 2, …): min(Max, Base×2^(k−1)),
// jittered. A scalar in the file is a constant wait (Max = Base). Jitter ""
// means none, so that the zero Backoff is "no backoff" and two equal
// policies compare equal.
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter string
}

// Delay returns the wait before retry k given u, a uniform draw in [0, 1)
// used by jitter (the replay passes a deterministic draw).
func (b Backoff) Delay(k int, u float64) time.Duration {
	if b.Base <= 0 || k < 1 {
		return 0
	}
	d := b.Base
	for i := 1; i < k && d < b.Max; i++ {
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	switch b.Jitter {
	case JitterFull:
		return time.Duration(u * float64(d))
	case JitterEqual:
		return d/2 + time.Duration(u*float64(d/2))
	}
	return d
}

// MaxDelay is the longest wait before retry k (jitter at its top).
func (b Backoff) MaxDelay(k int) time.Duration {
	c := b
	c.Jitter = JitterNone
	return c.Delay(k, 0)
}

func (b Backoff) String() string {
	if b.Base == 0 {
		return "0s"
	}
	if b.Max == b.Base && (b.Jitter == "" || b.Jitter == JitterNone) {
		return b.Base.String()
	}
	s := fmt.Sprintf("%s..%s exp", b.Base, b.Max)
	if b.Jitter != "" && b.Jitter != JitterNone {
		s += ", " + b.Jitter + " jitter"
	}
	return s
}

// Hop is the policy of one hop. Timeout 0 means no per-attempt timeout.
type Hop struct {
	Timeout     time.Duration
	Retries     int
	Backoff     Backoff
	BudgetAware bool
}

// Policy is a parsed policy file.
type Policy struct {
	// Name is a short label (the file name without extension).
	Name string
	// Path is where it was read from ("" when built in memory).
	Path string
	// Budget is the end-to-end deadline per request; 0 means none.
	Budget  time.Duration
	Default Hop
	Hops    map[string]Hop
	// Lines gives the line of each hop entry, for messages that point into
	// the file.
	Lines map[string]int
	// Comments are written above each hop by Marshal (the recommendation's
	// basis); ignored on read.
	Comments map[string]string
}

// For returns the policy of a hop: its own entry, or the default.
func (p *Policy) For(hop string) Hop {
	if h, ok := p.Hops[hop]; ok {
		return h
	}
	return p.Default
}

// ForCall returns the policy of a call to hop. callerSide says whether the
// call's spans are the caller's record (see span.CallerSide): a callee's
// own span (a SERVER span under its CLIENT span) is not timed out or
// retried by default — the caller's timeout on the span above bounds it —
// so it gets no timeout and no retries unless the policy lists its hop.
func (p *Policy) ForCall(hop string, callerSide bool) Hop {
	if h, ok := p.Hops[hop]; ok {
		return h
	}
	if !callerSide {
		return Hop{}
	}
	return p.Default
}

// Listed reports whether the hop has its own entry.
func (p *Policy) Listed(hop string) bool { _, ok := p.Hops[hop]; return ok }

// HopNames returns the listed hops, sorted.
func (p *Policy) HopNames() []string {
	names := make([]string, 0, len(p.Hops))
	for n := range p.Hops {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Problem is one mistake in a policy file.
type Problem struct {
	File string
	Line int
	Col  int
	Key  string
	Msg  string
}

func (p Problem) Error() string {
	pos := p.File
	if p.Line > 0 {
		pos = fmt.Sprintf("%s:%d", p.File, p.Line)
		if p.Col > 0 {
			pos += fmt.Sprintf(":%d", p.Col)
		}
	}
	if p.Key != "" {
		return fmt.Sprintf("%s: %s: %s", pos, p.Key, p.Msg)
	}
	return pos + ": " + p.Msg
}

// Problems is every mistake found in a file.
type Problems []Problem

func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Load reads a policy file.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse reads a policy from YAML or JSON. On mistakes it returns Problems
// listing all of them.
func Parse(path string, data []byte) (*Policy, error) {
	p := &Policy{
		Name:    strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)),
		Path:    path,
		Default: Hop{},
		Hops:    map[string]Hop{},
		Lines:   map[string]int{},
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Problems{syntaxProblem(path, err)}
	}
	ps := &parser{file: path}
	if len(doc.Content) == 0 {
		return nil, Problems{{File: path, Msg: "empty policy file"}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, Problems{{File: path, Line: root.Line, Col: root.Column, Msg: "want a mapping with budget, default and hops"}}
	}
	var hopsNode, defNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "budget":
			p.Budget = ps.duration(k.Value, v)
		case "default":
			defNode = v
		case "hops":
			hopsNode = v
		case "name":
			if v.Kind == yaml.ScalarNode && v.Value != "" {
				p.Name = v.Value
			}
		default:
			ps.add(k, k.Value, "unknown key (want budget, default, hops)")
		}
	}
	if defNode != nil {
		p.Default = ps.hop("default", defNode, Hop{})
	} else {
		p.Default = Hop{}
	}
	if hopsNode != nil {
		switch hopsNode.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(hopsNode.Content); i += 2 {
				k, v := hopsNode.Content[i], hopsNode.Content[i+1]
				if _, dup := p.Hops[k.Value]; dup {
					ps.add(k, "hops."+k.Value, "hop listed twice")
					continue
				}
				p.Hops[k.Value] = ps.hop("hops."+k.Value, v, p.Default)
				p.Lines[k.Value] = k.Line
			}
		case yaml.ScalarNode:
			if hopsNode.Tag != "!!null" {
				ps.add(hopsNode, "hops", "want a mapping of hop name to policy")
			}
		default:
			ps.add(hopsNode, "hops", "want a mapping of hop name to policy")
		}
	}
	if len(ps.probs) > 0 {
		// In file order, as a user fixes them.
		sort.SliceStable(ps.probs, func(i, j int) bool {
			a, b := ps.probs[i], ps.probs[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return nil, ps.probs
	}
	return p, nil
}

// syntaxProblem positions a YAML syntax error: the decoder says
// "yaml: line N: what"; the line moves into the position.
func syntaxProblem(path string, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pr := Problem{File: path}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, e := strconv.Atoi(rest[:i]); e == nil {
				pr.Line, msg = n, rest[i+2:]
			}
		}
	}
	pr.Msg = "not valid YAML or JSON: " + msg
	return pr
}

type parser struct {
	file  string
	probs Problems
}

func (ps *parser) add(n *yaml.Node, key, msg string) {
	ps.probs = append(ps.probs, Problem{File: ps.file, Line: n.Line, Col: n.Column, Key: key, Msg: msg})
}

// hop reads a hop policy; fields not given inherit from base.
func (ps *parser) hop(key string, n *yaml.Node, base Hop) Hop {
	h := base
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return h
		}
		ps.add(n, key, "want a mapping with timeout, retries, backoff, budget_aware")
		return h
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		full := key + "." + k.Value
		switch k.Value {
		case "timeout":
			h.Timeout = ps.duration(full, v)
		case "retries":
			h.Retries = ps.count(full, v)
		case "backoff":
			h.Backoff = ps.backoff(full, v)
		case "budget_aware":
			h.BudgetAware = ps.boolean(full, v)
		default:
			ps.add(k, full, "unknown key (want timeout, retries, backoff, budget_aware)")
		}
	}
	return h
}

func (ps *parser) duration(key string, n *yaml.Node) time.Duration {
	if n.Kind != yaml.ScalarNode {
		ps.add(n, key, "want a duration like 3s or 800ms")
		return 0
	}
	s := strings.TrimSpace(n.Value)
	if s == "0" || strings.EqualFold(s, "none") {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		msg := fmt.Sprintf("bad duration %q: want a Go duration like 3s or 800ms", n.Value)
		if _, e := strconv.ParseFloat(s, 64); e == nil {
			msg = fmt.Sprintf("bad duration %q: give a unit, e.g. %ss or %sms", n.Value, s, s)
		}
		ps.add(n, key, msg)
		return 0
	}
	if d < 0 {
		ps.add(n, key, fmt.Sprintf("negative duration %s", n.Value))
		return 0
	}
	return d
}

func (ps *parser) count(key string, n *yaml.Node) int {
	v, err := strconv.Atoi(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || err != nil {
		ps.add(n, key, fmt.Sprintf("want a whole number of retries, got %q", n.Value))
		return 0
	}
	if v < 0 {
		ps.add(n, key, fmt.Sprintf("negative retries %d", v))
		return 0
	}
	if v > 100 {
		ps.add(n, key, fmt.Sprintf("%d retries is not a policy (at most 100)", v))
		return 0
	}
	return v
}

func (ps *parser) boolean(key string, n *yaml.Node) bool {
	switch strings.ToLower(strings.TrimSpace(n.Value)) {
	case "true", "yes", "on":
		return true
	case "false", "no", "off":
		return false
	}
	ps.add(n, key, fmt.Sprintf("want true or false, got %q", n.Value))
	return false
}

func (ps *parser) backoff(key string, n *yaml.Node) Backoff {
	if n.Kind == yaml.ScalarNode {
		d := ps.duration(key, n)
		return Backoff{Base: d, Max: d}
	}
	if n.Kind != yaml.MappingNode {
		ps.add(n, key, "want a duration or {base, max, jitter}")
		return Backoff{}
	}
	var b Backoff
	var maxSet bool
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		full := key + "." + k.Value
		switch k.Value {
		case "base":
			b.Base = ps.duration(full, v)
		case "max":
			b.Max, maxSet = ps.duration(full, v), true
		case "jitter":
			switch v.Value {
			case JitterNone:
				b.Jitter = "" // the zero value means no jitter
			case JitterFull, JitterEqual:
				b.Jitter = v.Value
			default:
				ps.add(v, full, fmt.Sprintf("unknown jitter %q (want none, full, equal)", v.Value))
			}
		default:
			ps.add(k, full, "unknown key (want base, max, jitter)")
		}
	}
	if !maxSet {
		b.Max = b.Base
	}
	if b.Max < b.Base {
		ps.add(n, key+".max", fmt.Sprintf("max %s is below base %s", b.Max, b.Base))
	}
	if b.Base == 0 {
		// No base means no wait, whatever max and jitter say: normalise so
		// that the policy equals its written form (Marshal writes 0s).
		return Backoff{}
	}
	return b
}

// Marshal writes the policy as YAML in the file's own layout, with each
// hop's comment above it. Durations are written in their shortest form.
func (p *Policy) Marshal() []byte {
	var b bytes.Buffer
	if p.Budget > 0 {
		fmt.Fprintf(&b, "budget: %s\n", fmtDur(p.Budget))
	} else {
		b.WriteString("budget: 0s\n")
	}
	b.WriteString("default:\n")
	writeHop(&b, "  ", p.Default)
	if len(p.Hops) > 0 {
		b.WriteString("hops:\n")
		for _, name := range p.HopNames() {
			if c := p.Comments[name]; c != "" {
				for _, line := range strings.Split(c, "\n") {
					fmt.Fprintf(&b, "  # %s\n", line)
				}
			}
			fmt.Fprintf(&b, "  %s:\n", quoteKey(name))
			writeHop(&b, "    ", p.Hops[name])
		}
	}
	return b.Bytes()
}

func writeHop(b *bytes.Buffer, ind string, h Hop) {
	fmt.Fprintf(b, "%stimeout: %s\n", ind, fmtDur(h.Timeout))
	fmt.Fprintf(b, "%sretries: %d\n", ind, h.Retries)
	switch {
	case h.Backoff.Base == 0:
		fmt.Fprintf(b, "%sbackoff: 0s\n", ind)
	case h.Backoff.Max == h.Backoff.Base && (h.Backoff.Jitter == "" || h.Backoff.Jitter == JitterNone):
		fmt.Fprintf(b, "%sbackoff: %s\n", ind, fmtDur(h.Backoff.Base))
	default:
		j := h.Backoff.Jitter
		if j == "" {
			j = JitterNone
		}
		fmt.Fprintf(b, "%sbackoff: {base: %s, max: %s, jitter: %s}\n", ind, fmtDur(h.Backoff.Base), fmtDur(h.Backoff.Max), j)
	}
	fmt.Fprintf(b, "%sbudget_aware: %t\n", ind, h.BudgetAware)
}

func fmtDur(d time.Duration) string {
	s := d.String()
	s = strings.Replace(s, "m0s", "m", 1)
	s = strings.Replace(s, "h0m", "h", 1)
	return s
}

// quoteKey writes a hop name as a YAML key: bare when it is a plain
// identifier-like name, else as a double-quoted string with JSON escapes
// (valid YAML), so that any name — spaces, colons, "#", Unicode spaces,
// control characters — reads back as itself.
func quoteKey(k string) string {
	plain := k != "" && k != "null" && k != "true" && k != "false" && k != "~"
	for i := 0; i < len(k) && plain; i++ {
		c := k[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(i > 0 && ((c >= '0' && c <= '9') || c == '-' || c == '.' || c == '/'))
		plain = ok
	}
	if plain {
		return k
	}
	out, err := json.Marshal(k)
	if err != nil {
		return strconv.Quote(k)
	}
	return string(out)
}

// ErrNoPolicy is returned when a command needs a policy and none was given.
var ErrNoPolicy = errors.New("no policy given")
